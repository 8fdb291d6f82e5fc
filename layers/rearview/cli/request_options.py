"""The options of a command that sends a request model (remember, recall, forget, consolidate, brief, feedback).

Each option is named after the field it sets (`tags`, spelled `--tag` on the command line) and helped by the field's
own description, the words HTTP's OpenAPI and the MCP tools show; the command builds its model from whichever
options were given, so an option cannot be declared and then dropped on the way.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any, TypeVar

import typer
from pydantic import BaseModel

RequestModel = TypeVar("RequestModel", bound=BaseModel)


def described(model: type[BaseModel], field: str, note: str = "") -> str:
    """The help of the option that sets `model.field`: the field's description, and `note` for the command line."""
    description = model.model_fields[field].description or field.replace("_", " ")
    return f"{description} ({note})" if note else description


def request_from_options(model: type[RequestModel], ctx: typer.Context) -> RequestModel:
    """`model` from the command's options named after its fields; one not given (None, or no repeat of a
    repeatable option) leaves the field to its default. Raises pydantic's ValidationError, naming the field."""
    given: dict[str, Any] = {
        name: value for name, value in ctx.params.items() if name in model.model_fields and value not in (None, (), [])
    }
    return model.model_validate(given)


# The choices of the domain's literals, as typer wants them (an Enum).
class OutcomeChoice(StrEnum):
    SUCCESS = "success"
    FAILURE = "failure"
    PARTIAL = "partial"
    UNKNOWN = "unknown"


class KindChoice(StrEnum):
    PREFERENCE = "preference"
    FACT = "fact"
    LESSON = "lesson"


class VerdictChoice(StrEnum):
    USEFUL = "useful"
    NOT_USEFUL = "not_useful"
    WRONG = "wrong"
