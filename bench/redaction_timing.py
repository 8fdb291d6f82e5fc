"""Redaction's time on adversarial input: every rule on the texts built to make it work hard
(bench/redaction_adversarial.py), and the whole of `redact_text` against a baseline commit's, in the same run.

    .venv/bin/python bench/redaction_timing.py [--baseline main] [--size 65536] [--top 15]

Three tables:
1. per rule: the slowest of its adversarial texts at `--size` characters (the rule alone, on the normalised text),
   and how much longer a text four times as long takes (about 4 for linear time, 16 for quadratic);
2. `redact_text` over every adversarial text at a quarter of `--size`: this tree (the best of 3) and the baseline
   (once, each text capped at `--cap` seconds: its rules backtrack);
3. the `--top` texts slowest in the baseline at a quarter size, again at `--size`: both, and the ratio.
The baseline runs in a subprocess with its own `layers` (git archive of `--baseline`) on the path.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from baseline import extract_layers
from metrics import format_table
from rearview.service.redaction import redact_text
from rearview.service.redaction.credentials import credential_screen
from rearview.service.redaction.normalise import normalise
from rearview.service.redaction.personal import PERSONAL_SCREEN
from rearview.service.redaction.rules import PatternRule, Subject
from redaction_adversarial import Text, corpus

# Times redact_text on each text of a JSON list, each capped by a timer (Python's regex engine checks for signals as
# it backtracks, so the cap interrupts it); prints the milliseconds (the cap's for one that ran over).
_RUNNER = """
import json, signal, sys, time
from rearview.service.redaction import redact_text

class Late(Exception):
    pass

def late(signum, frame):
    raise Late

signal.signal(signal.SIGALRM, late)
texts, cap = json.load(open(sys.argv[1])), float(sys.argv[2])
redact_text("warm up 4111 1111 1111 1111 password is hunter22")
out = []
for text in texts:
    start = time.perf_counter()
    signal.setitimer(signal.ITIMER_REAL, cap)
    try:
        redact_text(text)
        ms = (time.perf_counter() - start) * 1000
    except Late:
        ms = cap * 1000
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
    out.append(ms)
print(json.dumps(out))
"""


def rules() -> list[tuple[str, PatternRule]]:
    """Every rule redaction runs, named by position and kind (a kind may have several rules)."""
    every = [*credential_screen().rules, *PERSONAL_SCREEN.rules]
    return [(f"{i:03d} {rule.kind}", rule) for i, rule in enumerate(every)]


def _ms(call: Callable[[], object], repeat: int = 1) -> float:
    """Milliseconds of `call`, the best of `repeat` (the machine is shared: the best is the work, the rest noise)."""
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        call()
        best = min(best, time.perf_counter() - start)
    return best * 1000


def rule_table(named: list[tuple[str, PatternRule]], size: int) -> tuple[str, float]:
    rows: list[list[object]] = []
    worst_overall = 0.0
    for name, rule in named:
        worst, worst_shape, ratio = 0.0, "", 0.0
        for text in corpus({name: rule.keywords}, size):
            if text.rule != name:
                continue
            full = Subject(normalise(text.text).text)
            quarter = Subject(normalise(text.text[: size // 4]).text)
            ms = _ms(lambda t=full, r=rule: list(r.findings(t)), 5)  # type: ignore[misc]
            if ms > worst:
                small = max(_ms(lambda t=quarter, r=rule: list(r.findings(t)), 5), 1e-3)  # type: ignore[misc]
                worst, worst_shape, ratio = ms, text.shape, ms / small
        worst_overall = max(worst_overall, worst)
        rows.append([name, len(rule.keywords), worst_shape, worst, ratio])
    table = format_table(
        ["rule", "keywords", "slowest shape", f"ms at {size // 1024} KiB", "x for 4x the text"],
        rows,
        f"Each rule alone on its adversarial texts ({size // 1024} KiB, the slowest shape)",
    )
    return table, worst_overall


def baseline_times(layers: Path, texts: list[str], cap: float) -> list[float]:
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as handle:
        json.dump(texts, handle)
    env = {**os.environ, "PYTHONPATH": str(layers)}
    try:
        done = subprocess.run(
            [sys.executable, "-c", _RUNNER, handle.name, str(cap)], env=env, capture_output=True, text=True, check=True
        )
    finally:
        os.unlink(handle.name)
    return list(json.loads(done.stdout.strip().splitlines()[-1]))


def unique_texts(named: list[tuple[str, PatternRule]], size: int) -> list[Text]:
    seen: set[str] = set()
    out: list[Text] = []
    for text in corpus({name: rule.keywords for name, rule in named}, size):
        if text.text not in seen:
            seen.add(text.text)
            out.append(text)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--baseline", default="main", help="the commit to compare with (default: main)")
    parser.add_argument("--size", type=int, default=64 * 1024, help="characters per text (default 64 KiB)")
    parser.add_argument("--top", type=int, default=15, help="baseline's slowest texts to time at full size")
    parser.add_argument("--cap", type=float, default=2.0, help="seconds a baseline text may take at quarter size")
    args = parser.parse_args(argv)
    named = rules()
    table, worst = rule_table(named, args.size)
    print(table)
    print(f"\nslowest rule on any of its texts: {worst:.2f} ms at {args.size // 1024} KiB\n")

    redact_text("warm up: 4111 1111 1111 1111, password is hunter22, sk_live_4eC39HqLyjWDarjtT1zdp7dc")
    quarter = unique_texts(named, args.size // 4)
    ours = [_ms(lambda t=t.text: redact_text(t), 3) for t in quarter]  # type: ignore[misc]
    with tempfile.TemporaryDirectory() as tmp:
        layers = extract_layers(args.baseline, Path(tmp))
        theirs = baseline_times(layers, [t.text for t in quarter], args.cap)
        rows: list[list[object]] = [
            ["texts", len(quarter), len(quarter)],
            ["max ms", max(ours), max(theirs)],
            ["total s", sum(ours) / 1000, sum(theirs) / 1000],
            [f"texts over {args.cap:g} s (capped)", 0, sum(ms >= args.cap * 1000 for ms in theirs)],
        ]
        print(format_table(["redact_text", "this tree", args.baseline], rows,
                           f"Every adversarial text at {args.size // 4096} KiB, same run"))  # fmt: skip
        slowest = sorted(range(len(quarter)), key=lambda i: theirs[i], reverse=True)[: args.top]
        full = [corpus_text(quarter[i], args.size, named) for i in slowest]
        their_full = baseline_times(layers, full, cap=60.0)
    our_full = [_ms(lambda t=t: redact_text(t), 3) for t in full]  # type: ignore[misc]
    top_rows = [
        [quarter[i].rule, quarter[i].shape, mine, theirs_ms, theirs_ms / max(mine, 1e-3)]
        for i, mine, theirs_ms in zip(slowest, our_full, their_full, strict=True)
    ]
    print()
    print(format_table(["rule", "shape", "this tree ms", f"{args.baseline} ms", "ratio"], top_rows,
                       f"The baseline's slowest texts at {args.size // 1024} KiB"))  # fmt: skip
    return 0


def corpus_text(text: Text, size: int, named: list[tuple[str, PatternRule]]) -> str:
    """The same shape for the same rule at `size` characters."""
    keywords = {name: rule.keywords for name, rule in named if name == text.rule}
    for candidate in corpus(keywords, size):
        if (candidate.rule, candidate.keyword, candidate.shape) == (text.rule, text.keyword, text.shape):
            return candidate.text
    raise LookupError(text)


if __name__ == "__main__":
    raise SystemExit(main())
