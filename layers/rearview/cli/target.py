"""Where a command's operation runs, through one code path: on the local data directory (the services built for the
call, closed after it), or on the server at `--url` / `REARVIEW_URL` (with `--token` / `REARVIEW_TOKEN`) through
the Python client. Either way the operation is the catalogue's, its namespace is checked once, and a user error
ends as `error: <message>` with exit code 2."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx
import typer

from rearview.bootstrap import Services
from rearview.cli.invocation import EmbedderChoice, open_services, user_errors
from rearview.client import RearviewClient
from rearview.domain.access import ALL_NAMESPACES, Principal
from rearview.domain.namespaces import validate_namespace
from rearview.domain.permissions import ALL_PERMISSIONS
from rearview.errors import ConfigurationError
from rearview.operations.catalogue import OPERATIONS
from rearview.operations.offers import Operation
from rearview.operations.signature import CALLER_PARAMETER, NAMESPACE_PARAMETER, signature

# Recall and consolidation on a cold Lambda can take a few seconds; past this the server is not answering.
DEFAULT_TIMEOUT_SECONDS = 60.0
# Who the command line is on its own data directory: its owner, who may do everything (an edit's history says `cli`).
LOCAL_CALLER = Principal(key_id="cli", scope=ALL_NAMESPACES, permissions=ALL_PERMISSIONS, open=True)


@dataclass(frozen=True)
class RemoteTarget:
    """Where the CLI's commands go when `--url` is given: set once by the app's callback."""

    url: str
    token: str | None

    @contextmanager
    def client(self) -> Iterator[RearviewClient]:
        """The Python client on the server; a server that cannot be reached is a user error naming the url."""
        parts = urlsplit(self.url)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise ConfigurationError(f"url: expected http(s)://host[:port] (got {self.url[:200]!r})", field="url")
        base = self.url.rstrip("/")
        with RearviewClient(base, self.token, timeout=DEFAULT_TIMEOUT_SECONDS) as client:
            try:
                yield client
            except httpx.TransportError as exc:
                raise ConfigurationError(f"url: cannot reach {base} ({exc})", field="url") from None


def remote_target(ctx: typer.Context) -> RemoteTarget | None:
    """The `--url` target of the running command (set on the root context), or None for the local data directory.

    Taken from the command's own context, not a global lookup: typer may ship its own copy of click, whose
    context stack `click.get_current_context` would not see.
    """
    obj = ctx.find_root().obj
    return obj if isinstance(obj, RemoteTarget) else None


def invoke(operation: Operation, services: Services, *args: Any, **kwargs: Any) -> Any:
    """Run `operation` on `services` with the arguments its function takes (the services and the caller left
    out), as the command line's owner; its namespace is checked here, once."""
    taken = [p for p in signature(operation).parameters if p.kind != "caller"]
    bound = inspect.Signature(
        [inspect.Parameter(p.name, inspect.Parameter.POSITIONAL_OR_KEYWORD, default=p.default) for p in taken]
    ).bind(*args, **kwargs)
    arguments = dict(bound.arguments)
    if NAMESPACE_PARAMETER in arguments:
        arguments[NAMESPACE_PARAMETER] = validate_namespace(arguments[NAMESPACE_PARAMETER])
    if signature(operation).takes("caller"):
        arguments[CALLER_PARAMETER] = LOCAL_CALLER
    return operation.function(services, **arguments)


def run(
    ctx: typer.Context,
    data_dir: Path | None,
    embedder: EmbedderChoice | None,
    name: str,
    *args: Any,
    on_local: Callable[[Services], None] | None = None,
    **kwargs: Any,
) -> Any:
    """The answer of operation `name` with these arguments: from the server at `--url` when one is given, else
    from the local data directory (`on_local` sees the services first). User errors exit 2 either way."""
    operation = OPERATIONS.named(name)
    target = remote_target(ctx)
    if target is not None:
        with user_errors(), target.client() as client:
            return client.call(operation, *args, **kwargs)
    with open_services(data_dir, embedder) as services, user_errors():
        if on_local is not None:
            on_local(services)
        return invoke(operation, services, *args, **kwargs)
