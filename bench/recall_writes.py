"""DynamoDB writes of one recall on the AWS backend (moto), against a baseline commit in the same run.

A namespace of episodes is written, then one recall returning `top_k` memories runs through `RecallService` (what
the recall function runs) with 512-dimensional vectors (Titan v2 as deployed); every DynamoDB call it makes is
recorded by a botocore hook. Then 100 recalls run as the recall function serves a client's requests, each admitted
against its API key's limit (the deployment's default, 1,200 a minute) first: `per request` is every DynamoDB write
of those 100 (the key's request counter included) divided by 100, all in one minute. Write units are estimated as
DynamoDB bills them, one per started KB of the larger of the item before and after each write (the sizes are the
items' attribute names and values as stored), since moto does not bill.

    .venv/bin/python bench/recall_writes.py --baseline main
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

EPISODES = 60
TOP_K = 10
REQUESTS = 100
_WRITES = ("PutItem", "UpdateItem", "DeleteItem", "BatchWriteItem", "TransactWriteItems")


def item_bytes(item: dict[str, Any]) -> int:
    """An item's size as DynamoDB counts it: attribute names plus values (numbers about their digits)."""
    size = 0
    for name, typed in item.items():
        ((kind, value),) = typed.items()
        size += len(name.encode())
        if kind == "S":
            size += len(str(value).encode())
        elif kind == "N":
            size += len(str(value)) // 2 + 1
        elif kind == "B":
            size += len(value)
        elif kind in ("L", "M"):
            size += 3 + len(json.dumps(value).encode())
        else:
            size += len(json.dumps(value).encode())
    return size


def measure() -> dict[str, Any]:
    """One recall's DynamoDB writes and their estimated write units, on this interpreter's `rearview`."""
    import boto3
    from moto import mock_aws

    from rearview.adapters.dynamodb import create_table
    from rearview.bootstrap import build
    from rearview.clock import ManualClock
    from rearview.domain.recall import RecallQuery
    from rearview.domain.write import MemoryWrite
    from rearview.settings import Settings

    os.environ.update({"AWS_DEFAULT_REGION": "us-east-1", "AWS_ACCESS_KEY_ID": "x", "AWS_SECRET_ACCESS_KEY": "x"})
    with mock_aws():
        client = boto3.client("dynamodb", region_name="us-east-1")
        create_table(client, "bench")
        settings = Settings(
            backend="aws", embedder="hashing", hashing_dim=512, aws={"table_name": "bench", "search": "embedded"}
        )
        # A fixed clock: the 100 recalls fall in one minute, as a container's busy minute would.
        services = build(settings, clock=ManualClock(datetime(2026, 12, 1, 9, 0, 5, tzinfo=UTC)))
        ns = "bench:u-1"
        items = [MemoryWrite(content=f"Met Dana about the Lisbon trip, day {i}, to plan the flights and hotel {i}")
                 for i in range(EPISODES)]  # fmt: skip
        services.writer.write_batch(ns, items[:50])
        services.writer.write_batch(ns, items[50:])
        writes: list[tuple[str, dict[str, Any]]] = []

        def record(model: Any, params: dict[str, Any], **_: Any) -> None:
            if model.name in _WRITES:
                writes.append((model.name, params))

        store_client = services.store.client  # type: ignore[attr-defined]
        store_client.meta.events.register("before-parameter-build.dynamodb", record)
        before = {json.dumps(i["sk"]): item_bytes(i) for i in client.scan(TableName="bench")["Items"]}
        query = RecallQuery(query="Lisbon trip flights with Dana", top_k=TOP_K)
        response = services.recaller.recall(ns, query)
        after = {json.dumps(i["sk"]): item_bytes(i) for i in client.scan(TableName="bench")["Items"]}
        units = 0
        for _, params in writes:
            key = json.dumps(params.get("Key", params.get("Item", {})).get("sk"))
            units += max(1, math.ceil(max(before.get(key, 0), after.get(key, 0)) / 1024))
        single = list(writes)
        per_request = requests_in_a_minute(services, ns, query, store_client, record, writes)
    return {"results": len(response.results), "writes": len(single), "write_units": units,
            "per_request": per_request, "calls": sorted({name for name, _ in single})}  # fmt: skip


def requests_in_a_minute(
    services: Any, ns: str, query: Any, store_client: Any, record: Any, writes: list[Any]
) -> float:
    """DynamoDB writes per request of REQUESTS recalls, each admitted against a new key's limit first."""
    principal = services.access.authenticate("Bearer " + services.access.create_key(ns, ["read"])[1])
    writes.clear()
    # The key store's and the request counters' clients too (each told once, whichever are the store's own).
    throttle = services.access.throttle
    others = [getattr(services.access.keys, "client", None), getattr(throttle and throttle.quota, "client", None)]
    for other in {id(c): c for c in others if c is not None and c is not store_client}.values():
        other.meta.events.register("before-parameter-build.dynamodb", record)
    for _ in range(REQUESTS):
        services.access.admit(principal)
        services.recaller.recall(ns, query)
    return len(writes) / REQUESTS


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--baseline", help="a commit to measure in the same run (its `layers`)")
    parser.add_argument("--json", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.json:
        print(json.dumps(measure()))
        return
    rows = [("this tree", measure())]
    if args.baseline:
        from baseline import extract_layers

        with tempfile.TemporaryDirectory() as scratch:
            layers = extract_layers(args.baseline, Path(scratch))
            env = {**os.environ, "PYTHONPATH": str(layers)}
            out = subprocess.run([sys.executable, __file__, "--json"], env=env, check=True, capture_output=True)
            rows.append((f"baseline {args.baseline}", json.loads(out.stdout)))
    print(f"one recall of top_k={TOP_K} over {EPISODES} episodes on moto (machine shared; counts, not timings)")
    print(f"{'tree':<24} {'results':>7} {'writes':>6} {'write units':>11} {'per request':>11}  calls")
    for name, row in rows:
        print(f"{name:<24} {row['results']:>7} {row['writes']:>6} {row['write_units']:>11} "
              f"{row['per_request']:>11.2f}  {', '.join(row['calls'])}")  # fmt: skip


if __name__ == "__main__":
    main()
