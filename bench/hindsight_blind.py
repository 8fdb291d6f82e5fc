"""The blind hindsight suite: does consolidation learn what agents' logs mean, and nothing else?

Runs the 65 scenarios of `hindsight_blind_scenarios.py` (English and Chinese, written from the public API alone and
never tuned on) and the 32 pairs of `hindsight_blind_contradictions.py` through the public Python API
(`rearview.bootstrap.build`, the write path, `consolidator.consolidate`, the listing), each in a fresh namespace,
with a ManualClock so that every time is exact. Reports, per code (this tree, and `--baseline` in the same run):
- precision: the active induced memories that are right (they state something a correct system holds);
- recall: the expected memories an active memory states, overall, by kind and by language;
- lessons that say what worked (of the lessons whose failures ended in a success);
- changed habits right: the new one active, the old one superseded and no longer active;
- negatives: negative scenarios where anything was induced, and forbidden memories held anywhere (target 0);
- the contradiction set: contradictions caught (old superseded, new active), false supersedes (a confirming,
  refining or unrelated statement that superseded the held memory; target 0), and right by label;
- the run's seconds, model tokens and inducer fallbacks.

    .venv/bin/python bench/hindsight_blind.py                                  # this tree, rule inducer, e5
    .venv/bin/python bench/hindsight_blind.py --baseline c7d40cd               # and another commit, same run
    .venv/bin/python bench/hindsight_blind.py --only 'zh-lesson-*' --verbose   # what was held, and why it failed
    .venv/bin/python bench/hindsight_blind.py --inducer openai --openai-base-url http://127.0.0.1:8080/v1 \\
        --openai-model smollm2

Each code runs in its own process with its library first on PYTHONPATH (`git archive` of the baseline, see
baseline.py); both run this tree's suite and harness. Consolidation runs with the background worker off: it runs
after each phase of a scenario, when the harness asks.
"""

from __future__ import annotations

import argparse
import fnmatch
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from baseline import extract_layers
from hindsight_blind_contradictions import CONTRADICTIONS
from hindsight_blind_scenarios import SCENARIOS
from metrics import format_table

BENCH = Path(__file__).resolve().parent
REPO = BENCH.parent
TARGETS = (
    "targets (issue 34, offline default path): recall >= 0.75, precision >= 0.9, negatives 0, lessons that say what "
    "worked >= 0.9, changed habits >= 0.9, contradictions caught >= 0.9, false supersedes 0"
)


# --- the worker: one code's run -----------------------------------------------------------------------------------


def selected(patterns: Sequence[str] | None, ident: str) -> bool:
    return not patterns or any(fnmatch.fnmatchcase(ident, p) for p in patterns)


def worker(args: argparse.Namespace) -> dict[str, Any]:
    """Run the suite on the library this process imports; the figures as JSON-ready data."""
    import rearview
    from hindsight_blind_run import as_json, run_pair, run_scenario
    from rearview.bootstrap import build
    from rearview.clock import ManualClock
    from rearview.settings import HindsightSettings, Settings

    extra: dict[str, Any] = {}
    if args.inducer == "openai":
        openai = {"base_url": args.openai_base_url, "model": args.openai_model, "api_key": args.openai_api_key}
        extra = {"inducer": "openai", "openai": {**openai, "timeout_seconds": args.openai_timeout}}
    scenarios = [s for s in SCENARIOS if selected(args.only, s.id)]
    pairs = [c for c in CONTRADICTIONS if selected(args.only, c.id)]
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="rearview-blind-") as tmp:
        clock = ManualClock()
        settings = Settings(
            data_dir=Path(tmp), embedder=args.embedder, hindsight=HindsightSettings(worker=False), **extra
        )
        services = build(settings, clock=clock)
        try:
            done = [
                as_json(_logged(run_scenario(services, clock, s), i, len(scenarios))) for i, s in enumerate(scenarios)
            ]
            pair_results = [as_json(_logged(run_pair(services, clock, c), i, len(pairs))) for i, c in enumerate(pairs)]
        finally:
            services.close()
    return {
        "library": str(Path(rearview.__file__).parent),
        "inducer": args.inducer,
        "embedder": args.embedder,
        "seconds": time.perf_counter() - started,
        "scenarios": done,
        "pairs": pair_results,
    }


def _logged(result: Any, index: int, total: int) -> Any:
    verdict = "error" if result.error else ("right" if result.right else "wrong")
    print(f"  [{index + 1}/{total}] {result.id}: {verdict} ({result.seconds:.1f} s)", file=sys.stderr, flush=True)
    return result


# --- the parent: each code in its own process ---------------------------------------------------------------------


def forwarded(args: argparse.Namespace) -> list[str]:
    """The options a worker needs, as given to the parent."""
    out = ["--inducer", args.inducer, "--embedder", args.embedder]
    out += ["--openai-base-url", args.openai_base_url, "--openai-model", args.openai_model]
    out += ["--openai-api-key", args.openai_api_key, "--openai-timeout", str(args.openai_timeout)]
    return out + (["--only", *args.only] if args.only else [])


def run_code(label: str, library: Path, args: argparse.Namespace, tmp: Path) -> dict[str, Any]:
    out = tmp / f"{label.replace(' ', '-')}.json"
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(library), str(BENCH), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    print(f"{label} ({library}):", file=sys.stderr, flush=True)
    command = [sys.executable, str(Path(__file__).resolve()), "--worker", "--out", str(out), *forwarded(args)]
    subprocess.run(command, env=env, check=True)
    result: dict[str, Any] = json.loads(out.read_text(encoding="utf-8"))
    return result


# --- the figures --------------------------------------------------------------------------------------------------


def share(hits: int, total: int) -> str:
    return f"{hits / total:.3f} ({hits}/{total})" if total else "-"


def _count(items: Sequence[dict[str, Any]], test: Callable[[dict[str, Any]], bool]) -> int:
    return sum(1 for item in items if test(item))


def _wants(
    scenarios: Sequence[dict[str, Any]], role: str, kind: str | None = None, language: str | None = None
) -> list[dict[str, Any]]:
    """The scenarios' wants of one role (and kind, and scenario language, when given)."""
    return [
        w
        for s in scenarios
        if language in (None, s["language"])
        for w in s["wants"]
        if w["role"] == role and kind in (None, w["kind"])
    ]


def scenario_rows(run: dict[str, Any]) -> list[tuple[str, str]]:
    scenarios = run["scenarios"]
    induced = [m for s in scenarios for m in s["memories"] if m["status"] == "active"]
    rows = [("precision (induced memories right)", share(_count(induced, lambda m: bool(m["right"])), len(induced)))]
    expected = _wants(scenarios, "active")
    rows.append(("recall (expected memories held)", share(_count(expected, lambda w: w["ok"]), len(expected))))
    for kind in ("preference", "fact", "lesson"):
        part = _wants(scenarios, "active", kind=kind)
        rows.append((f"  recall, {kind}", share(_count(part, lambda w: w["ok"]), len(part))))
    for language in ("en", "zh"):
        part = _wants(scenarios, "active", language=language)
        rows.append((f"  recall, {language}", share(_count(part, lambda w: w["ok"]), len(part))))
    fixes = [w for w in expected if w["says_fix"] is not None]
    rows.append(("lessons that say what worked", share(_count(fixes, lambda w: bool(w["says_fix"])), len(fixes))))
    changes = [s for s in scenarios if s["category"] == "change"]
    changed = _count(changes, lambda s: all(w["ok"] for w in s["wants"] if w["role"] in ("active", "superseded")))
    rows.append(("changed habits right (new active, old superseded)", share(changed, len(changes))))
    olds = _wants(scenarios, "superseded")
    rows.append(("  old one superseded and not active", share(_count(olds, lambda w: w["ok"]), len(olds))))
    negatives = [s for s in scenarios if s["category"] == "negative"]
    wrong = _count(negatives, lambda s: any(m["right"] is False for m in s["memories"]))
    rows.append(("negative scenarios with a memory induced", share(wrong, len(negatives))))
    absent = _wants(scenarios, "absent")
    rows.append(("forbidden memories held (any scenario)", share(_count(absent, lambda w: not w["ok"]), len(absent))))
    rows.append(("scenarios entirely right", share(_count(scenarios, lambda s: s["right"]), len(scenarios))))
    return rows


def pair_rows(run: dict[str, Any]) -> list[tuple[str, str]]:
    pairs = run["pairs"]
    contradicts = [p for p in pairs if p["label"] == "contradicts"]
    others = [p for p in pairs if p["label"] != "contradicts"]
    caught = _count(contradicts, lambda p: p["caught"])
    false = _count(others, lambda p: p["false_supersede"])
    rows = [
        ("contradictions caught (old superseded, new active)", share(caught, len(contradicts))),
        ("false supersedes (confirms, refines, unrelated)", share(false, len(others))),
    ]
    for label in ("contradicts", "confirms", "refines", "unrelated"):
        part = [p for p in pairs if p["label"] == label]
        rows.append((f"  right, {label}", share(_count(part, lambda p: p["right"]), len(part))))
    for language in ("en", "zh"):
        part = [p for p in pairs if p["language"] == language]
        rows.append((f"  right, {language}", share(_count(part, lambda p: p["right"]), len(part))))
    return rows


def cost_rows(run: dict[str, Any]) -> list[tuple[str, str]]:
    results = [*run["scenarios"], *run["pairs"]]
    fallbacks = sum(len(s["fallbacks"]) for s in run["scenarios"])
    return [
        ("seconds (the whole run)", f"{run['seconds']:.1f}"),
        ("model tokens", str(sum(r["tokens"] for r in results))),
        ("runs stated by the fallback", str(fallbacks)),
        ("scenarios or pairs that raised", str(_count(results, lambda r: r["error"] is not None))),
    ]


def report(runs: dict[str, dict[str, Any]]) -> str:
    first = next(iter(runs.values()))
    n_s, n_p = len(first["scenarios"]), len(first["pairs"])
    title = (
        f"== blind hindsight suite: {n_s} scenarios, {n_p} contradiction pairs; "
        f"inducer {first['inducer']}, embedder {first['embedder']} =="
    )
    columns = {label: [*scenario_rows(r), *pair_rows(r), *cost_rows(r)] for label, r in runs.items()}
    names = [name for name, _ in next(iter(columns.values()))]
    rows = [[name, *(dict(c)[name] for c in columns.values())] for name in names]
    libraries = [f"{label}: {run['library']}" for label, run in runs.items()]
    return "\n".join([format_table(["metric", *runs], rows, title=title), TARGETS, *libraries])


def _held_lines(memories: Sequence[dict[str, Any]], marked: bool) -> list[str]:
    out = []
    for m in memories:
        mark = {True: "right", False: "WRONG", None: "-"}[m["right"]] if marked else ""
        out.append(f"    held  {m['status']:<10} {m['kind']:<10} {mark:<5} {m['content']}")
        out += [f"          from: {text}" for text in m["sources"]]
    return out


def _verdict(result: dict[str, Any]) -> str:
    return "error" if result["error"] else ("RIGHT" if result["right"] else "wrong")


def details(label: str, run: dict[str, Any]) -> str:
    """What each scenario and pair left held (with the episodes it came from), and why what failed failed."""
    out = [f"\n== {label}: per scenario ({run['library']}) =="]
    for s in run["scenarios"]:
        out.append(f"\n[{_verdict(s)}] {s['id']} ({s['category']}, {s['language']}, {s['seconds']:.1f} s)")
        out += [f"    error: {s['error']}"] if s["error"] else []
        out += _held_lines(s["memories"], marked=True)
        for w in s["wants"]:
            if w["why"] or (not w["ok"] and w["role"] != "optional"):
                out.append(f"    want  {'ok' if w['ok'] else 'MISSED'}: {w['label']}\n          {w['why']}")
    out.append(f"\n== {label}: contradiction pairs ==")
    for p in run["pairs"]:
        flags = " FALSE SUPERSEDE" if p["false_supersede"] else ""
        meanings = f"held meaning active {p['held_meaning_active']}, later {p['later_meaning_active']}"
        out.append(
            f"\n[{_verdict(p)}] {p['id']} ({p['label']}, {p['mode']}): held {p['held_status']}, {meanings}{flags}"
        )
        out += [f"    error: {p['error']}"] if p["error"] else []
        out += _held_lines(p["memories"], marked=False)
    return "\n".join(out)


# --- the command line -----------------------------------------------------------------------------------------------


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--baseline", default=None, help="a git ref whose library runs the same suite, same run")
    parser.add_argument("--inducer", choices=("rules", "openai"), default="rules")
    parser.add_argument("--embedder", choices=("e5", "minilm", "hashing"), default="e5")
    parser.add_argument("--openai-base-url", default="http://127.0.0.1:11434/v1")
    parser.add_argument("--openai-model", default="qwen2.5:7b-instruct")
    parser.add_argument("--openai-api-key", default="bench")
    parser.add_argument("--openai-timeout", type=float, default=60.0, help="seconds per model answer")
    parser.add_argument("--only", nargs="+", default=None, help="scenario or pair ids (shell patterns: 'zh-*')")
    parser.add_argument("--verbose", action="store_true", help="what was held per scenario, and why it failed")
    parser.add_argument("--json", type=Path, default=None, help="also write every result to this file")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--out", type=Path, default=None, help=argparse.SUPPRESS)
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    if args.worker:
        args.out.write_text(json.dumps(worker(args), ensure_ascii=False), encoding="utf-8")
        return 0
    load = os.getloadavg()[0]
    runs: dict[str, dict[str, Any]] = {}
    with tempfile.TemporaryDirectory(prefix="rearview-blind-parent-") as tmp_name:
        tmp = Path(tmp_name)
        runs["this tree"] = run_code("this tree", REPO / "layers", args, tmp)
        if args.baseline:
            library = extract_layers(args.baseline, tmp / "baseline")
            runs[f"baseline {args.baseline}"] = run_code(f"baseline {args.baseline}", library, args, tmp)
    print(report(runs))
    print(f"load average (1 min) before / after: {load:.1f} / {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    if args.verbose:
        for label, run in runs.items():
            print(details(label, run))
    if args.json is not None:
        args.json.write_text(json.dumps(runs, ensure_ascii=False, indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
