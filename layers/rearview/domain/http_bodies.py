"""Bodies of the HTTP API that no service takes or returns: the health check, a cleared working memory, and the
API-key routes' requests and answers. The route functions (`rearview.api.http_handlers`) and the Python client
(`rearview.client`) both read them."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from rearview.domain.access import ApiKey
from rearview.domain.permissions import Permission
from rearview.domain.quota import MAX_REQUESTS_PER_MINUTE
from rearview.domain.request_model import RequestModel
from rearview.domain.timestamps import RequestDatetime


class Health(BaseModel):
    status: Literal["ok"] = "ok"
    version: str
    embedder: str
    dim: int


class Cleared(BaseModel):
    cleared: int = Field(description="How many working-memory keys were removed")


class KeyCreate(RequestModel):
    """A new API key: its scope, its permissions, optionally an expiry and a note."""

    model_config = ConfigDict(extra="forbid")

    namespace: str = Field(
        max_length=300, description="The key's scope: this namespace and every namespace under it, e.g. `acme`"
    )
    permissions: list[Permission] = Field(
        min_length=1, max_length=len(Permission), description="Any of read, write, forget, consolidate, admin"
    )
    expires_at: RequestDatetime | None = Field(None, description="When the key stops working (UTC); default never")
    description: str | None = Field(None, max_length=200, description="A note for people: who or what uses the key")
    requests_per_minute: int | None = Field(
        None,
        ge=0,
        le=MAX_REQUESTS_PER_MINUTE,
        description="The key's own request limit per minute (0: unlimited); default: the deployment's "
        "(`REARVIEW_THROTTLE__REQUESTS_PER_MINUTE`). At most the caller's own limit",
    )


class KeyLimit(RequestModel):
    """A key's new request limit."""

    model_config = ConfigDict(extra="forbid")

    requests_per_minute: int | None = Field(
        ge=0,
        le=MAX_REQUESTS_PER_MINUTE,
        description="Requests per minute (0: unlimited); null: back to the deployment's default. At most the "
        "caller's own limit",
    )


class KeyInfo(BaseModel):
    """A key as listed: never its secret, never the secret's hash."""

    key_id: str
    namespace: str = Field(description="The key's scope")
    permissions: list[Permission]
    created_at: datetime
    expires_at: datetime | None = None
    revoked_at: datetime | None = None
    description: str | None = None
    requests_per_minute: int | None = Field(
        None, description="The key's own request limit per minute (0: unlimited); null: the deployment's default"
    )
    status: Literal["active", "revoked", "expired"]

    @classmethod
    def of(cls, key: ApiKey, now: datetime) -> KeyInfo:
        if key.revoked_at is not None:
            status: Literal["active", "revoked", "expired"] = "revoked"
        elif key.expires_at is not None and now >= key.expires_at:
            status = "expired"
        else:
            status = "active"
        return cls(
            key_id=key.key_id,
            namespace=key.scope,
            permissions=list(key.permissions),
            created_at=key.created_at,
            expires_at=key.expires_at,
            revoked_at=key.revoked_at,
            description=key.description,
            requests_per_minute=key.requests_per_minute,
            status=status,
        )


class KeyCreated(KeyInfo):
    key: str = Field(description="The API key, `rv_<key id>_<secret>`: shown this once, never again")


class KeyList(BaseModel):
    keys: list[KeyInfo]
