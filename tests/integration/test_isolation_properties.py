"""Tenant isolation as a property (hypothesis, rule-based state machine), through the HTTP API over real HTTP.

Random interleavings of writes, batches, gets, recalls, forgets (by id, including ids of other namespaces, and by
filter), consolidations and stats across five namespaces (a parent `acme`, its children `acme:u-1`, `acme:u-2`,
a sibling `acme2`, an unrelated `globex`) and six keys (one per namespace, and a parent key scoped to `acme`).
Every memory's content carries its namespace's marker; every response is checked: no result, count, receipt or
error ever mentions another namespace's marker or memory ids, counts match the model, and a key outside its
scope gets 403 with nothing else.

Default profile: ~300 operations. REARVIEW_LONG_TESTS=1: >= 5,000. The number of operations is printed.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, rule

from rearview.api.local_server import LocalServer
from rearview.bootstrap import build
from rearview.clock import ManualClock
from rearview.domain.namespaces import namespace_within
from rearview.domain.permissions import Permission
from rearview.settings import Settings

pytestmark = [pytest.mark.integration, pytest.mark.slow]

LONG = os.environ.get("REARVIEW_LONG_TESTS") == "1"
# Long profile: 160 runs of up to 50 steps: about 5,900 operations (hypothesis ends some runs early).
MAX_EXAMPLES, STEPS = (160, 50) if LONG else (15, 25)

NAMESPACES = ("acme", "acme:u-1", "acme:u-2", "acme2", "globex")
KEY_SCOPES = (*NAMESPACES, "acme")  # the last one is the parent key (index 5), scoped to acme
WORDS = ("porto", "lisbon", "budget", "invoice", "kickoff", "roadmap", "hiring", "offsite", "launch", "review")
TAGS = ("alpha", "beta")
OPERATIONS: dict[str, Any] = {"count": 0, "denied": 0, "by_rule": {}}


def marker(namespace: str) -> str:
    """A word that appears only in this namespace's memories (`acme:u-1` -> `nsmarkacmeu1x`)."""
    return "nsmark" + "".join(ch for ch in namespace if ch.isalnum()) + "x"


ns_index = st.integers(0, len(NAMESPACES) - 1)
# 0..5 pick one of the six keys; above that, the namespace's own key, so most operations are allowed ones.
key_index = st.integers(0, len(KEY_SCOPES) + 5)


def words_of(most: int) -> st.SearchStrategy[list[str]]:
    return st.lists(st.sampled_from(WORDS), min_size=1, max_size=most)


class IsolationMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.tmp = Path(tempfile.mkdtemp(prefix="rearview-isolation-"))
        self.clock = ManualClock()
        self.services = build(Settings(data_dir=self.tmp / "data", embedder="hashing"), clock=self.clock)
        self.server = LocalServer(self.services.settings, self.services, host="127.0.0.1", port=0).start()
        ops = [p for p in Permission if p != Permission.ADMIN]
        self.keys = [self.services.access.create_key(scope, ops)[1] for scope in KEY_SCOPES]
        self.episodes: dict[str, set[str]] = {ns: set() for ns in NAMESPACES}
        self.facts: dict[str, set[str]] = {ns: set() for ns in NAMESPACES}
        self.counter = 0

    def teardown(self) -> None:
        self.server.shutdown()
        self.services.close()
        shutil.rmtree(self.tmp, ignore_errors=True)

    # --- plumbing -----------------------------------------------------------------------------------------

    def send(self, rule_name: str, method: str, path: str, key: int, body: Any = None) -> tuple[int, Any, str]:
        OPERATIONS["count"] += 1
        by_rule: dict[str, int] = OPERATIONS["by_rule"]
        by_rule[rule_name] = by_rule.get(rule_name, 0) + 1
        data = None if body is None else json.dumps(body).encode()
        headers = {"Content-Type": "application/json", "Authorization": f"Bearer {self.keys[key]}"}
        req = urllib.request.Request(self.server.url + path, data=data, method=method, headers=headers)
        try:
            with urllib.request.urlopen(req, timeout=30) as resp:
                raw = resp.read().decode()
                status = resp.status
        except urllib.error.HTTPError as err:
            with err:
                raw = err.read().decode()
                status = err.code
        assert status < 500, (status, raw)
        return status, json.loads(raw) if raw else None, raw

    def ids_of(self, namespace: str) -> set[str]:
        return self.episodes[namespace] | self.facts[namespace]

    def check_isolated(self, namespace: str | None, raw: str) -> None:
        """No marker and no memory id of any namespace but `namespace` appears in the response."""
        for other in NAMESPACES:
            if other == namespace:
                continue
            assert marker(other) not in raw, (namespace, other, raw[:500])
            for memory_id in self.ids_of(other):
                assert f'"{memory_id}"' not in raw, (namespace, other, memory_id)

    def call(
        self, rule_name: str, method: str, ns: int, key: int, rest: str, body: Any = None, *, echoes: bool = False
    ) -> Any | None:
        """Send; when the key may not reach the namespace, expect a bare 403 and return None. `echoes`: the
        response repeats the request (a recall trace repeats its query), so the caller checks it instead."""
        namespace = NAMESPACES[ns]
        key = key if key < len(KEY_SCOPES) else ns
        status, reply, raw = self.send(rule_name, method, f"/v1/namespaces/{namespace}{rest}", key, body)
        if not namespace_within(namespace, KEY_SCOPES[key]):
            OPERATIONS["denied"] += 1
            assert status == 403, (status, raw)
            assert reply["error"] == "forbidden"
            self.check_isolated(None, raw)
            return None
        if not echoes:
            self.check_isolated(namespace, raw)
        return status, reply

    def content(self, namespace: str, words: list[str]) -> tuple[str, str]:
        self.counter += 1
        memory_id = f"m-{self.counter}"
        text = f"{marker(namespace)} Dana noted item {self.counter} about {' '.join(words)} for the team"
        return memory_id, text

    def absorb_write(self, namespace: str, result: dict[str, Any]) -> None:
        if result["status"] == "stored":
            self.episodes[namespace].add(result["id"])
        elif result["status"] == "merged":
            assert result["merged_into"] in self.ids_of(namespace), result

    # --- rules ----------------------------------------------------------------------------------------------

    @initialize()
    def start(self) -> None:
        assert self.send("health", "GET", "/v1/health", 0)[0] == 200

    @rule(ns=ns_index, key=key_index, tag=st.sampled_from(TAGS), words=words_of(4))
    def write(self, ns: int, key: int, tag: str, words: list[str]) -> None:
        namespace = NAMESPACES[ns]
        memory_id, text = self.content(namespace, words)
        answer = self.call("write", "POST", ns, key, "/memories", {"content": text, "id": memory_id, "tags": [tag]})
        if answer is not None:
            status, result = answer
            assert status in (200, 201), result
            self.absorb_write(namespace, result)

    @rule(ns=ns_index, key=key_index, n=st.integers(1, 4), words=words_of(3))
    def batch(self, ns: int, key: int, n: int, words: list[str]) -> None:
        namespace = NAMESPACES[ns]
        items = []
        for i in range(n):
            memory_id, text = self.content(namespace, [*words, WORDS[i]])
            items.append({"content": text, "id": memory_id, "tags": [TAGS[i % 2]]})
        answer = self.call("batch", "POST", ns, key, "/memories/batch", {"items": items})
        if answer is not None:
            status, reply = answer
            assert status == 200, reply
            for result in reply["results"]:
                self.absorb_write(namespace, result)

    @rule(ns=ns_index, key=key_index, words=words_of(3), top_k=st.integers(1, 20))
    def recall(self, ns: int, key: int, words: list[str], top_k: int) -> None:
        namespace = NAMESPACES[ns]
        # Ask for the other namespaces' markers too: a leak would have every chance to show.
        query = " ".join([*words, *(marker(other) for other in NAMESPACES)])
        body = {"query": query, "top_k": top_k, "explain": True}
        answer = self.call("recall", "POST", ns, key, "/recall", body, echoes=True)
        if answer is not None:
            status, reply = answer
            assert status == 200, reply
            # The trace echoes the query (with the other markers); every candidate it lists must be ours.
            trace = reply.pop("trace")
            self.check_isolated(namespace, json.dumps(reply))
            for stage in trace["stages"]:
                for candidate in stage["candidates"]:
                    assert candidate["id"] in self.ids_of(namespace), (namespace, stage["stage"], candidate)
                    self.check_isolated(namespace, json.dumps(candidate))
            for hit in reply["results"]:
                assert hit["id"] in self.ids_of(namespace), hit
                assert marker(namespace) in hit["content"], hit

    @rule(ns=ns_index, key=key_index, data=st.data())
    def get_or_forget_by_id(self, ns: int, key: int, data: st.DataObject) -> None:
        namespace = NAMESPACES[ns]
        known = sorted((owner, memory_id) for owner in NAMESPACES for memory_id in self.ids_of(owner))
        if not known:
            return
        owner, memory_id = data.draw(st.sampled_from(known), label="owner and id")
        forget = data.draw(st.booleans(), label="forget")
        method = "DELETE" if forget else "GET"
        answer = self.call("forget_id" if forget else "get", method, ns, key, f"/memories/{memory_id}")
        if answer is None:
            return
        status, reply = answer
        if owner != namespace:
            assert status == 404, (status, reply)  # another namespace's id does not exist here
            return
        assert status == 200, reply
        if forget:
            self.drop(namespace, reply)
        else:
            assert reply["id"] == memory_id and reply["namespace"] == namespace

    @rule(ns=ns_index, key=key_index, tag=st.sampled_from(TAGS))
    def forget_by_filter(self, ns: int, key: int, tag: str) -> None:
        answer = self.call("forget_filter", "POST", ns, key, "/forget", {"tags": [tag], "layer": "episodic"})
        if answer is not None:
            status, reply = answer
            assert status == 200, reply
            self.drop(NAMESPACES[ns], reply)

    def drop(self, namespace: str, receipt: dict[str, Any]) -> None:
        assert receipt["namespace"] == namespace
        for memory_id in receipt["ids"]:
            assert memory_id in self.ids_of(namespace), (namespace, memory_id)
            self.episodes[namespace].discard(memory_id)
            self.facts[namespace].discard(memory_id)
        for memory_id in receipt["facts_updated"]:
            assert memory_id in self.facts[namespace], (namespace, memory_id)

    @rule(ns=ns_index, key=key_index)
    def consolidate(self, ns: int, key: int) -> None:
        namespace = NAMESPACES[ns]
        answer = self.call("consolidate", "POST", ns, key, "/consolidate", {})
        if answer is not None:
            status, reply = answer
            assert status == 200, reply
            assert reply["namespace"] == namespace
            assert reply["episodes_considered"] <= len(self.episodes[namespace])
            for fact_id in reply["fact_ids"]:
                assert all(fact_id not in self.ids_of(other) for other in NAMESPACES if other != namespace)
                self.facts[namespace].add(fact_id)

    @rule(ns=ns_index, key=key_index)
    def stats(self, ns: int, key: int) -> None:
        namespace = NAMESPACES[ns]
        answer = self.call("stats", "GET", ns, key, "/stats")
        if answer is not None:
            status, reply = answer
            assert status == 200, reply
            assert reply["namespace"] == namespace
            assert reply["counts"]["episodic"] == len(self.episodes[namespace]), (namespace, reply)
            facts = reply["counts"]["semantic"] + reply["counts"].get("semantic_superseded", 0)
            assert facts <= len(self.facts[namespace]), (namespace, reply)

    @rule(days=st.integers(0, 3))
    def time_passes(self, days: int) -> None:
        self.clock.advance(days=days, minutes=1)


def test_no_response_ever_mentions_another_namespace(record_property: Any) -> None:
    OPERATIONS.update(count=0, denied=0, by_rule={})
    machine_settings = settings(
        max_examples=MAX_EXAMPLES,
        stateful_step_count=STEPS,
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
        database=None,
    )
    IsolationMachine.TestCase.settings = machine_settings
    # Hypothesis draws how many steps each run takes, so one batch of runs may fall short of the floor that
    # keeps this test from passing on too little: run batches until it is reached (at most five).
    floor, batches = (5000 if LONG else 200), 0
    while OPERATIONS["count"] < floor and batches < 5:
        IsolationMachine.TestCase().runTest()
        batches += 1
    record_property("operations", OPERATIONS["count"])
    print(
        f"\nisolation: {OPERATIONS['count']} HTTP operations ({OPERATIONS['denied']} refused with 403) "
        f"in {batches * MAX_EXAMPLES} runs; by rule: {OPERATIONS['by_rule']}"
    )
    assert OPERATIONS["count"] >= floor
