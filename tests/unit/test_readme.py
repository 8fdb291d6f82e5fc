"""The README's Python example runs as written, and does what its comments say."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from support.modules import REPO

pytestmark = pytest.mark.unit


def test_the_python_example_learns_the_preference_and_recalls_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    (example,) = re.findall(r"```python\n(.*?)```", readme, flags=re.DOTALL)
    assert len([line for line in example.splitlines() if line and not line.startswith("from ")]) <= 5
    monkeypatch.chdir(tmp_path)
    for name in [name for name in os.environ if name.startswith("REARVIEW_")]:
        monkeypatch.delenv(name)

    exec(compile(example, "README.md", "exec"), {})

    printed = capsys.readouterr().out
    assert "The user prefers replies in Chinese" in printed
