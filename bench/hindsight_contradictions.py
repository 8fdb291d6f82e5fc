"""Contradiction and supplement in free text, through the write path: for each pair of `hindsight_contradiction_pairs`
(English and Chinese, some sharing a `dimension`), the earlier memory is written as a semantic memory, then the
later one, in a namespace of its own; what became of the earlier one is read back. Reports, per language and in
all: contradictions caught (the earlier memory superseded), false supersedes (an earlier memory superseded by one
that confirms, refines or is unrelated to it), and confirmations and refinements merged into the earlier memory
(`merged`, its history kept). With `--baseline REF` the same pairs run first on that commit's library.

    .venv/bin/python bench/hindsight_contradictions.py [--embedder minilm|hashing] [--baseline c7d40cd|none]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from baseline import extract_layers
from hindsight_contradiction_pairs import PAIRS, Pair
from metrics import format_table
from rearview.bootstrap import build
from rearview.domain.write import MemoryWrite
from rearview.settings import Settings


def run_pairs(pairs: Sequence[Pair], data_dir: Path, embedder: str) -> list[dict[str, Any]]:
    """Each pair written in its own namespace; what the second write did to the first memory."""
    services = build(Settings(data_dir=data_dir, embedder=embedder))
    rows = []
    for i, pair in enumerate(pairs):
        namespace = f"pairs:p{i}"
        first = services.writer.write(
            namespace, MemoryWrite(layer="semantic", content=pair.old, kind=pair.kind, dimension=pair.dimension)
        )
        second = services.writer.write(
            namespace, MemoryWrite(layer="semantic", content=pair.new, kind=pair.kind, dimension=pair.dimension)
        )
        old = services.store.get(namespace, first.id)
        rows.append(
            {
                "verdict": pair.verdict,
                "language": pair.language,
                "superseded": getattr(old, "status", None) == "superseded",
                "merged": second.status == "merged" and second.merged_into == first.id,
            }
        )
    services.close()
    return rows


def figures(rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for language in ("en", "zh", "all"):
        part = [r for r in rows if language in ("all", r["language"])]
        contradictions = [r for r in part if r["verdict"] == "contradicts"]
        others = [r for r in part if r["verdict"] != "contradicts"]
        supplements = [r for r in part if r["verdict"] in ("confirms", "refines")]
        out[language] = {
            "caught": sum(r["superseded"] for r in contradictions),
            "contradictions": len(contradictions),
            "false_supersedes": sum(r["superseded"] for r in others),
            "others": len(others),
            "merged": sum(r["merged"] for r in supplements),
            "supplements": len(supplements),
        }
    return out


def report(results: dict[str, dict[str, Any]]) -> str:
    rows = []
    for code, by_language in results.items():
        for language, f in by_language.items():
            rows.append([
                code, language, f"{f['caught']}/{f['contradictions']}",
                f"{f['caught'] / f['contradictions']:.3f}" if f["contradictions"] else "-",
                f"{f['false_supersedes']}/{f['others']}", f"{f['merged']}/{f['supplements']}",
            ])  # fmt: skip
    return format_table(
        ["code", "language", "contradictions caught", "share", "false supersedes", "confirms/refines merged"],
        rows,
        title="== free-text contradiction and supplement through the write path ==",
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--embedder", choices=("minilm", "hashing"), default="minilm")
    parser.add_argument("--baseline", default="c7d40cd", help="a git ref run first on the same pairs (none: skip)")
    parser.add_argument("--json", type=Path, default=None, help="write this run's figures here")
    args = parser.parse_args(argv)
    results: dict[str, dict[str, Any]] = {}
    with tempfile.TemporaryDirectory(prefix="rearview-pairs-") as tmp:
        if args.baseline != "none":
            library = extract_layers(args.baseline, Path(tmp) / "baseline")
            out = Path(tmp) / "baseline.json"
            env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(library), str(Path(__file__).resolve().parent)]))
            command = [sys.executable, str(Path(__file__).resolve()), "--baseline", "none", "--json", str(out)]
            subprocess.run([*command, "--embedder", args.embedder], env=env, check=True, stdout=subprocess.DEVNULL)
            results[f"baseline {args.baseline}"] = json.loads(out.read_text())
        results["this tree"] = figures(run_pairs(PAIRS, Path(tmp) / "tree", args.embedder))
    if args.json is not None:
        args.json.write_text(json.dumps(results["this tree"], indent=2))
    print(report(results))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
