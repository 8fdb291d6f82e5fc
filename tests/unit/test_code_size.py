"""The library stays in small rooms: no module over 700 lines, no function over 80 (its decorators and docstring
included). A module that grows past the limit is several jobs waiting to be split; a function, a list of steps
waiting to be named."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import rearview

pytestmark = pytest.mark.unit

MAX_MODULE_LINES = 700
MAX_FUNCTION_LINES = 80
LIBRARY = Path(rearview.__file__).parent


def _modules() -> list[Path]:
    return sorted(LIBRARY.rglob("*.py"))


def _function_lengths(path: Path) -> list[tuple[str, int]]:
    lengths = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            first = min([node.lineno, *(decorator.lineno for decorator in node.decorator_list)])
            assert node.end_lineno is not None
            lengths.append((f"{node.name} (line {node.lineno})", node.end_lineno - first + 1))
    return lengths


def test_the_library_is_where_the_limits_look() -> None:
    assert len(_modules()) > 50


def test_no_module_is_longer_than_700_lines() -> None:
    long = {
        str(path.relative_to(LIBRARY)): lines
        for path in _modules()
        if (lines := len(path.read_text(encoding="utf-8").splitlines())) > MAX_MODULE_LINES
    }
    assert not long, f"modules over {MAX_MODULE_LINES} lines: {long}"


def test_no_function_is_longer_than_80_lines() -> None:
    long = [
        f"{path.relative_to(LIBRARY)}: {name}: {lines} lines"
        for path in _modules()
        for name, lines in _function_lengths(path)
        if lines > MAX_FUNCTION_LINES
    ]
    assert not long, f"functions over {MAX_FUNCTION_LINES} lines:\n" + "\n".join(long)
