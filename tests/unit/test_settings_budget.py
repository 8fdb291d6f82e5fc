"""The settings stay few: every leaf field of `Settings`, counted through the nested sections, is at most
`BUDGET`. A value no user would change is a constant next to the code that uses it, with its reason beside it."""

from __future__ import annotations

import pytest
from pydantic import BaseModel

from rearview.settings import Settings

pytestmark = pytest.mark.unit

BUDGET = 90


def leaf_settings(model: type[BaseModel], prefix: str = "") -> list[str]:
    """Every setting's dotted name: a nested section counts its own fields, not itself."""
    names: list[str] = []
    for name, info in model.model_fields.items():
        kind = info.annotation
        if isinstance(kind, type) and issubclass(kind, BaseModel):
            names += leaf_settings(kind, f"{prefix}{name}.")
        else:
            names.append(prefix + name)
    return names


def test_the_count_recurses_into_the_sections() -> None:
    names = leaf_settings(Settings)

    assert "backend" in names and "recall.min_relevance" in names and "aws.table_name" in names
    assert "recall" not in names and len(names) == len(set(names))


def test_there_are_at_most_ninety_settings() -> None:
    names = leaf_settings(Settings)

    assert len(names) <= BUDGET, f"{len(names)} settings, over the budget of {BUDGET}: {names}"
