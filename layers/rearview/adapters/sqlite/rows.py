"""Rows and memories: how an Episode or a Fact is laid out in its table, and a MemoryFilter as a WHERE clause.

Time filters are half-open: `since <= t < until`, t being the episode's occurred_at or the fact's
last_confirmed_at. A fact never matches a filter on `session_id`, `event_types` or `outcomes` (facts have none),
an episode never one on `kinds`; `consolidated` only constrains episodes.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterable, Sequence
from datetime import datetime
from functools import lru_cache
from json.encoder import encode_basestring
from operator import attrgetter
from typing import Any, TypeVar

import numpy as np
from pydantic import BaseModel

from rearview.adapters.sqlite.connection import CachedRow
from rearview.domain.episode_columns import EpisodeColumns
from rearview.domain.memory import Episode, Evidence, Fact, Memory, StoredLayer
from rearview.domain.metadata import metadata_json, metadata_terms
from rearview.domain.search import MemoryFilter, episode_searchable_text, searchable_text
from rearview.domain.timestamps import as_utc, utc_from_epoch
from rearview.text_analysis import index_text

LAYERS: tuple[StoredLayer, ...] = ("episodic", "semantic")


def namespace_token(namespace: str) -> str:
    """The namespace as one FTS5 token: letters and digits only, so no tokenizer can split or merge it."""
    return "ns" + hashlib.blake2b(namespace.encode("utf-8"), digest_size=16).hexdigest()


def epoch(value: datetime) -> float:
    # An aware datetime's timestamp does not depend on its zone: converting it to UTC first (as_utc) would only
    # cost (a bulk load takes two or three times a row). A naive one is taken as UTC, as everywhere.
    return value.timestamp() if value.tzinfo is not None else as_utc(value).timestamp()


def epoch_or_none(value: datetime | None) -> float | None:
    return None if value is None else epoch(value)


# The datetime of a stored epoch, remembered: rows read back hold the same times again and again (recall reads the
# same candidates query after query; a batch shares its created_at), and `datetime.fromtimestamp` with a zone is
# most of a time's cost. Datetimes are immutable, so handing out one object many times is safe. ~3 MB at most.
_utc_from_epoch = lru_cache(maxsize=16_384)(utc_from_epoch)


def datetime_or_none(value: float | None) -> datetime | None:
    return None if value is None else _utc_from_epoch(value)


# What `json.dumps(value, ensure_ascii=False)` does, without building an encoder for each call (a non-default
# argument makes json.dumps build one): a bulk load encodes three lists per row.
_encode_json = json.JSONEncoder(ensure_ascii=False).encode


def json_list(values: Iterable[str]) -> str:
    """`json.dumps(list(values), ensure_ascii=False)` of strings, each encoded by the function the encoder calls for
    a string and joined as the encoder joins a list's items: a third of the encoder's time (a bulk load encodes three
    lists per row)."""
    listed = values if isinstance(values, list) else list(values)
    # Most tag, entity and session lists are empty.
    return "[" + ", ".join(map(encode_basestring, listed)) + "]" if listed else "[]"


TIME_COLUMN: dict[str, str] = {"episodic": "occurred_at", "semantic": "last_confirmed_at"}
TABLE: dict[str, str] = {"episodic": "episodes", "semantic": "facts"}

_COMMON_COLUMNS = (
    "id, namespace, content, tags_json, importance, access_count, last_accessed_at, created_at, "
    "confirmations, redacted, version"
)
EPISODE_COLUMNS = (
    _COMMON_COLUMNS + ", occurred_at, event_type, entities_json, outcome, session_id, consolidated, context, "
    "outcome_status, last_occurred_at, session_ids_json, metadata_json, source, expires_at, parent_id, chunk_index, "
    "chunk_count"
)
FACT_COLUMNS = (
    _COMMON_COLUMNS
    + ", dimension, confidence, provenance_json, last_confirmed_at, status, superseded_by, superseded_at, "
    "kind, facets_json, evidence_json, induced_by, first_seen_at, metadata_json, source, expires_at, entities_json"
)
# Where each layer's columns of the fields every memory has since migration 15 (metadata_json, source, expires_at)
# start in a row of its SELECT_COLUMNS.
_AGENT_FIELDS_AT = {"episodic": 21, "semantic": 23}
SELECT_COLUMNS: dict[str, str] = {"episodic": EPISODE_COLUMNS, "semantic": FACT_COLUMNS}


def _json_list(text: str) -> list[Any]:
    # Most tag, entity and session lists are empty: "[]" needs no parser.
    return [] if text == "[]" else json.loads(text)


def _metadata(text: str) -> dict[str, Any]:
    # Most memories have none: "{}" needs no parser.
    return {} if text == "{}" else json.loads(text)


def _common_fields(row: Sequence[Any], layer: StoredLayer) -> dict[str, Any]:
    """The fields every stored memory has, in their declaration order (see `_trusted`)."""
    at = _AGENT_FIELDS_AT[layer]
    return {
        "id": row[0],
        "namespace": row[1],
        "content": row[2],
        "tags": _json_list(row[3]),
        "importance": row[4],
        "access_count": row[5],
        "last_accessed_at": datetime_or_none(row[6]),
        "created_at": _utc_from_epoch(row[7]),
        "confirmations": row[8],
        "redacted": bool(row[9]),
        "version": row[10],
        "metadata": _metadata(row[at]),
        "source": row[at + 1],
        "expires_at": datetime_or_none(row[at + 2]),
    }


_M = TypeVar("_M", Episode, Fact)
_set_attribute = object.__setattr__


def _plain_fields(cls: type[BaseModel]) -> bool:
    """Whether `model_construct` of `cls` amounts to setting its attributes: no aliases to look up, no
    post-init hook, no private or extra attributes."""
    return (
        not cls.__pydantic_post_init__
        and not cls.__private_attributes__
        and cls.model_config.get("extra") != "allow"
        and all(f.alias is None and f.validation_alias is None for f in cls.model_fields.values())
    )


# Each model's field names in declaration order, where model_construct amounts to setting its attributes.
_PLAIN: dict[type[BaseModel], tuple[str, ...] | None] = {
    cls: tuple(cls.model_fields) if _plain_fields(cls) else None for cls in (Episode, Fact)
}


def _trusted(cls: type[_M], fields: dict[str, Any]) -> _M:
    """What `cls.model_construct(**fields)` makes, without its loop over the fields, when `fields` holds every
    field in declaration order (recall reads dozens of rows per query: model_construct took half their time).
    The values come from our own columns, already of the right types (UTC-aware datetimes)."""
    if tuple(fields) != _PLAIN[cls]:
        return cls.model_construct(**fields)
    model = cls.__new__(cls)
    _set_attribute(model, "__dict__", fields)
    _set_attribute(model, "__pydantic_fields_set__", set(fields))
    _set_attribute(model, "__pydantic_extra__", None)
    _set_attribute(model, "__pydantic_private__", None)
    return model


def episode_from_row(row: Sequence[Any]) -> Episode:
    fields = _common_fields(row, "episodic")
    fields.update(
        layer="episodic",
        occurred_at=_utc_from_epoch(row[11]),
        event_type=row[12],
        entities=_json_list(row[13]),
        outcome=row[14],
        outcome_status=row[18],
        session_id=row[15],
        last_occurred_at=datetime_or_none(row[19]),
        session_ids=_json_list(row[20]),
        consolidated=bool(row[16]),
        context=row[17],
        parent_id=row[24],
        chunk_index=row[25],
        chunk_count=row[26],
    )
    return _trusted(Episode, fields)


def fact_from_row(row: Sequence[Any]) -> Fact:
    fields = _common_fields(row, "semantic")
    fields.update(
        layer="semantic",
        kind=row[18],
        dimension=row[11],
        facets=json.loads(row[19]),
        confidence=row[12],
        provenance=_json_list(row[13]),
        evidence=Evidence.model_validate_json(row[20]) if row[20] else None,
        induced_by=row[21],
        first_seen_at=datetime_or_none(row[22]),
        last_confirmed_at=_utc_from_epoch(row[14]),
        status=row[15],
        superseded_by=row[16],
        superseded_at=datetime_or_none(row[17]),
        entities=_json_list(row[26]),
    )
    return _trusted(Fact, fields)


def memory_from_row(layer: str, row: Sequence[Any]) -> Memory:
    return episode_from_row(row) if layer == "episodic" else fact_from_row(row)


def episode_values(e: Episode) -> tuple[Any, ...]:
    """The episode's values in the table's value columns (`_VALUE_COLUMNS["episodic"]`)."""
    return tuple(column[0] for column in episode_columns((e,)))


def episode_columns(episodes: Sequence[Episode]) -> list[list[Any]]:
    """The values of `episodes` column by column (one list per value column, in the episodes' order): what
    `episode_values` gives an episode, made for a bulk insert's chunk at once, a third faster than row by row (a
    field is read by one `attrgetter` mapped over the chunk; an empty list, the usual case, is not encoded)."""

    def field(name: str) -> list[Any]:
        return list(map(_FIELD[name], episodes))

    def seconds(name: str) -> list[float | None]:
        return [None if t is None else epoch(t) for t in field(name)]

    return _episode_columns(field, seconds)


def loaded_episode_columns(rows: EpisodeColumns, start: int, stop: int) -> list[list[Any]]:
    """The same columns for the rows `start` to `stop` of a bulk load (`load_episodes`), read off its columns: a
    field not given is the `Episode` default in every row, `created_at` not given is `occurred_at`."""
    count = stop - start

    def field(name: str) -> list[Any]:
        column = rows.given(name)
        if column is not None:
            return column[start:stop]
        info = Episode.model_fields[name]
        default = info.default_factory() if info.default_factory is not None else info.default  # type: ignore[call-arg]
        return [default] * count

    def seconds(name: str) -> list[Any]:
        column = rows.given(name) or (rows.occurred_at if name == "created_at" else None)
        return [None] * count if column is None else column[start:stop]

    return _episode_columns(field, seconds)


def _episode_columns(field: Callable[[str], list[Any]], seconds: Callable[[str], list[Any]]) -> list[list[Any]]:
    """An episode's value columns (`_VALUE_COLUMNS["episodic"]`) from its fields' columns: `field` gives a field's
    values, `seconds` a time field's as epoch seconds (or None)."""
    content, tags, entities, context = field("content"), field("tags"), field("entities"), field("context")
    metadata = field("metadata")
    return [
        content,
        _json_lists(tags),
        field("importance"),
        field("access_count"),
        seconds("last_accessed_at"),
        seconds("created_at"),
        field("confirmations"),
        [int(flag) for flag in field("redacted")],
        field("version"),
        seconds("occurred_at"),
        field("event_type"),
        _json_lists(entities),
        field("outcome"),
        field("session_id"),
        [int(flag) for flag in field("consolidated")],
        [index_text(episode_searchable_text(*words)) for words in zip(content, tags, entities, strict=True)],
        context,
        [index_text(text) if text else "" for text in context],
        field("outcome_status"),
        seconds("last_occurred_at"),
        _json_lists(field("session_ids")),
        [metadata_text(each) for each in metadata],
        [metadata_terms_text(each) for each in metadata],
        field("source"),
        seconds("expires_at"),
        field("parent_id"),
        field("chunk_index"),
        field("chunk_count"),
    ]


_FIELD = {name: attrgetter(name) for name in Episode.model_fields}


def _json_lists(lists: list[list[str]]) -> list[str]:
    return [json_list(values) if values else "[]" for values in lists]


def metadata_text(metadata: dict[str, Any]) -> str:
    """A memory's metadata as its column holds it (compact JSON; most memories have none)."""
    return metadata_json(metadata) if metadata else "{}"


def metadata_terms_text(metadata: dict[str, Any]) -> str:
    """The terms a metadata filter matches (`rearview.domain.metadata`), as a JSON list for `memory_metadata`."""
    return json_list(metadata_terms(metadata)) if metadata else "[]"


def fact_values(f: Fact) -> tuple[Any, ...]:
    return (
        f.content,
        json_list(f.tags),
        f.importance,
        f.access_count,
        epoch_or_none(f.last_accessed_at),
        epoch(f.created_at),
        f.confirmations,
        int(f.redacted),
        f.version,
        f.dimension,
        f.confidence,
        json_list(f.provenance),
        epoch(f.last_confirmed_at),
        f.status,
        f.superseded_by,
        epoch_or_none(f.superseded_at),
        index_text(searchable_text(f)),
        f.kind,
        _encode_json(f.facets),
        f.evidence.model_dump_json() if f.evidence is not None else None,
        f.induced_by,
        epoch_or_none(f.first_seen_at),
        metadata_text(f.metadata),
        metadata_terms_text(f.metadata),
        f.source,
        epoch_or_none(f.expires_at),
        json_list(f.entities),
    )


def fact_columns(facts: Sequence[Fact]) -> list[list[Any]]:
    """`fact_values` column by column (facts come to a bulk insert in small numbers: made row by row)."""
    return [list(column) for column in zip(*map(fact_values, facts), strict=True)]


_VALUE_COLUMNS: dict[str, tuple[str, ...]] = {
    "episodic": (
        "content", "tags_json", "importance", "access_count", "last_accessed_at", "created_at",
        "confirmations", "redacted", "version", "occurred_at", "event_type", "entities_json", "outcome",
        "session_id", "consolidated", "search_text", "context", "context_text", "outcome_status",
        "last_occurred_at", "session_ids_json", "metadata_json", "metadata_terms", "source", "expires_at",
        "parent_id", "chunk_index", "chunk_count",
    ),
    "semantic": (
        "content", "tags_json", "importance", "access_count", "last_accessed_at", "created_at",
        "confirmations", "redacted", "version", "dimension", "confidence", "provenance_json",
        "last_confirmed_at", "status", "superseded_by", "superseded_at", "search_text", "kind", "facets_json",
        "evidence_json", "induced_by", "first_seen_at", "metadata_json", "metadata_terms", "source", "expires_at",
        "entities_json",
    ),
}  # fmt: skip


def insert_sql(layer: str) -> str:
    columns = ("namespace", "id", "ns_token", *_VALUE_COLUMNS[layer], "vector")
    return f"INSERT INTO {TABLE[layer]} ({', '.join(columns)}) VALUES ({', '.join('?' * len(columns))})"


# An update never lowers the access columns: what the access log folded into a row after the writer read the memory
# stays (see access_log). Aggregate MAX over the two values passes a NULL by.
_NEVER_LOWER = {
    "access_count": "access_count = MAX(access_count, ?)",
    "last_accessed_at": "last_accessed_at = (SELECT MAX(v) FROM (SELECT last_accessed_at AS v UNION ALL SELECT ?))",
}


def update_sql(layer: str) -> str:
    assignments = ", ".join(_NEVER_LOWER.get(c, f"{c} = ?") for c in _VALUE_COLUMNS[layer])
    # COALESCE: an upsert without a vector keeps the stored one. The version predicate re-checks the lock.
    return (
        f"UPDATE {TABLE[layer]} SET {assignments}, vector = COALESCE(?, vector) "
        "WHERE namespace = ? AND id = ? AND version = ?"
    )


class _Where:
    """The conditions of a WHERE clause on one aliased table, and their parameters in order."""

    def __init__(self, alias: str) -> None:
        self.alias = alias
        self.clauses: list[str] = []
        self.params: list[Any] = []

    def add(self, condition: str, *params: Any) -> None:
        """A condition on the table's columns, written without the alias (it is prefixed here)."""
        self.clauses.append(f"{self.alias}.{condition}")
        self.params.extend(params)

    def any_of(self, column: str, values: Sequence[str] | None) -> None:
        """The column holds one of the values; no condition when `values` is None."""
        if values is not None:
            self.add(f"{column} IN (SELECT value FROM json_each(?))", json_list(values))


def filter_clause(layer: str, namespace: str, flt: MemoryFilter, alias: str) -> tuple[str, list[Any]] | None:
    """The WHERE clause of `flt` on one layer's table (aliased); None if nothing of that layer can match."""
    if layer not in flt.matchable_layers():
        return None
    where = _Where(alias)
    where.add("namespace = ?", namespace)
    time_column = TIME_COLUMN[layer]
    if flt.since is not None:
        where.add(f"{time_column} >= ?", epoch(flt.since))
    if flt.until is not None:
        where.add(f"{time_column} < ?", epoch(flt.until))
    if flt.tags:
        where.add(
            "ref IN (SELECT ref FROM memory_tags WHERE namespace = ? AND layer = ? "
            "AND tag IN (SELECT value FROM json_each(?)))",
            namespace,
            layer,
            json_list(flt.tags),
        )
    where.any_of("id", flt.ids)
    _common_conditions(where, namespace, layer, flt)
    if layer == "episodic":
        _episode_conditions(where, flt)
    else:
        if not flt.include_superseded:
            where.add("status = 'active'")
        where.any_of("kind", flt.kinds or None)
    return " AND ".join(where.clauses), where.params


def _common_conditions(where: _Where, namespace: str, layer: str, flt: MemoryFilter) -> None:
    """Entities (any of), metadata (a term of every condition, looked up in `memory_metadata`) and expiry."""
    alias = where.alias
    if flt.entities:
        # No index: a namespace's entities are read row by row (what a vector search's mask asks reads them all).
        where.clauses.append(
            f"EXISTS (SELECT 1 FROM json_each({alias}.entities_json) WHERE value IN (SELECT value FROM json_each(?)))"
        )
        where.params.append(json_list(flt.entities))
    for terms in flt.metadata:
        where.add(
            "ref IN (SELECT ref FROM memory_metadata WHERE namespace = ? AND layer = ? "
            "AND term IN (SELECT value FROM json_each(?)))",
            namespace,
            layer,
            json_list(terms),
        )
    if flt.alive_at is not None:
        where.clauses.append(f"({alias}.expires_at IS NULL OR {alias}.expires_at > ?)")
        where.params.append(epoch(flt.alive_at))


def _episode_conditions(where: _Where, flt: MemoryFilter) -> None:
    where.any_of("event_type", flt.event_types or None)
    if flt.session_id is not None:
        where.add("session_id = ?", flt.session_id)
    if flt.consolidated is not None:
        where.add("consolidated = ?", int(flt.consolidated))
    where.any_of("outcome_status", flt.outcomes or None)


def unique_layers(layers: Iterable[StoredLayer]) -> list[StoredLayer]:
    return list(dict.fromkeys(layers))


def cached_row(memory: Memory, ref: int, vector: bytes | None) -> CachedRow:
    """What the vector caches learn of a stored memory's row: its ref, time, filter columns and vector."""
    array = None if vector is None else np.frombuffer(vector, dtype="<f4")
    if isinstance(memory, Episode):
        return CachedRow(
            "episodic", ref, memory.id, epoch(memory.occurred_at), True, memory.consolidated,
            memory.session_id, memory.event_type, memory.outcome_status, array,
        )  # fmt: skip
    return CachedRow(
        "semantic", ref, memory.id, epoch(memory.last_confirmed_at), memory.status == "active", False,
        None, None, memory.kind, array,
    )  # fmt: skip


def loaded_cached_rows(rows: EpisodeColumns, refs: range, vectors: np.ndarray | None) -> tuple[CachedRow, ...]:
    """`cached_row` of each row of a bulk load (`load_episodes`), read off its columns."""
    none: list[None] = [None] * len(rows)
    return tuple(
        CachedRow("episodic", ref, memory_id, time, True, False, session, event_type, status, vector)
        for ref, memory_id, time, session, event_type, status, vector in zip(
            refs,
            rows.id,
            rows.occurred_at,
            rows.session_id or none,
            rows.event_type or none,
            rows.outcome_status or none,
            none if vectors is None else vectors,
            strict=True,
        )
    )
