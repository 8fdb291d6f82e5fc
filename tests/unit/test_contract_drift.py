"""One contract per operation, three edges: the request model an operation takes must reach HTTP (the OpenAPI
request body), MCP (a flat top-level argument per field, with the same schema) and the CLI (an option per field),
and every route and tool must state the permission it needs. A field added to a model and forgotten at one edge,
or a tool whose permission differs from its route's, fails here."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
import typer
from pydantic import BaseModel

from rearview.api.http import create_resolver
from rearview.api.http_manage import shaped_routes
from rearview.api.routes import API_ROUTES, ROUTE_TABLE, SWAGGER_UI_OPERATION, route_named
from rearview.bootstrap import Services, build
from rearview.cli import app
from rearview.domain.access import Principal
from rearview.domain.brief import BriefRequest, FeedbackRequest
from rearview.domain.consolidate import ConsolidateRequest
from rearview.domain.forget import ForgetRequest
from rearview.domain.recall import RecallQuery
from rearview.domain.working import WorkingWrite
from rearview.domain.write import MemoryWrite
from rearview.settings import Settings

if TYPE_CHECKING:
    from rearview.api.mcp_toolset import ToolSet

pytestmark = pytest.mark.unit


@dataclass(frozen=True)
class Operation:
    """An operation with a request model, and where each edge takes it."""

    route: str  # the operation in the route table
    model: type[BaseModel]
    tool: str  # the MCP tool
    command: str | None  # the CLI command; None where the CLI has none


OPERATIONS = (
    Operation("write_memory", MemoryWrite, "remember", "remember"),
    Operation("recall", RecallQuery, "recall", "recall"),
    Operation("forget", ForgetRequest, "forget", "forget"),
    Operation("consolidate", ConsolidateRequest, "consolidate", "consolidate"),
    Operation("brief", BriefRequest, "brief", "brief"),
    Operation("feedback", FeedbackRequest, "feedback", "feedback"),
    # Working memory is an agent's scratch state, set over HTTP or MCP; the CLI has no command for it.
    Operation("put_working", WorkingWrite, "working_memory_set", None),
)

# The route each MCP tool acts through: the tool needs the route's permission.
TOOL_ROUTES = {
    "remember": "write_memory",
    "recall": "recall",
    "explain_recall": "recall",
    "forget": "forget",
    "working_memory_get": "get_working",
    "working_memory_set": "put_working",
    "working_memory_clear": "clear_working",
    "consolidate": "consolidate",
    "memory_stats": "stats",
    "brief": "brief",
    "feedback": "feedback",
    "end_session": "end_session",
    "list_memories": "list_memories",
    "edit_memory": "edit_memory",
    "memory_history": "memory_history",
    "memory_sources": "memory_sources",
    "export": "export_memories",
}

# Routes that check no permission themselves: the public ones (health and the API's documents), and the MCP
# endpoint, which authenticates the caller and whose tools each check their own permission.
# The inspector's static files carry no data (its calls to the API carry the key the user enters).
UNGUARDED = {"GET /v1/health", "GET /openapi.json", "GET /docs", "POST /mcp", "GET /ui", "GET /ui/{asset}"}

# Schema keys that describe a field's name and default rather than what it accepts: the OpenAPI generator leaves
# out defaults made by a factory, which the MCP schema shows.
_NOT_CONSTRAINTS = {"title", "default"}


@pytest.fixture(scope="module")
def services(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Services]:
    svc = build(Settings(data_dir=tmp_path_factory.mktemp("drift"), embedder="hashing"))
    yield svc
    svc.close()


@pytest.fixture(scope="module")
def openapi(services: Services) -> dict[str, Any]:
    document = create_resolver(services).get_openapi_schema()
    return dict(json.loads(document.model_dump_json(by_alias=True, exclude_none=True)))


# The MCP side is imported by the fixtures below: the mcp SDK takes about a second to import, which every test
# process would pay at collection.


@pytest.fixture(scope="module")
def tools() -> ToolSet:
    from rearview.api.mcp import TOOLS

    return TOOLS


@pytest.fixture(scope="module")
def tool_schemas(services: Services) -> dict[str, dict[str, Any]]:
    from mcp import Client

    from rearview.api.mcp import create_mcp_server, fixed_principal
    from support.mcp_calls import run

    async def list_tools() -> dict[str, dict[str, Any]]:
        async with Client(create_mcp_server(services, fixed_principal(Principal.open_local()))) as client:
            return {tool.name: tool.input_schema for tool in (await client.list_tools()).tools}

    return run(list_tools())


def body_properties(openapi: dict[str, Any], route: str) -> dict[str, Any]:
    """The properties of a route's request body, its `$ref` (possibly inside `anyOf` with null) followed."""
    row = route_named(route)
    schema = openapi["paths"][row.path][row.method.lower()]["requestBody"]["content"]["application/json"]["schema"]
    (ref,) = [s["$ref"] for s in [schema, *schema.get("anyOf", [])] if "$ref" in s]
    return dict(openapi["components"]["schemas"][ref.rsplit("/", 1)[1]]["properties"])


def constraints(schema: dict[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in schema.items() if key not in _NOT_CONSTRAINTS}


def cli_params(command: str) -> dict[str, Any]:
    """The parameters of a CLI command by name (typer's click command, introspected; typer may ship its own click,
    so no click type is named here)."""
    group: Any = typer.main.get_command(app)
    return {str(param.name): param for param in group.commands[command].params}


# --- the three edges ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("operation", OPERATIONS, ids=lambda op: op.route)
def test_every_field_is_in_the_http_request_body(openapi: dict[str, Any], operation: Operation) -> None:
    properties = body_properties(openapi, operation.route)

    assert set(properties) == set(operation.model.model_fields)
    for name, info in operation.model.model_fields.items():
        assert properties[name].get("description") == info.description, name


@pytest.mark.parametrize("operation", OPERATIONS, ids=lambda op: op.route)
def test_every_field_is_a_flat_mcp_argument_with_the_http_schema(
    openapi: dict[str, Any], tool_schemas: dict[str, dict[str, Any]], operation: Operation
) -> None:
    arguments = tool_schemas[operation.tool]["properties"]
    http = body_properties(openapi, operation.route)

    for name in operation.model.model_fields:
        assert name in arguments, f"{operation.tool} has no argument {name}"
        assert constraints(arguments[name]) == constraints(http[name]), name


@pytest.mark.parametrize("operation", [op for op in OPERATIONS if op.command], ids=lambda op: op.route)
def test_every_field_is_an_option_of_the_cli_command(operation: Operation) -> None:
    assert operation.command is not None
    params = cli_params(operation.command)

    for name, info in operation.model.model_fields.items():
        assert name in params, f"`rearview {operation.command}` has no option for {name}"
        help_text = getattr(params[name], "help", None) or ""
        assert info.description and info.description in help_text, name


def test_each_tool_takes_its_model_whole_but_for_the_fields_it_forces(
    tools: ToolSet, tool_schemas: dict[str, dict[str, Any]]
) -> None:
    for spec in tools.specs:
        if spec.request is None:
            continue
        _, model = spec.request
        assert set(spec.forced) <= set(model.model_fields), spec.name
        taken = set(tool_schemas[spec.name]["properties"]) & set(model.model_fields)
        assert taken == set(model.model_fields) - set(spec.forced), spec.name
    forced = {spec.name: dict(spec.forced) for spec in tools.specs if spec.forced}
    assert forced == {"explain_recall": {"explain": True}}


# --- permissions ----------------------------------------------------------------------------------------------------


def test_every_route_needs_a_permission_unless_it_is_explicitly_unguarded() -> None:
    assert {route.route_key for route in ROUTE_TABLE if route.permission is None} == UNGUARDED


def test_each_tool_needs_the_permission_of_its_route(tools: ToolSet) -> None:
    assert set(TOOL_ROUTES) == {spec.name for spec in tools.specs}
    for spec in tools.specs:
        assert spec.permission == route_named(TOOL_ROUTES[spec.name]).permission, spec.name


# --- the table itself ---------------------------------------------------------------------------------------------


def test_each_route_is_declared_once_and_implemented_once(services: Services) -> None:
    keys = [route.route_key for route in ROUTE_TABLE]
    operations = [route.operation for route in ROUTE_TABLE]
    assert len(set(keys)) == len(keys) and len(set(operations)) == len(operations)
    # The resolver refuses to start if a route has no function or a function no route.
    resolver = create_resolver(services)
    assert set(shaped_routes(services, resolver)) <= {route.operation for route in API_ROUTES}
    assert SWAGGER_UI_OPERATION in {route.operation for route in API_ROUTES}


def test_the_route_table_needs_only_the_standard_library() -> None:
    """The CDK app imports it without the library's dependencies."""
    layers = Path(__file__).resolve().parents[2] / "layers"
    code = (
        f"import sys; sys.path.insert(0, {str(layers)!r}); before = set(sys.modules); import rearview.api.routes; "
        "print(' '.join({name.split('.')[0] for name in set(sys.modules) - before}))"
    )
    # -I -S: no site-packages, so nothing but the standard library and layers/ can be imported.
    loaded = subprocess.run([sys.executable, "-I", "-S", "-c", code], capture_output=True, text=True, check=True)
    assert set(loaded.stdout.split()) - set(sys.stdlib_module_names) == {"rearview"}
