"""How LangGraph's names map onto Rearview's, both ways, with no dependency on LangGraph (so they read on their own
and are tested alone).

- **A namespace tuple is a Rearview namespace**: its labels are segments under the store's base namespace
  (`("users", "123")` under `acme` is `acme:users:123`; without a base the first label is the tenant). A label keeps
  the characters a segment allows (A-Z a-z 0-9 _ @ -) and writes every other byte of its UTF-8 as `.XX` (hex), which
  is unambiguous since LangGraph forbids `.` in labels: `("Zoë Smith",)` is `Zo.C3.AB.20Smith`. A namespace has at
  most 4 segments of at most 64 characters, so the base and the tuple together hold at most 4 labels.
- **A key is a memory id**: `lg.` and the key, with the characters an id allows (A-Z a-z 0-9 _ : @ # -) kept and
  every other byte (`.` included) written `.XX`; at most 128 characters in all.
"""

from __future__ import annotations

import re

from rearview.domain.namespaces import MAX_NAMESPACE_SEGMENTS

MAX_SEGMENT_CHARS = 64
MAX_ID_CHARS = 128
KEY_PREFIX = "lg."
_SEGMENT_KEEPS = re.compile(r"[A-Za-z0-9_@-]")
_ID_KEEPS = re.compile(r"[A-Za-z0-9_:@#-]")
_ESCAPED = re.compile(r"((?:\.[0-9A-F]{2})+)")


class NameTooLong(ValueError):
    """A namespace or key that Rearview's limits cannot hold."""


def _encode(text: str, keeps: re.Pattern[str]) -> str:
    return "".join(ch if keeps.fullmatch(ch) else "".join(f".{b:02X}" for b in ch.encode()) for ch in text)


def _decode(text: str) -> str:
    return _ESCAPED.sub(lambda m: bytes.fromhex(m.group(1).replace(".", "")).decode(), text)


def label_segment(label: str) -> str:
    """A namespace label as a Rearview segment."""
    segment = _encode(label, _SEGMENT_KEEPS)
    if len(segment) > MAX_SEGMENT_CHARS:
        raise NameTooLong(
            f"namespace label {label[:40]!r}: at most {MAX_SEGMENT_CHARS} characters once written as a Rearview "
            f"segment (got {len(segment)})"
        )
    return segment


def segment_label(segment: str) -> str:
    return _decode(segment)


def namespace_of(base: str | None, labels: tuple[str, ...]) -> str:
    """The Rearview namespace of a LangGraph namespace under `base`."""
    segments = [*(base.split(":") if base else []), *(label_segment(label) for label in labels)]
    if len(segments) > MAX_NAMESPACE_SEGMENTS:
        held = MAX_NAMESPACE_SEGMENTS - (len(base.split(":")) if base else 0)
        raise NameTooLong(f"namespace {labels!r}: at most {held} labels under {base or 'no base'!r}")
    return ":".join(segments)


def labels_of(base: str | None, namespace: str) -> tuple[str, ...] | None:
    """The LangGraph namespace of a Rearview namespace, or None if it does not lie under `base` (or is it)."""
    segments = namespace.split(":")
    skip = len(base.split(":")) if base else 0
    if base and (segments[:skip] != base.split(":") or len(segments) == skip):
        return None
    return tuple(segment_label(s) for s in segments[skip:])


def memory_id_of(key: str) -> str:
    """The memory id of a key."""
    memory_id = KEY_PREFIX + _encode(key, _ID_KEEPS)
    if len(memory_id) > MAX_ID_CHARS:
        raise NameTooLong(f"key {key[:40]!r}: at most {MAX_ID_CHARS} characters once written as a memory id")
    return memory_id


def key_of(memory_id: str) -> str | None:
    """The key of a store item's memory id, or None for a memory the store did not write."""
    return _decode(memory_id[len(KEY_PREFIX) :]) if memory_id.startswith(KEY_PREFIX) else None
