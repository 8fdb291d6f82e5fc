"""Whether a change of habit can be anchored by meaning: the cosines of a change clause against the memory it ends,
against clauses that use the same change words about something else, and of the value words alone (alternatives of
one attribute against words of different attributes), per embedder.

A change point (`service/hindsight/change_points.py`) ends an active memory only when the change clause shares words
with it; "use Celsius instead" shares none with "prefers temperature in Fahrenheit". This prints what a meaning
anchor would have to separate; no threshold is chosen here. The pairs are written for this question, not taken from
any scenario set.

    .venv/bin/python bench/change_anchors.py                 # e5 and MiniLM
    .venv/bin/python bench/change_anchors.py --embedders e5
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence

from metrics import format_table

# (change clause, the memory it would end, whether it does end it)
SENTENCES: list[tuple[str, str, bool]] = [
    ("use Celsius instead from now on", "The user prefers temperature in Fahrenheit", True),
    ("Email me the daily summary instead", "The user's preference: the daily summary on Slack", True),
    ("he has switched to black coffee", "The user regularly: green tea again, no sugar", True),
    ("改成发邮件", "用户希望提醒发短信", True),
    ("afternoons from now on", "The user prefers meetings in the morning", True),
    ("use the new office printer instead", "The user prefers temperature in Fahrenheit", False),
    ("switch the dashboard to dark mode instead", "The user's preference: the daily summary on Slack", False),
    ("we switched to a new vet for the dog", "The user regularly: green tea again, no sugar", False),
    ("改成明天下午开会", "用户希望提醒发短信", False),
    ("from now on book aisle seats", "The user prefers meetings in the morning", False),
    ("take the train instead", "The user prefers temperature in Fahrenheit", False),
]
# (value word, value word, whether they are values of one attribute)
WORDS: list[tuple[str, str, bool]] = [
    ("Celsius", "Fahrenheit", True),
    ("tea", "coffee", True),
    ("Slack", "email", True),
    ("morning", "afternoon", True),
    ("Python", "TypeScript", True),
    ("短信", "邮件", True),
    ("奶茶", "咖啡", True),
    ("gym", "swimming", True),
    ("evening", "dawn", True),
    ("Celsius", "email", False),
    ("tea", "Berlin", False),
    ("coffee", "summary", False),
    ("dark mode", "train", False),
    ("短信", "会议", False),
]


def cosines(embedder_name: str, pairs: Sequence[tuple[str, str, bool]]) -> list[float]:
    from rearview.bootstrap import build_embedder
    from rearview.settings import Settings

    embedder = build_embedder(Settings(embedder=embedder_name))
    vectors = embedder.embed([text for a, b, _ in pairs for text in (a, b)])
    return [float(vectors[2 * i] @ vectors[2 * i + 1]) for i in range(len(pairs))]


def report(name: str, pairs: Sequence[tuple[str, str, bool]], scores: list[float]) -> str:
    rows = [[f"{s:.3f}", "yes" if ends else "no", a, b] for (a, b, ends), s in zip(pairs, scores, strict=True)]
    yes = [s for (_, _, ends), s in zip(pairs, scores, strict=True) if ends]
    no = [s for (_, _, ends), s in zip(pairs, scores, strict=True) if not ends]
    table = format_table(["cosine", "same attribute", "a", "b"], rows, title=name)
    gap = min(yes) - max(no)
    verdict = "separated" if gap > 0 else "overlapping"
    return f"{table}\nsame attribute {min(yes):.3f}-{max(yes):.3f}, other {min(no):.3f}-{max(no):.3f}: {verdict}"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--embedders", nargs="+", default=["e5", "minilm"])
    args = parser.parse_args(argv)
    for name in args.embedders:
        for label, pairs in (("change clause / memory", SENTENCES), ("value word / value word", WORDS)):
            print(report(f"== {name}: {label} ==", pairs, cosines(name, pairs)))
            print()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
