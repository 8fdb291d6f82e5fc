"""Redaction: detection recall on a labelled corpus of secrets and personal numbers (bench/redaction_corpus.py:
synthetic values, 54 types, and the 6 forms issue 40 found missed), sentences that must stay unchanged (the
over-redactions it found), and false positives on LoCoMo's 5,882 conversation turns (text with no secret in it),
for Rearview's detector and, in the same run, the libraries it was compared with where they are installed.

An item counts as found when no 8 characters in a row of its value (all of it, if shorter) survive in the text the
detector leaves; a LoCoMo turn counts as a false positive when the detector changes it at all.

    .venv/bin/python bench/redaction.py --data ../shared/benchmarks/locomo [--compare] [--show N]

`--screen` adds Rearview's findings with every pattern rule run (the reference the rule screen must equal; both as
spans replaced by "[X]", so the columns compare exactly) and times find_secrets both ways in the same run, on the
turns, the labelled corpus and 2,000 ids of the shape every write carries (`e100000` ...).

`--compare` also runs detect-secrets alone, presidio-analyzer's pattern recognizers (no NLP engine: its spaCy
models are not on PyPI), scrubadub and datafog, each if importable (they are not project dependencies; install them
into a scratch environment with the project to compare).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import unicodedata
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable
from pathlib import Path

from metrics import format_table
from rearview.service.redaction import find_secrets, redact_text
from rearview.service.redaction.normalise import normalise
from redaction_corpus import Item, clean_corpus, corpus, hardening_corpus

Detector = Callable[[str], str]  # text -> the text as the detector leaves it
WINDOW = 8


def leaked(value: str, output: str) -> bool:
    """True if 8 characters in a row of `value` (normalised, as a reader would read them) survive in `output`."""
    plain, seen = normalise(value).text, normalise(output).text
    width = min(WINDOW, len(plain))
    return any(plain[i : i + width] in seen for i in range(len(plain) - width + 1))


def ours(text: str) -> str:
    return redact_text(text).text


def ours_every_rule(text: str) -> str:
    """Rearview's findings with every pattern rule run (no screen): the reference the screen must equal."""
    return _spans_removed(text, ((f.start, f.end) for f in find_secrets(text, screened=False)))


def ours_spans(text: str) -> str:
    return _spans_removed(text, ((f.start, f.end) for f in find_secrets(text)))


def screen_table(texts: dict[str, list[str]], repeat: int = 3) -> str:
    """Microseconds per text of find_secrets with and without the screen (alternating, best of `repeat`), and the
    texts whose findings differ between the two (must be 0)."""
    rows: list[list[object]] = []
    for name, group in texts.items():
        best = {True: float("inf"), False: float("inf")}
        for _ in range(repeat):
            for screened in (False, True):
                start = time.perf_counter()
                for text in group:
                    find_secrets(text, screened)
                best[screened] = min(best[screened], (time.perf_counter() - start) * 1e6 / len(group))
        differ = sum(find_secrets(t) != find_secrets(t, screened=False) for t in group)
        rows.append([name, len(group), best[False], best[True], best[False] / best[True], differ])
    headers = ["texts", "n", "every rule us/text", "screened us/text", "speed-up", "findings differ"]
    return format_table(headers, rows, "find_secrets per text, without and with the screen (same run)")


def _spans_removed(text: str, spans: Iterable[tuple[int, int]]) -> str:
    out, position = [], 0
    for start, end in sorted(spans):
        if start >= position:
            out.append(text[position:start] + "[X]")
            position = end
    return "".join(out) + text[position:]


def detect_secrets_alone() -> Detector | None:
    try:
        from detect_secrets.core.scan import scan_line
        from detect_secrets.settings import default_settings
    except ImportError:
        return None

    def detect(text: str) -> str:
        with default_settings():
            found: list[str] = []
            for line in text.splitlines() or [text]:
                # Ad hoc scans report every word to the entropy plugins; keep the plugins that name a secret type.
                found += [s.secret_value or "" for s in scan_line(line) if "High Entropy" not in s.type]
        for value in sorted(found, key=len, reverse=True):
            if value:
                text = text.replace(value, "[X]")
        return text

    return detect


def presidio_patterns() -> Detector | None:
    try:
        from presidio_analyzer import RecognizerRegistry
    except ImportError:
        return None
    registry = RecognizerRegistry()
    registry.load_predefined_recognizers()
    recognizers = [r for r in registry.recognizers if hasattr(r, "patterns") and r.patterns]

    def detect(text: str) -> str:
        spans = []
        for recognizer in recognizers:
            for result in recognizer.analyze(text, entities=recognizer.supported_entities, nlp_artifacts=None) or []:
                if result.score >= 0.5:
                    spans.append((result.start, result.end))
        return _spans_removed(text, spans)

    return detect


def scrubadub_default() -> Detector | None:
    try:
        import scrubadub
    except ImportError:
        return None
    return lambda text: str(scrubadub.clean(text))


def datafog_regex() -> Detector | None:
    try:
        import datafog
    except ImportError:
        return None

    def detect(text: str) -> str:
        result = datafog.redact(text)
        return str(getattr(result, "redacted_text", result))

    return detect


def recall_table(detectors: dict[str, Detector], items: list[Item], extra: list[Item]) -> tuple[str, str]:
    """Recall per family on `items` (the labelled corpus), then on `extra` (issue 40's forms), and per type."""
    found: dict[str, Counter[str]] = {name: Counter() for name in detectors}
    totals: Counter[str] = Counter()
    families: dict[str, str] = {}
    millis: dict[str, float] = {}
    for name, detect in detectors.items():
        start = time.perf_counter()
        for item in [*items, *extra]:
            if not leaked(item.value, detect(item.text)):
                found[name][item.kind] += 1
        millis[name] = (time.perf_counter() - start) * 1000 / (len(items) + len(extra))
    for item in [*items, *extra]:
        totals[item.kind] += 1
        families[item.kind] = item.family
    names = list(detectors)
    rows: list[list[object]] = []
    base = list(dict.fromkeys(item.kind for item in items))
    for family in ("secret", "pii"):
        kinds = [k for k in base if families[k] == family]
        n = sum(totals[k] for k in kinds)
        rows.append(
            [f"{family} ({len(kinds)} types, {n} items)", *(sum(found[d][k] for k in kinds) / n for d in names)]
        )
    rows.append(
        [f"all ({len(base)} types, {len(items)} items)", *(sum(found[d][k] for k in base) / len(items) for d in names)]
    )
    forms = list(dict.fromkeys(item.kind for item in extra))
    rows.append(
        [f"issue 40 forms ({len(forms)} types, {len(extra)} items)",
         *(sum(found[d][k] for k in forms) / max(1, len(extra)) for d in names)]
    )  # fmt: skip
    rows.append(["ms per item", *(millis[d] for d in names)])
    summary = format_table(["recall", *names], rows, "Detection recall on the labelled corpus")
    per_type = [[kind, totals[kind], *(f"{found[d][kind]}/{totals[kind]}" for d in names)] for kind in totals]
    detail = format_table(["type", "items", *names], per_type, "Found per type")
    return summary, detail


def clean_table(detectors: dict[str, Detector], items: list[Item]) -> str:
    """Sentences that must come back unchanged: how many each detector changes, per label."""
    kinds = list(dict.fromkeys(item.kind for item in items))
    rows = [
        [kind, sum(i.kind == kind for i in items),
         *(sum(detect(i.text) != i.text for i in items if i.kind == kind) for detect in detectors.values())]
        for kind in kinds
    ]  # fmt: skip
    return format_table(["sentences", "n", *detectors], rows, "Sentences changed that must stay (over-redaction)")


def locomo_turns(data: Path) -> list[str]:
    with (data / "locomo10_turns.jsonl").open(encoding="utf-8") as lines:
        return [json.loads(line)["text"] for line in lines if line.strip()]


def false_positive_table(detectors: dict[str, Detector], turns: list[str], show: int) -> str:
    rows: list[list[object]] = []
    for name, detect in detectors.items():
        changed = [(turn, out) for turn in turns if (out := detect(turn)) != turn]
        kinds = Counter(part.split("]")[0] for _, out in changed for part in out.split("[REDACTED:")[1:])
        rows.append([name, len(turns), len(changed), len(changed) / len(turns), dict(kinds) or "-"])
        for turn, out in changed[:show]:
            print(f"  {name}: {turn!r}\n    -> {out!r}", file=sys.stderr)
    return format_table(["detector", "turns", "changed", "rate", "kinds"], rows, "False positives on LoCoMo's turns")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument(
        "--data", type=Path, default=Path(__file__).resolve().parents[2] / "shared" / "benchmarks" / "locomo"
    )
    parser.add_argument("--compare", action="store_true", help="also run the other libraries, where installed")
    parser.add_argument("--show", type=int, default=0, help="print this many changed LoCoMo turns per detector")
    parser.add_argument(
        "--screen", action="store_true", help="also run every rule unscreened, and time find_secrets both ways"
    )
    args = parser.parse_args(argv)
    detectors: dict[str, Detector] = {"rearview": ours}
    if args.screen:
        detectors["rearview spans"] = ours_spans
        detectors["rearview spans, every rule"] = ours_every_rule
    if args.compare:
        for name, make in (
            ("detect-secrets", detect_secrets_alone),
            ("presidio (patterns)", presidio_patterns),
            ("scrubadub", scrubadub_default),
            ("datafog", datafog_regex),
        ):
            detector = make()
            if detector is None:
                print(f"{name}: not installed, left out", file=sys.stderr)
            else:
                detectors[name] = detector
    items, extra = corpus(), hardening_corpus()
    summary, detail = recall_table(detectors, items, extra)
    print(summary)
    print()
    print(detail)
    print()
    print(clean_table(detectors, clean_corpus()))
    print()
    turns = locomo_turns(args.data)
    print(false_positive_table(detectors, turns, args.show))
    if args.screen:
        print()
        # The ids a write carries (checked as verbatim fields: every write has one, never seen before).
        ids = [f"e{n}" for n in range(100_000, 102_000)]
        print(screen_table({"LoCoMo turns": turns, "labelled corpus": [item.text for item in items], "ids": ids}))
    missed = defaultdict(list)
    for item in [*items, *extra]:
        if leaked(item.value, ours(item.text)):
            missed[item.kind].append(unicodedata.normalize("NFC", item.text)[:100])
    if missed:
        print("\nMissed by rearview:", json.dumps(missed, ensure_ascii=False, indent=1), file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
