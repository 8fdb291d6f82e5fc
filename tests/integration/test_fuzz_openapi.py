"""Fuzzing the HTTP API from its own OpenAPI document with schemathesis, over real HTTP (the LocalServer).

Every operation of /openapi.json (fetched from the running server) is called with requests that schemathesis
generates from it, in both its modes (valid, and invalid bodies, path and query parameters), carrying the
bootstrap admin credential so that requests reach the services rather than stop at 403 (schemathesis' negative
mode also drops the credential now and then: those requests must get a proper 401).
Properties: no 5xx, ever; every 4xx is JSON `{error, message}` that names what was wrong. The tally is printed.

Default: ~200 requests. REARVIEW_LONG_TESTS=1: >= 1,000.
"""

from __future__ import annotations

import json
import os
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from schemathesis import GenerationMode

from rearview.api.local_server import LocalServer
from rearview.api.routes import API_ROUTES
from rearview.bootstrap import build
from rearview.settings import Settings

pytestmark = [pytest.mark.integration, pytest.mark.slow]

LONG = os.environ.get("REARVIEW_LONG_TESTS") == "1"
# Per operation and generation mode (valid, invalid): 15 x 2 x 7 ~ 200 requests; long: 15 x 2 x 45 > 1,000.
EXAMPLES_PER_OPERATION = 45 if LONG else 7
MINIMUM_REQUESTS = 1000 if LONG else 150
ADMIN_TOKEN = "fuzz-bootstrap-admin-token"

TALLY: Counter[str] = Counter()
FAILURES: list[str] = []


@pytest.fixture(scope="module")
def fuzz_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalServer]:
    data_dir = Path(tmp_path_factory.mktemp("fuzz")) / "data"
    services = build(Settings(data_dir=data_dir, embedder="hashing", api_token=ADMIN_TOKEN))
    server = LocalServer(services.settings, services, host="127.0.0.1", port=0).start()
    yield server
    server.shutdown()
    services.close()


@pytest.fixture(scope="module")
def api_schema(fuzz_server: LocalServer) -> Any:
    """The schema as a client sees it: fetched from the running server's /openapi.json."""
    return schemathesis.openapi.from_url(f"{fuzz_server.url}/openapi.json")


# The documented operations, from the route table (the test below fails if the document disagrees).
OPERATIONS = sorted((route.method, route.path) for route in API_ROUTES if route.documented)
MODES = (GenerationMode.POSITIVE, GenerationMode.NEGATIVE)


def test_the_document_lists_exactly_the_fuzzed_operations(api_schema: Any) -> None:
    documented = {(op.ok().method.upper(), op.ok().path) for op in api_schema.get_all_operations()}
    assert documented == set(OPERATIONS)


@pytest.mark.parametrize("mode", MODES, ids=[m.value for m in MODES])
@pytest.mark.parametrize(("method", "path"), OPERATIONS, ids=[f"{m} {p}" for m, p in OPERATIONS])
def test_generated_requests_never_5xx_and_4xx_name_the_problem(
    method: str, path: str, mode: GenerationMode, api_schema: Any, fuzz_server: LocalServer
) -> None:
    operation = api_schema[path][method.lower()]

    @given(case=operation.as_strategy(generation_mode=mode))
    @settings(
        max_examples=EXAMPLES_PER_OPERATION,
        deadline=None,
        suppress_health_check=list(HealthCheck),
        database=None,
    )
    def fuzz(case: Any) -> None:
        response = case.call(base_url=fuzz_server.url, headers={"Authorization": f"Bearer {ADMIN_TOKEN}"})
        status = response.status_code
        TALLY["requests"] += 1
        TALLY[f"{status // 100}xx"] += 1
        TALLY[str(status)] += 1
        where = f"{case.method} {case.formatted_path}"
        if status >= 500:
            FAILURES.append(f"{status} {where}: {response.text[:300]}")
        assert status < 500, (where, status, response.text[:1000])
        if 400 <= status < 500:
            body = json.loads(response.text)
            assert isinstance(body, dict), (where, body)
            assert isinstance(body.get("error"), str) and body["error"], (where, body)
            assert isinstance(body.get("message"), str) and len(body["message"]) >= 8, (where, body)

    fuzz()


def test_fuzz_tally(record_property: Any) -> None:
    """Runs after the generated tests (same module, later in the file): prints and checks the tally."""
    record_property("fuzz_requests", TALLY["requests"])
    statuses = {k: v for k, v in sorted(TALLY.items()) if k.isdigit()}
    print(
        f"\nfuzz: {TALLY['requests']} generated requests; 2xx {TALLY['2xx']}, 4xx {TALLY['4xx']}, "
        f"5xx {TALLY['5xx']}; by status {statuses}"
    )
    assert not FAILURES, FAILURES
    if TALLY["requests"] == 0:
        pytest.skip("the generated tests did not run (deselected)")
    assert TALLY["requests"] >= MINIMUM_REQUESTS
