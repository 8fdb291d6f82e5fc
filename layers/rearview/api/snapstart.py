"""Lambda SnapStart: what goes into a function's snapshot, and what each environment restored from it makes its own.

With SnapStart on (infra: `rearview:snapStart`), Lambda runs a function's init when a version is published,
snapshots the initialised environment, and starts later environments from that snapshot instead of from scratch. The
runtime's hooks (`snapshot_restore_py`, part of the Python 3.12+ managed runtimes; absent elsewhere, where `register`
registers nothing) do two things here:

- Before the snapshot, `prime` imports what a first invocation would import (the services and the AWS adapters,
  boto3, the X-Ray SDK, and for the mcp function the MCP SDK), so a restored environment starts with them loaded.
  It builds nothing: no client, no credentials, no connection, no thread. Each would be copied into every restored
  environment and go stale there (the role's credentials expire, connections break), so the services are still built
  on the first invocation, after the restore.
- After a restore, `random` is reseeded: its state is what imported code would otherwise share across environments
  (botocore's retry jitter draws from it). `secrets`, `uuid.uuid4` and `os.urandom` read the kernel at each call.

Without SnapStart the before-snapshot hook never runs, and a cold start imports lazily, as the handlers are written to.
"""

from __future__ import annotations

import importlib
import importlib.util
import random
from collections.abc import Callable, Sequence

# What building the AWS backend's services and answering a first request imports (rearview.bootstrap's lazy imports
# for backend aws, the HTTP route table, boto3): the modules of every function's first invocation.
PRIMED_MODULES: tuple[str, ...] = (
    "rearview.bootstrap",
    "rearview.api.http",
    "rearview.service.write_worker",
    "rearview.adapters.aws_clients",
    "rearview.adapters.bedrock_embedder",
    "rearview.adapters.dynamodb.hindsight_ledger",
    "rearview.adapters.dynamodb.key_store",
    "rearview.adapters.dynamodb.memory_store",
    "rearview.adapters.dynamodb.retention_policies",
    "rearview.adapters.dynamodb.stream_records",
    "rearview.adapters.opensearch",
    "rearview.adapters.sqs_consolidation_jobs",
    "rearview.adapters.sqs_write_queue",
    "boto3",
    "botocore.config",
)
# Imported only where installed: Powertools' Tracer loads the X-Ray SDK on the first invocation (about 350 ms).
OPTIONAL_MODULES: tuple[str, ...] = ("aws_xray_sdk.core",)
# The mcp function's first call: the SDK's server and transport, and the tools (about 0.75 s of a cold start).
MCP_MODULES: tuple[str, ...] = ("rearview.api.mcp", "mcp.server.streamable_http_manager")

# The authorizer's first call: the composition root and the key store over DynamoDB it builds.
AUTHORIZER_MODULES: tuple[str, ...] = (
    "rearview.bootstrap",
    "rearview.adapters.dynamodb.key_store",
    "boto3",
    "botocore.config",
)


def prime(modules: Sequence[str] = PRIMED_MODULES, optional: Sequence[str] = OPTIONAL_MODULES) -> list[str]:
    """Import `modules`, and those of `optional` that are installed; the names imported."""
    present = [name for name in optional if importlib.util.find_spec(name.partition(".")[0]) is not None]
    for name in (*modules, *present):
        importlib.import_module(name)
    return [*modules, *present]


def reseed() -> None:
    """A fresh seed for `random` from the operating system's entropy, unlike the snapshot's copy."""
    random.seed()


def register(prime_snapshot: Callable[[], object]) -> bool:
    """Register the hooks where the runtime offers them (`prime_snapshot` before the snapshot, `reseed` after a
    restore); whether it did."""
    try:
        from snapshot_restore_py import register_after_restore, register_before_snapshot
    except ImportError:
        return False
    register_before_snapshot(prime_snapshot)
    register_after_restore(reseed)
    return True
