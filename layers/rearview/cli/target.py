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
from rearview.cli.invocation import EmbedderChoice, open_services, say, user_errors
from rearview.client import RearviewClient
from rearview.domain.access import ALL_NAMESPACES, Principal
from rearview.domain.namespaces import validate_namespace
from rearview.domain.permissions import ALL_PERMISSIONS
from rearview.errors import ConfigurationError, NamespaceForbidden, Unauthorized
from rearview.operations.catalogue import OPERATIONS
from rearview.operations.offers import Operation
from rearview.operations.signature import CALLER_PARAMETER, NAMESPACE_PARAMETER, signature

# Recall and consolidation on a cold Lambda can take a few seconds; past this the server is not answering.
DEFAULT_TIMEOUT_SECONDS = 60.0
# Who the command line is on its own data directory: its owner, who may do everything (an edit's history says `cli`).
LOCAL_CALLER = Principal(key_id="cli", scope=ALL_NAMESPACES, permissions=ALL_PERMISSIONS, open=True)
# The operations that add memories: the only ones that create a local store where there is none (the others say
# there is none and stop, so a command run from the wrong folder never answers from a new, empty store).
CREATE_THE_STORE = frozenset({"write_memory", "write_batch", "import_memories", "put_working"})

# Calls an operation of the catalogue by name, on the local services or the server: `call("stats", namespace)`.
OperationCall = Callable[..., Any]


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
        say(f"server: {base}")
        with RearviewClient(base, self.token, timeout=DEFAULT_TIMEOUT_SECONDS) as client:
            try:
                yield client
            except httpx.TransportError as exc:
                raise ConfigurationError(
                    f"url: cannot reach {base} ({exc}); is `rearview serve` running there? Check --url (or "
                    "REARVIEW_URL)",
                    field="url",
                ) from None
            except Unauthorized as exc:
                raise Unauthorized(f"{exc.message} ({self._credential_fix()})", field=exc.field) from None
            except NamespaceForbidden as exc:
                fix = "use a key whose namespace covers it (`rearview keys create NAMESPACE` on the server)"
                raise NamespaceForbidden(f"{exc.message} ({fix})", field=exc.field) from None

    def _credential_fix(self) -> str:
        if self.token is None:
            return "pass an API key with --token rv_... or REARVIEW_TOKEN"
        return (
            "the key given with --token or REARVIEW_TOKEN was refused: check it, and that it is not revoked or expired"
        )


def remote_target(ctx: typer.Context) -> RemoteTarget | None:
    """The `--url` target of the running command (set on the root context), or None for the local data directory.

    Taken from the command's own context, not a global lookup: typer may ship its own copy of click, whose
    context stack `click.get_current_context` would not see.
    """
    obj = ctx.find_root().obj
    return obj if isinstance(obj, RemoteTarget) else None


def bound_arguments(operation: Operation, *args: Any, **kwargs: Any) -> dict[str, Any]:
    """The arguments of `operation`'s function by name (the services and the caller left out), its namespace
    checked (InvalidInput naming `namespace`)."""
    taken = [p for p in signature(operation).parameters if p.kind != "caller"]
    bound = inspect.Signature(
        [inspect.Parameter(p.name, inspect.Parameter.POSITIONAL_OR_KEYWORD, default=p.default) for p in taken]
    ).bind(*args, **kwargs)
    arguments = dict(bound.arguments)
    if NAMESPACE_PARAMETER in arguments:
        arguments[NAMESPACE_PARAMETER] = validate_namespace(arguments[NAMESPACE_PARAMETER])
    return arguments


def invoke(operation: Operation, services: Services, *args: Any, **kwargs: Any) -> Any:
    """Run `operation` on `services` with the arguments its function takes (the services and the caller left
    out), as the command line's owner; its namespace is checked here, once."""
    arguments = bound_arguments(operation, *args, **kwargs)
    if signature(operation).takes("caller"):
        arguments[CALLER_PARAMETER] = LOCAL_CALLER
    return operation.function(services, **arguments)


@contextmanager
def connected(
    ctx: typer.Context,
    data_dir: Path | None,
    embedder: EmbedderChoice | None,
    *,
    creates: bool = False,
    on_local: Callable[[Services], None] | None = None,
) -> Iterator[OperationCall]:
    """A call of the catalogue's operations by name, for as many calls as the block makes: on the server at `--url`
    when one is given, else on the local data directory (opened once; created where there is none only when
    `creates`; `on_local` sees the services first). User errors exit 2 either way."""
    target = remote_target(ctx)
    if target is not None:
        with user_errors(), target.client() as client:
            yield lambda name, *args, **kwargs: client.call(OPERATIONS.named(name), *args, **kwargs)
        return
    with open_services(data_dir, embedder, creates=creates) as services, user_errors():
        if on_local is not None:
            on_local(services)
        yield lambda name, *args, **kwargs: invoke(OPERATIONS.named(name), services, *args, **kwargs)


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
    with user_errors():
        # A namespace the API refuses ends the command before a store is opened (or created) or a server asked.
        bound_arguments(OPERATIONS.named(name), *args, **kwargs)
    with connected(ctx, data_dir, embedder, creates=name in CREATE_THE_STORE, on_local=on_local) as call:
        return call(name, *args, **kwargs)
