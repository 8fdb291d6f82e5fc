"""The README's Python example runs as written, and does what its comments say."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from support.modules import REPO

pytestmark = pytest.mark.unit


def python_example(heading: str) -> str:
    """The one Python block of the README's section under `heading`."""
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    section = readme.split(heading, 1)[1].split("\n## ", 1)[0]
    (example,) = re.findall(r"```python\n(.*?)```", section, flags=re.DOTALL)
    return str(example)


def test_the_python_example_learns_the_preference_and_recalls_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    example = python_example("## Use it from Python")
    assert len([line for line in example.splitlines() if line and not line.startswith("from ")]) <= 5
    monkeypatch.chdir(tmp_path)
    for name in [name for name in os.environ if name.startswith("REARVIEW_")]:
        monkeypatch.delenv(name)

    exec(compile(example, "README.md", "exec"), {})

    printed = capsys.readouterr().out
    # What was learned comes first; the three requests it was learned from fold under it.
    assert printed.startswith("['The user prefers replies in Chinese'")


@pytest.mark.slow  # a live server in a subprocess
def test_the_python_client_example_runs_against_a_live_server(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from rearview.api.local_server import LocalServer
    from rearview.bootstrap import build
    from rearview.settings import Settings

    example = python_example("## Clients")
    assert len([line for line in example.splitlines() if line and not line.startswith("from ")]) <= 5
    # The default embedder (offline MiniLM), as `make run` serves: it knows a seat is where one sits.
    services = build(Settings(data_dir=tmp_path / "data"))
    with LocalServer(services.settings, services, host="127.0.0.1", port=0) as server:
        exec(compile(example.replace("http://127.0.0.1:8765", server.url), "README.md", "exec"), {})
    services.close()

    assert "The user prefers window seats" in capsys.readouterr().out
