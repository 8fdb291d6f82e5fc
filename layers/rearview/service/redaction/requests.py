"""One redaction path for what a caller gives: `redact_request(model)` walks a request model, every field at every
depth (nested models, lists, dicts with their keys, JSON values), and redacts every string in it, so a field added
tomorrow is redacted without anyone remembering to. The services that store what they are given call it first:
a write and a batch, an edit, an import (each line with its history), working memory (key and value), feedback, an
API key's description. MCP and the CLI reach the same services.

A string declared `VERBATIM` (`rearview.domain.limits`: ids, session ids, dimensions, key ids) is kept as given,
since something finds it by it; one holding a secret is refused instead (InvalidInput naming the field), as
rewriting it would change what it identifies. Long high-entropy tokens alone do not refuse one: an id may well be
random. A string of a closed set (a `Literal`, an enum) holds nothing a caller chose, and is left as it is.
"""

from __future__ import annotations

import enum
import types
import typing
from collections.abc import Mapping
from datetime import date, datetime, timedelta
from functools import cache
from typing import Annotated, Any, Literal, TypeVar

from pydantic import BaseModel

from rearview.domain.limits import VERBATIM
from rearview.errors import InvalidInput
from rearview.service.redaction.text import find_secrets, redact_json, redact_label, redact_text

M = TypeVar("M", bound=BaseModel)
# An id, a namespace or the like, kept as given (a Namespace stays one).
Verbatim = TypeVar("Verbatim", bound=str)

# Finding kinds that do not refuse a verbatim string: a random id is as dense as a secret.
_NOT_REFUSED_IN_IDS = frozenset({"high_entropy_secret"})


class _Walk:
    """One request's walk: the kinds found, in order."""

    def __init__(self) -> None:
        self.kinds: list[str] = []

    def model(self, model: BaseModel, path: str) -> BaseModel:
        update: dict[str, Any] = {}
        for name, annotation, verbatim, shape in _fields_of(type(model)):
            if shape is _Shape.NO_TEXT:
                continue
            value = getattr(model, name)
            if value is None:
                continue
            where = f"{path}.{name}" if path else name
            walked: Any
            if shape is _Shape.TEXT and type(value) is str:
                walked = self.text(value, where, verbatim)
            elif shape is _Shape.TEXTS and type(value) is list:
                walked = self.texts(value, where, verbatim)
            else:
                walked = self.value(value, annotation, where, verbatim)
            if walked is not value:
                update[name] = walked
        return model.model_copy(update=update) if update else model

    def texts(self, values: list[Any], path: str, verbatim: bool) -> list[Any]:
        """A list of strings, as `container` walks one, without asking each item's type."""
        walked = [
            self.text(item, f"{path}.{i}", verbatim)
            if type(item) is str
            else self.value(item, str, f"{path}.{i}", verbatim)
            for i, item in enumerate(values)
        ]
        return walked if any(a is not b for a, b in zip(walked, values, strict=True)) else values

    def value(self, value: Any, annotation: Any, path: str, verbatim: bool = False) -> Any:
        annotation, verbatim = _unwrapped(annotation, verbatim)
        if isinstance(value, BaseModel):
            return self.model(value, path)
        if isinstance(value, enum.Enum) or typing.get_origin(annotation) is Literal:
            return value
        if isinstance(value, str):
            return self.text(value, path, verbatim)
        if annotation is Any or annotation is object:
            redacted, kinds = redact_json(value)
            self.kinds.extend(kinds)
            return redacted if redacted != value else value
        if isinstance(value, list | tuple | Mapping):
            return self.container(value, annotation, path, verbatim)
        return value  # numbers, booleans, times

    def container(self, value: Any, annotation: Any, path: str, verbatim: bool) -> Any:
        if isinstance(value, Mapping):
            key_type, value_type = _argument(annotation, 0), _argument(annotation, 1)
            walked_map = {
                self.value(k, key_type, path, verbatim): self.value(v, value_type, f"{path}.{k}", verbatim)
                for k, v in value.items()
            }
            return value if list(walked_map.items()) == list(value.items()) else walked_map
        inner = _argument(annotation, 0)
        if _holds_no_text(inner):
            return value  # a list of numbers (a vector: hundreds of them) has nothing to redact
        walked = [self.value(item, inner, f"{path}.{i}", verbatim) for i, item in enumerate(value)]
        changed = any(a is not b for a, b in zip(walked, value, strict=True))
        return type(value)(walked) if changed else value

    def text(self, value: str, path: str, verbatim: bool) -> str:
        if verbatim:
            return check_verbatim(value, path)
        redaction = redact_label(value)
        self.kinds.extend(redaction.kinds)
        return redaction.text if redaction.text != value else value


# Every write walks every field of its request, and models declare few annotations: each model's fields and each
# annotation's reading are worked out once. (id of an annotation, verbatim) -> (the annotation, kept so that its id
# stays its own; what _unwrap made of it). Bounded all the same, should models be made at run time.
_UNWRAPPED: dict[tuple[int, bool], tuple[Any, tuple[Any, bool]]] = {}
_UNWRAPPED_KEPT = 4096


class _Shape(enum.Enum):
    """What a field can hold, read once from its annotation: the walk skips a field no string fits in, and takes a
    string or a list of strings (most of a write's fields) without asking `value` what each is, as it did for every
    field of every write (`bench/write_profile.py --size 100000`: redaction 0.174 ms a write against 0.276)."""

    NO_TEXT = "no_text"  # numbers, booleans, times, a closed set
    TEXT = "text"
    TEXTS = "texts"  # a list of strings (each item's own metadata may mark it verbatim)
    OTHER = "other"  # anything else: `value` walks it


@cache
def _fields_of(model: type[BaseModel]) -> tuple[tuple[str, Any, bool, _Shape], ...]:
    """Each field of `model`: its name, its annotation (unwrapped), whether it is VERBATIM (its metadata or its
    type's), and its shape."""
    fields = []
    for name, info in model.model_fields.items():
        annotation, verbatim = _unwrapped(info.annotation, any(meta is VERBATIM for meta in info.metadata))
        fields.append((name, annotation, *_shape_of(annotation, verbatim)))
    return tuple(fields)


def _shape_of(annotation: Any, verbatim: bool) -> tuple[bool, _Shape]:
    """Whether a field is verbatim and its shape; a list of strings is verbatim if its items are."""
    if annotation is str:
        return verbatim, _Shape.TEXT
    if (
        typing.get_origin(annotation) is Literal
        or annotation in (datetime, date, timedelta)
        or _holds_no_text(annotation)
    ):
        return verbatim, _Shape.NO_TEXT
    if typing.get_origin(annotation) is list:
        inner, inner_verbatim = _unwrapped(_argument(annotation, 0), verbatim)
        if inner is str:
            return inner_verbatim, _Shape.TEXTS
    return verbatim, _Shape.OTHER


def _unwrapped(annotation: Any, verbatim: bool) -> tuple[Any, bool]:
    """The annotation without `Annotated` (noting VERBATIM in its metadata) and without `None` in a union."""
    key = (id(annotation), verbatim)
    known = _UNWRAPPED.get(key)
    if known is not None and known[0] is annotation:
        return known[1]
    made = _unwrap(annotation, verbatim)
    if len(_UNWRAPPED) >= _UNWRAPPED_KEPT:
        _UNWRAPPED.clear()
    _UNWRAPPED[key] = (annotation, made)
    return made


def _unwrap(annotation: Any, verbatim: bool) -> tuple[Any, bool]:
    while True:
        origin = typing.get_origin(annotation)
        if origin is Annotated:
            verbatim = verbatim or any(meta is VERBATIM for meta in annotation.__metadata__)
            annotation = annotation.__origin__
        elif origin in (typing.Union, types.UnionType):
            members = [a for a in typing.get_args(annotation) if a is not type(None)]
            if len(members) != 1:
                # A union of several types (models told apart by a tag): each member marks its own strings.
                marked = [_unwrapped(a, verbatim) for a in members]
                return Any if any(m[0] is Any for m in marked) else annotation, verbatim or all(m[1] for m in marked)
            annotation = members[0]
        else:
            return annotation, verbatim


def _holds_no_text(annotation: Any) -> bool:
    """True for a type no string fits in: numbers and booleans, or a union of them."""
    annotation, _ = _unwrapped(annotation, False)
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        return all(_holds_no_text(member) for member in typing.get_args(annotation) if member is not type(None))
    return annotation in (bool, int, float)


def _argument(annotation: Any, index: int) -> Any:
    arguments = typing.get_args(annotation)
    return arguments[index] if len(arguments) > index else Any


def redact_request(model: M, field: str = "") -> tuple[M, tuple[str, ...]]:
    """`model` with every string a caller chose redacted, and the kinds found (in order, once each). Raises
    InvalidInput naming the field (under `field`, e.g. `items.3`) for a verbatim string holding a secret."""
    walk = _Walk()
    redacted = walk.model(model, field)
    return redacted, tuple(dict.fromkeys(walk.kinds))  # type: ignore[return-value]


def check_verbatim(value: Verbatim, field: str) -> Verbatim:
    """`value`, an id, a namespace or the like kept as given; InvalidInput naming `field` if it holds a secret.
    Values found clean are remembered (ids and namespaces repeat), as labels are."""
    if not redact_label(value).kinds:
        return value
    refused = [f.kind for f in find_secrets(value) if f.kind not in _NOT_REFUSED_IN_IDS]
    if refused:
        raise InvalidInput(
            f"{field}: holds what looks like a secret ({refused[0]}); it is kept as given, so it may not hold one",
            field=field,
        )
    return value


def redact_given_text(value: str) -> tuple[str, tuple[str, ...]]:
    """A string given outside any model (a working-memory key, a path segment that is stored): redacted."""
    redaction = redact_text(value)
    return redaction.text, redaction.kinds


__all__ = ["check_verbatim", "redact_given_text", "redact_request"]
