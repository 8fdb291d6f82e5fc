"""Who sent a request, admitted: the one place every authenticated request of every edge passes (the HTTP
resolver, `/mcp`, locally and in the Lambda functions).

The principal comes from the gateway authorizer's context when API Gateway ran one (on AWS), else from the
Authorization header checked against the key store (or the open mode of the local server). It is then counted
against its key's request limit (`rearview.service.throttle`), before anything of the request is done.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rearview.domain.access import Principal
from rearview.service.access import AccessGate


def authorization_header(event: Mapping[str, Any]) -> str | None:
    """The event's Authorization header (any case), if it has one."""
    for name, value in (event.get("headers") or {}).items():
        if name.lower() == "authorization":
            return str(value)
    return None


def admitted_principal(event: Mapping[str, Any], gate: AccessGate) -> Principal:
    """The principal of an API Gateway v2 event, counted against its key's limit. Raises Unauthorized (401) for
    no valid credential and Throttled (429, with Retry-After) past the limit."""
    authorizer = (event.get("requestContext") or {}).get("authorizer") or {}
    context = authorizer.get("lambda") if isinstance(authorizer, Mapping) else None
    if isinstance(context, Mapping) and context:
        principal = Principal.from_authorizer_context(context)
    else:
        principal = gate.principal(authorization_header(event))
    return gate.admit(principal)
