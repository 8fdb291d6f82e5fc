"""The README's two-minute tour, as written: its curl requests, read from the README itself, sent over real HTTP to
the local server (`make run`'s: the embedded backend, the default embedder), and each recall answering as the README
says it does."""

from __future__ import annotations

import json
import re
import shlex
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from rearview.api.local_server import LocalServer
from rearview.bootstrap import build
from rearview.clock import ManualClock
from rearview.settings import Settings
from support.modules import REPO

pytestmark = pytest.mark.integration


@dataclass(frozen=True)
class Request:
    method: str
    path: str
    body: Any
    # The comment after the command ("# no_relevant_memory: true"), if any.
    says: str


def tour() -> list[Request]:
    """The curl commands of the README's tour, in order, with `$API` resolved to a path."""
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    section = readme.split("## A two-minute tour", 1)[1].split("\n## ", 1)[0]
    block = re.findall(r"```bash\n(.*?)```", section, flags=re.DOTALL)[0]  # the curl block; the CLI's follows
    (api,) = re.findall(r"^API=http://127\.0\.0\.1:8765(\S+)$", block, flags=re.MULTILINE)
    commands = re.sub(r"\\\n\s*", " ", block)
    requests = []
    for line in commands.splitlines():
        if not line.startswith("curl "):
            continue
        command, _, says = line.partition("   #")
        words = shlex.split(command.replace("$API", api))
        method = words[words.index("-X") + 1] if "-X" in words else "GET"
        body = json.loads(words[words.index("-d") + 1]) if "-d" in words else None
        (url,) = [w for w in words[1:] if w.startswith("/v1/")]
        requests.append(Request(method, url, body, says.strip()))
    return requests


def send(base: str, request: Request) -> tuple[int, Any]:
    data = None if request.body is None else json.dumps(request.body).encode()
    sent = urllib.request.Request(
        base + request.path, data=data, method=request.method, headers={"Content-Type": "application/json"}
    )
    try:
        with urllib.request.urlopen(sent, timeout=60) as reply:
            return reply.status, json.loads(reply.read())
    except urllib.error.HTTPError as err:
        with err:
            return err.code, json.loads(err.read())


@pytest.fixture(scope="module")
def answers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, tuple[int, Any]]]:
    """Every request of the tour sent in order to a fresh local server; each answer by its recall query (or
    method and path)."""
    data_dir: Path = tmp_path_factory.mktemp("tour") / "data"
    services = build(Settings(data_dir=data_dir), clock=ManualClock())
    answered: dict[str, tuple[int, Any]] = {}
    with LocalServer(services.settings, services, host="127.0.0.1", port=0) as server:
        for request in tour():
            key = request.body.get("query") if request.body and "query" in request.body else None
            answered[key or f"{request.method} {request.path}"] = send(server.url, request)
            if request.says:
                answered[f"says: {key}"] = (0, request.says)
    services.close()
    yield answered


def test_the_tour_is_the_readmes(answers: dict[str, tuple[int, Any]]) -> None:
    assert {"what does the user eat?", "what did I book today?", "favourite opera singer?"} <= set(answers)
    assert all(status < 400 for status, _ in answers.values()), answers


def test_what_the_user_eats_is_the_latest_fact(answers: dict[str, tuple[int, Any]]) -> None:
    _, reply = answers["what does the user eat?"]

    assert reply["no_relevant_memory"] is False
    assert reply["results"][0]["content"] == "The user is vegan"
    assert "The user is vegetarian" not in [hit["content"] for hit in reply["results"]]


def test_todays_booking_is_what_was_booked_today(answers: dict[str, tuple[int, Any]]) -> None:
    _, reply = answers["what did I book today?"]

    assert reply["no_relevant_memory"] is False
    assert reply["results"][0]["content"].startswith("Booked the 9:40 flight to Lisbon")
    assert reply["time_range"]["expression"] == "today"
    assert [stage["stage"] for stage in reply["trace"]["stages"]][-1] == "budget"


def test_an_opera_singer_is_not_remembered(answers: dict[str, tuple[int, Any]]) -> None:
    _, says = answers["says: favourite opera singer?"]
    _, reply = answers["favourite opera singer?"]

    assert says == "no_relevant_memory: true"
    assert reply["no_relevant_memory"] is True
    assert reply["results"] == []
