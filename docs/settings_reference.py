"""Writes docs/configuration.md from `rearview.settings`: every setting's environment variable, its default, and the
comment above it in settings.py (its "why"), so the reference cannot drift from the code.

    .venv/bin/python docs/settings_reference.py > docs/configuration.md

tests/unit/test_configuration_doc.py fails when the file is not what this prints.
"""

from __future__ import annotations

import ast
import inspect
import sys
from enum import Enum
from pathlib import Path

from pydantic import BaseModel

from rearview import settings
from rearview.settings import Settings

PREFIX = "REARVIEW_"
# The meaning of a setting that shares the comment of the one above it in settings.py.
GROUPED = "(with the row above)"
SECTIONS: dict[str, str] = {
    "": "General",
    "write": "Write path (`REARVIEW_WRITE__*`)",
    "recall": "Recall (`REARVIEW_RECALL__*`)",
    "consolidate": "Hindsight consolidation (`REARVIEW_CONSOLIDATE__*`)",
    "hindsight": "Consolidation by itself: triggers, caps, brief and feedback (`REARVIEW_HINDSIGHT__*`)",
    "server": "The local server: browsers and connections (`REARVIEW_SERVER__*`)",
    "retention": "Retention timers of the local server (`REARVIEW_RETENTION__*`)",
    "throttle": "Per-key throttling: requests per API key per minute (`REARVIEW_THROTTLE__*`)",
    "index": "The embedded backend's search index (`REARVIEW_INDEX__*`)",
    "openai": "The OpenAI-compatible inducer (`REARVIEW_OPENAI__*`, with `REARVIEW_INDUCER=openai`)",
    "aws": "The AWS backend (`REARVIEW_AWS__*`, set by the CDK app in the functions)",
}

PREFACE = """# Configuration

Every setting is a `REARVIEW_*` environment variable, read and validated once at start-up (`rearview.settings`);
nested ones take `__` (`REARVIEW_RECALL__RRF_K=30`). Commands of the CLI take the common ones as options too
(`rearview serve --port 9000`). The meaning column is the comment above the setting in `settings.py`; the
measurements behind the defaults are in `bench/RESULTS.md`.

This file is generated: `.venv/bin/python docs/settings_reference.py > docs/configuration.md`.

The command line also reads two variables of its own: `REARVIEW_URL` (talk to a remote server instead of the data
directory) and `REARVIEW_TOKEN` (the API key it sends there, and the key `rearview mcp` acts with).
"""


def field_comments(model: type[BaseModel]) -> dict[str, str]:
    """The comment above each field of a settings class; a field with none shares the one of the field right above
    it (a group such as the two half-lives). Raises if a field has neither."""
    source = inspect.getsource(model)
    lines = source.splitlines()
    (cls,) = ast.parse(source).body
    assert isinstance(cls, ast.ClassDef)
    comments: dict[str, str] = {}
    previous: tuple[str, int] | None = None
    for statement in cls.body:
        if not isinstance(statement, ast.AnnAssign) or not isinstance(statement.target, ast.Name):
            continue
        name = statement.target.id
        info = model.model_fields.get(name)
        if info is None or isinstance(info.default, BaseModel):
            continue  # model_config, or a nested section (listed apart)
        above: list[str] = []
        row = statement.lineno - 2
        while row >= 0 and lines[row].strip().startswith("#"):
            above.insert(0, lines[row].strip().lstrip("#").strip())
            row -= 1
        if above:
            comments[name] = " ".join(above)
        elif previous is not None and previous[1] == statement.lineno - 1:
            comments[name] = GROUPED
        else:
            raise ValueError(f"{model.__name__}.{name}: no comment saying why")
        previous = (name, statement.end_lineno or statement.lineno)
    return comments


def default_text(value: object) -> str:
    if value is None:
        return "unset"
    if isinstance(value, Enum):
        value = value.value
    if isinstance(value, list | tuple):
        return ", ".join(str(v) for v in value) or "(none)"
    return str(value)


def rows(model: type[BaseModel], section: str) -> list[str]:
    comments = field_comments(model)
    out = []
    for name, info in model.model_fields.items():
        if isinstance(info.default, BaseModel):
            continue  # a nested section, listed apart
        default = info.get_default(call_default_factory=True)
        variable = PREFIX + (f"{section.upper()}__" if section else "") + name.upper()
        meaning = comments[name].replace("|", "\\|")
        out.append(f"| `{variable}` | `{default_text(default)}` | {meaning} |")
    return out


def reference() -> str:
    parts = [PREFACE]
    for section, title in SECTIONS.items():
        if section:
            model = type(Settings.model_fields[section].default)
            parts.append(f"## {title}\n")
            doc = model.__dict__.get("__doc__")  # its own, not BaseModel's
            if doc:
                parts.append(" ".join(doc.split()) + "\n")
        else:
            model = Settings
            parts.append(f"## {title}\n")
        parts.append("| variable | default | meaning |\n|---|---|---|\n" + "\n".join(rows(model, section)) + "\n")
    return "\n".join(parts)


if __name__ == "__main__":
    assert Path(settings.__file__).name == "settings.py"
    sys.stdout.write(reference())
