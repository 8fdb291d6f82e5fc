"""How many lines of hand-written word lists, regular expressions and statement templates the hindsight code holds:
this tree's and a baseline commit's, counted the same way, module by module.

A line counts when it is part of
- a regular expression: the pattern of a `re.compile` / `re.search` / `re.match` / `re.fullmatch` / `re.sub` /
  `re.finditer` / `re.findall` / `re.split` call, or a string constant a pattern is built from;
- a word list: a literal dict, list, tuple, set or frozenset holding at least three strings, or one string of at
  least three words split into a list;
- a template: an f-string or a string with `{}` fields, outside a log call or an exception.
Each line is counted once. The modules are hindsight's (`service/hindsight/`), the contradiction judge, the voice
reader, and the inducers' prompt and conversation (`adapters/*induc*`).

    .venv/bin/python bench/word_lists.py [--baseline c7d40cd|none]
"""

from __future__ import annotations

import argparse
import ast
import tempfile
from collections.abc import Iterable
from pathlib import Path

from baseline import extract_layers
from metrics import format_table

REPO = Path(__file__).resolve().parents[1]
_RE_CALLS = frozenset({"compile", "search", "match", "fullmatch", "sub", "finditer", "findall", "split"})
_QUIET_CALLS = frozenset({"debug", "info", "warning", "error", "exception", "log"})


def modules(library: Path) -> list[Path]:
    """The hindsight modules of a library (its `rearview` package's parent directory)."""
    root = library / "rearview"
    found = sorted((root / "service" / "hindsight").glob("*.py"))
    found += [p for p in (root / "service" / "contradiction.py", root / "service" / "voice.py") if p.exists()]
    found += sorted(p for p in (root / "adapters").glob("*.py") if "induc" in p.name)
    return [p for p in found if p.name != "__init__.py"]


def _lines(node: ast.AST) -> set[int]:
    start = int(getattr(node, "lineno", 0) or 0)
    end = int(getattr(node, "end_lineno", 0) or start)
    return set(range(start, end + 1))


def _strings(node: ast.AST) -> int:
    return sum(1 for n in ast.walk(node) if isinstance(n, ast.Constant) and isinstance(n.value, str))


def _is_template(node: ast.AST) -> bool:
    if isinstance(node, ast.JoinedStr):
        return True
    return isinstance(node, ast.Constant) and isinstance(node.value, str) and "{}" in node.value


def _regex_call(node: ast.Call, kinds: dict[str, set[int]], quiet: set[int]) -> set[str]:
    """A call's lines by kind (a `re` call's pattern, a log call's message); the names its pattern is built from."""
    assert isinstance(node.func, ast.Attribute)
    owner = node.func.value
    if node.func.attr in _QUIET_CALLS:
        quiet |= _lines(node)
    if isinstance(owner, ast.Name) and owner.id == "re" and node.func.attr in _RE_CALLS and node.args:
        kinds["regex"] |= _lines(node.args[0])
        return {n.id for n in ast.walk(node.args[0]) if isinstance(n, ast.Name)}
    return set()


def counted_lines(source: str) -> dict[str, set[int]]:
    """The lines of each kind in one module's source."""
    tree = ast.parse(source)
    kinds: dict[str, set[int]] = {"regex": set(), "list": set(), "template": set()}
    quiet: set[int] = set()
    pattern_names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            pattern_names |= _regex_call(node, kinds, quiet)
        if isinstance(node, ast.Raise):
            quiet |= _lines(node)
        if isinstance(node, ast.Dict | ast.List | ast.Tuple | ast.Set) and _strings(node) >= 3:
            kinds["list"] |= _lines(node)
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "split"
            and isinstance(node.func.value, ast.Constant)
            and len(str(node.func.value.value).split()) >= 3
        ):
            kinds["list"] |= _lines(node)
        if _is_template(node):
            kinds["template"] |= _lines(node)
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id in pattern_names for t in node.targets
        ):
            kinds["regex"] |= _lines(node.value)
    kinds["template"] -= quiet
    return kinds


def count(files: Iterable[Path], library: Path) -> dict[str, dict[str, int]]:
    """Per module (relative to the library): lines of regex, list, template and all three (each line once)."""
    out: dict[str, dict[str, int]] = {}
    for path in files:
        kinds = counted_lines(path.read_text(encoding="utf-8"))
        every = set().union(*kinds.values())
        name = str(path.relative_to(library / "rearview"))
        out[name] = {kind: len(lines) for kind, lines in kinds.items()} | {"total": len(every)}
    return out


def report(tree: dict[str, dict[str, int]], base: dict[str, dict[str, int]] | None, ref: str) -> str:
    rows = []
    for name in sorted(set(tree) | set(base or {})):
        now = tree.get(name, {})
        before = (base or {}).get(name, {})
        rows.append([name, before.get("total", "-") if base is not None else "", now.get("total", "-"),
                     now.get("regex", 0), now.get("list", 0), now.get("template", 0)])  # fmt: skip
    total_now = sum(m["total"] for m in tree.values())
    total_before = sum(m["total"] for m in (base or {}).values())
    rows.append(["all", total_before if base is not None else "", total_now, "", "", ""])
    return format_table(
        ["module", f"lines at {ref}", "lines now", "regex", "lists", "templates"],
        rows,
        title="== hand-written word lists, regular expressions and templates in hindsight's modules ==",
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--baseline", default="c7d40cd", help="a git ref counted the same way (none: skip)")
    args = parser.parse_args(argv)
    library = REPO / "layers"
    tree = count(modules(library), library)
    base = None
    if args.baseline != "none":
        with tempfile.TemporaryDirectory(prefix="rearview-lists-") as tmp:
            old = extract_layers(args.baseline, Path(tmp))
            base = count(modules(old), old)
    print(report(tree, base, args.baseline))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
