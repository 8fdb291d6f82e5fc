"""A variable that is no longer a setting (a setting that became a constant, a feature removed) does nothing, as
settings ignore variables they do not know: reading the settings at a process's start says so, naming it. The
variables are those docs/configuration.md lists as retired, and none of them is a setting again: its generator,
docs/settings_reference.py, refuses to run otherwise (tests/unit/test_configuration_doc.py runs it)."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from rearview.api.lambda_runtime import FunctionRuntime
from rearview.bootstrap import build
from rearview.settings import RETIRED_VARIABLES, from_environment, retired_variables_set

pytestmark = pytest.mark.unit


def test_only_retired_variables_are_named_whatever_their_case() -> None:
    environ = {
        "REARVIEW_RECALL__SESSION_BOOST": "0.2",
        "rearview_write__embed_plain_chat": "true",
        "REARVIEW_RECALL__VECTOR_WEIGHT": "0.5",
        "REARVIEW_RECALL__RRF_K": "30",
        "HOME": "/root",
    }
    assert retired_variables_set(environ) == [
        "REARVIEW_RECALL__RRF_K",
        "REARVIEW_RECALL__SESSION_BOOST",
        "rearview_write__embed_plain_chat",
    ]


def test_reading_the_settings_warns_about_a_retired_variable(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setenv("REARVIEW_RECALL__SESSION_BOOST", "0.3")
    with caplog.at_level(logging.WARNING, logger="rearview.settings"):
        from_environment()
    assert [r.getMessage().split(" ", 1)[0] for r in caplog.records] == ["REARVIEW_RECALL__SESSION_BOOST"]
    assert "does nothing" in caplog.records[0].getMessage()


def test_the_composition_root_and_a_function_read_settings_that_way(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture, tmp_path: Path
) -> None:
    monkeypatch.setenv("REARVIEW_RECALL__TYPO_MIN_LENGTH", "4")
    monkeypatch.setenv("REARVIEW_BACKEND", "memory")
    monkeypatch.setenv("REARVIEW_EMBEDDER", "hashing")
    monkeypatch.setenv("REARVIEW_DATA_DIR", str(tmp_path))
    with caplog.at_level(logging.WARNING, logger="rearview.settings"):
        build().close()
        FunctionRuntime("recall")
    named = [r.getMessage().split(" ", 1)[0] for r in caplog.records if r.name == "rearview.settings"]
    assert named == ["REARVIEW_RECALL__TYPO_MIN_LENGTH"] * 2


def test_nothing_is_said_without_one(monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    for name in RETIRED_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    with caplog.at_level(logging.WARNING, logger="rearview.settings"):
        from_environment()
    assert not [r for r in caplog.records if r.name == "rearview.settings"]
