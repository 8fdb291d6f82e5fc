"""docs/configuration.md is what docs/settings_reference.py prints from `rearview.settings`: every setting, its
default and the comment that says why. A setting added, renamed or re-defaulted without regenerating the doc (or
without a comment) fails here."""

from __future__ import annotations

import pytest
from pydantic import BaseModel

from rearview.settings import Settings
from support.modules import REPO, load_module

pytestmark = pytest.mark.unit


def test_the_configuration_doc_is_generated_from_the_settings() -> None:
    reference = load_module("docs/settings_reference.py", "settings_reference")
    written = (REPO / "docs" / "configuration.md").read_text(encoding="utf-8")
    assert written == reference.reference(), (
        "docs/configuration.md is out of date: .venv/bin/python docs/settings_reference.py > docs/configuration.md"
    )


def test_every_setting_has_a_row() -> None:
    written = (REPO / "docs" / "configuration.md").read_text(encoding="utf-8")
    names: list[str] = []
    for name, info in Settings.model_fields.items():
        if isinstance(info.default, BaseModel):
            section = type(info.default).model_fields
            names.extend(f"REARVIEW_{name.upper()}__{field.upper()}" for field in section)
        else:
            names.append(f"REARVIEW_{name.upper()}")
    missing = [name for name in names if f"| `{name}` |" not in written]
    assert len(names) > 80 and not missing, missing


def test_the_doc_names_the_inducer_settings() -> None:
    written = (REPO / "docs" / "configuration.md").read_text(encoding="utf-8")
    for name in ("REARVIEW_INDUCER", "REARVIEW_OPENAI__MODEL", "REARVIEW_CONSOLIDATE__LOOKBACK_DAYS"):
        assert f"`{name}`" in written
