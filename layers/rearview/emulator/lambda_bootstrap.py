"""What a Lambda Python runtime does around a handler, for a function's own interpreter: run as a script by
`python3.13 -I -S lambda_bootstrap.py <read fd> <write fd> <code dir> <handler> <path>...` (the standard library only,
nothing of rearview: the interpreter sees no site-packages, so it imports only what Lambda would give the function).

`sys.path` becomes the function's code directory, then each `<path>` (the layer's `python/` directory, then what the
runtime provides), then the interpreter's standard library, in Lambda's order (`/var/task`, `/opt/python`,
`/var/lang/lib/python3.13/site-packages`, `/var/runtime`). With `AWS_LAMBDA_INITIALIZATION_TYPE=snap-start` the
runtime's before-snapshot hooks run after the handler's import, as when Lambda publishes a SnapStart version.

The parent speaks JSON lines over the two descriptors: this answers `["ready", "", ""]` (or `["init_error", type,
message]`) once, then for each `[event, context fields]` `["ok", result, ""]` or `["error", type, message]`.
"""

from __future__ import annotations

import importlib.util
import json
import os
import sys
import time
import traceback
from typing import Any

_STANDARD_LIBRARY = [p for p in sys.path if p and "site-packages" not in p and not p.endswith(".py")]


class LambdaContext:
    """The context object a handler receives (the fields Powertools reads)."""

    def __init__(self, fields: dict[str, Any]) -> None:
        self.function_name = fields["function_name"]
        self.function_version = "$LATEST"
        self.memory_limit_in_mb = fields["memory_limit_in_mb"]
        self.invoked_function_arn = fields["invoked_function_arn"]
        self.aws_request_id = fields["aws_request_id"]
        self.log_group_name = fields["log_group_name"]
        self.log_stream_name = fields["log_stream_name"]
        self._deadline = float(fields["deadline"])

    def get_remaining_time_in_millis(self) -> int:
        return max(int((self._deadline - time.time()) * 1000), 0)


def _send(stream: Any, message: list[Any]) -> None:
    stream.write(json.dumps(message, default=str) + "\n")
    stream.flush()


def _load_handler(code_dir: str, handler: str) -> Any:
    module_name, _, attribute = handler.rpartition(".")
    location = importlib.util.spec_from_file_location(module_name, os.path.join(code_dir, f"{module_name}.py"))
    if location is None or location.loader is None:
        raise ImportError(f"no {module_name}.py in {code_dir}")
    module = importlib.util.module_from_spec(location)
    sys.modules[module_name] = module
    location.loader.exec_module(module)
    if os.environ.get("AWS_LAMBDA_INITIALIZATION_TYPE") == "snap-start":
        _run_before_snapshot_hooks()
    return getattr(module, attribute)


def _run_before_snapshot_hooks() -> None:
    try:
        from snapshot_restore_py import get_before_snapshot
    except ImportError:
        return
    for hook, args, kwargs in get_before_snapshot():
        hook(*args, **kwargs)


def main(argv: list[str]) -> None:
    read_fd, write_fd, code_dir, handler_name, *paths = argv
    sys.path[:] = [code_dir, *paths, *_STANDARD_LIBRARY]
    inbox = os.fdopen(int(read_fd), "r", encoding="utf-8")
    outbox = os.fdopen(int(write_fd), "w", encoding="utf-8")
    try:
        handler = _load_handler(code_dir, handler_name)
    except BaseException as exc:  # an init error: reported to every invocation, as Lambda does
        traceback.print_exc()
        _send(outbox, ["init_error", type(exc).__name__, str(exc)])
        return
    _send(outbox, ["ready", "", ""])
    for line in inbox:
        event, fields = json.loads(line)
        try:
            _send(outbox, ["ok", handler(event, LambdaContext(fields)), ""])
        except Exception as exc:
            traceback.print_exc()
            _send(outbox, ["error", type(exc).__name__, str(exc)])


if __name__ == "__main__":
    main(sys.argv[1:])
