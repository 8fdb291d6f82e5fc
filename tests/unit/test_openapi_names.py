"""What a generated SDK reads of the OpenAPI document: every operation named once, by its catalogue row, as an
identifier every generator can turn into a method (snake_case), with one tag that the document describes."""

from __future__ import annotations

import json
import re

import pytest

from rearview.api.http import create_resolver
from rearview.bootstrap import build
from rearview.operations.catalogue import OPERATIONS, TAGS
from rearview.settings import Settings

pytestmark = pytest.mark.unit


def test_operations_have_stable_unique_identifiers_and_described_tags() -> None:
    services = build(Settings(backend="memory", embedder="hashing"))
    try:
        document = json.loads(create_resolver(services).openapi_document())
    finally:
        services.close()
    operations = [op for methods in document["paths"].values() for op in methods.values()]
    ids = [op["operationId"] for op in operations]
    assert sorted(ids) == sorted(o.name for o in OPERATIONS), "an operationId is not its catalogue row's name"
    assert len(set(ids)) == len(ids)
    assert all(re.fullmatch(r"[a-z][a-z0-9_]*", name) for name in ids), ids
    described = {tag["name"]: tag.get("description") for tag in document["tags"]}
    assert set(described) == set(TAGS) and all(described.values())
    for op in operations:
        assert len(op["tags"]) == 1 and op["tags"][0] in described, op["operationId"]
        assert op.get("summary"), op["operationId"]
