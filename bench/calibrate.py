"""Calibrate an embedder's cosine scale (`rearview.domain.embedding.CosineScale`) on a set used by no test.

`bench/data/calibration.json` holds two users (English, Chinese), each a namespace of 30 memories, 20 questions
each answered by one memory in the namespace's language and 10 in the other, 15 queries no memory answers
(greetings, thanks, chatter, general knowledge), and pairs of statements that say the same thing in other words
(`same`) or different things on one subject (`related`). For each embedder this prints:

1. **the anchors**: the median cosine of unrelated pairs (every two memories of a namespace), related pairs and
   same-statement pairs, per language, and the scale's anchors: the largest of each over the languages the model
   reads (a stricter threshold where one language sits higher: a wrong merge loses a memory, a missed one keeps
   two);
2. **the thresholds mapped**: the write path's and recall's cosine thresholds, stated on MiniLM's English scale
   (the reference), as this embedder's cosines, with the share of same pairs at or above the duplicate threshold
   and of related pairs above it;
3. **the relevance margin**: each answered question's margin (its memory's cosine above the query's background,
   `service/recall/background.py`) against each unanswered query's best margin in the namespace; the margin is the
   threshold with the best balanced accuracy (the mean of the two sides' shares right), over the languages the model
   reads (for the lexical hashing embedder, above every unanswered query's margin: its words speak for it); for a
   multilingual model, a second margin across scripts, from the questions asked in the other language against the
   unanswered queries in it.

    .venv/bin/python bench/calibrate.py [--embedder minilm --embedder e5 ...]

The figures go into each adapter's `scale` by hand, with this command beside them.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from itertools import combinations
from pathlib import Path
from typing import Any

import numpy as np

from metrics import format_table
from rearview.bootstrap import build_embedder
from rearview.domain.embedding import REFERENCE_ANCHORS, CosineScale
from rearview.ports import Embedder
from rearview.service.recall.background import Background, is_cjk_text
from rearview.settings import Settings, WriteTuning

DEFAULT_DATA = Path(__file__).resolve().parent / "data" / "calibration.json"
# The languages each model reads (hashing matches tokens in any script, across none).
READS: dict[str, tuple[str, ...]] = {
    "minilm": ("en",),
    "e5": ("en", "zh"),
    "bge-en": ("en",),
    "bge-zh": ("zh",),
    "hashing": ("en", "zh"),
}
MULTILINGUAL = frozenset({"e5"})
# A lexical model's cosine is shared words, which recall's word evidence weighs already: its margin only keeps its
# 3-gram noise out, at half again the best margin any unanswered query reached, and its anchors are the reference's
# (a near-duplicate is 0.92 of shared text).
LEXICAL = frozenset({"hashing"})
LEXICAL_HEADROOM = 1.5


def pair_cosines(embedder: Embedder, user: dict[str, Any]) -> dict[str, list[float]]:
    """The cosines of the user's pairs by kind: unrelated (every two memories), related, same."""
    memories = embedder.embed(list(user["memories"].values()))
    unrelated = [float(memories[i] @ memories[j]) for i, j in combinations(range(len(memories)), 2)]
    out: dict[str, list[float]] = {"unrelated": unrelated, "related": [], "same": []}
    for pair in user["pairs"]:
        a, b = embedder.embed([pair["a"], pair["b"]])
        out[pair["relation"]].append(float(a @ b))
    return out


def question_margins(
    embedder: Embedder, background: Background, user: dict[str, Any], other: dict[str, Any], multilingual: bool
) -> dict[str, list[float]]:
    """Answered questions' margins (their memory's, same language and other), unanswered queries' best margins."""
    ids = list(user["memories"])
    memories = embedder.embed([user["memories"][i] for i in ids])
    script = is_cjk_text(user["memories"][ids[0]])

    def margins_of(queries: Sequence[str]) -> np.ndarray:
        vectors = embedder.embed_queries(list(queries))
        rows = []
        for query, vector in zip(queries, vectors, strict=True):
            # As recall measures them: a pair across scripts centred on its scripts, for a model that reads both.
            backdrop = background.for_query(vector, is_cjk_text(query), across=multilingual)
            rows.append([backdrop.margin(float(m @ vector), script, m) for m in memories])
        return np.array(rows)

    out: dict[str, list[float]] = {}
    for key, name in (("questions", "answered"), ("questions_other_language", "answered, other language")):
        grid = margins_of([q["q"] for q in user[key]])
        out[name] = [float(grid[i, ids.index(q["a"])]) for i, q in enumerate(user[key])]
    out["unanswered"] = [float(v) for v in margins_of(user["unanswered"]).max(axis=1)]
    out["unanswered, other language"] = [float(v) for v in margins_of(other["unanswered"]).max(axis=1)]
    return out


def best_margin(positives: Sequence[float], negatives: Sequence[float]) -> tuple[float, float, float]:
    """The threshold with the best balanced accuracy (ties: the middle of the best run), and the two shares."""
    candidates = sorted({round(v, 3) for v in [*positives, *negatives]})
    scored = []
    for t in candidates:
        tpr = float(np.mean([p >= t for p in positives]))
        tnr = float(np.mean([n < t for n in negatives]))
        scored.append(((tpr + tnr) / 2, t, tpr, tnr))
    top = max(s[0] for s in scored)
    best = [s for s in scored if s[0] == top]
    _, t, tpr, tnr = best[len(best) // 2]
    return t, tpr, tnr


def calibrate(name: str, users: dict[str, Any]) -> dict[str, Any]:
    embedder = build_embedder(Settings(embedder=name))
    background = Background(embedder)
    pairs = {lang: pair_cosines(embedder, user) for lang, user in users.items()}
    reads = READS[name]
    anchors = tuple(
        max(float(np.median(pairs[lang][kind])) for lang in reads) for kind in ("unrelated", "related", "same")
    )
    if name in LEXICAL:
        # Two wordings of one statement are not near-duplicates of shared text: the thresholds stay as stated.
        anchors = REFERENCE_ANCHORS
    positives: list[float] = []
    negatives: list[float] = []
    across: tuple[list[float], list[float]] = ([], [])
    margins: dict[str, dict[str, list[float]]] = {}
    for lang in reads:
        other = users["zh" if lang == "en" else "en"]
        margins[lang] = found = question_margins(embedder, background, users[lang], other, name in MULTILINGUAL)
        positives += found["answered"]
        negatives += found["unanswered"]
        across[0].extend(found["answered, other language"])
        across[1].extend(found["unanswered, other language"])
    if name not in MULTILINGUAL:
        # A query in another script is measured against the same margin: it never meets its answer anyway.
        negatives += across[1]
    chosen, tpr, tnr = best_margin(positives, negatives)
    across_margin = best_margin(*across)[0] if name in MULTILINGUAL else None
    if name in LEXICAL:
        chosen = round(LEXICAL_HEADROOM * max(negatives), 3)
        tpr, tnr = float(np.mean([p >= chosen for p in positives])), 1.0
    return {
        "embedder": embedder.name,
        "pairs": {lang: {k: float(np.median(v)) for k, v in kinds.items()} for lang, kinds in pairs.items()},
        "pair_values": pairs,
        "anchors": anchors,
        "margins": margins,
        "margin": chosen,
        "across_margin": across_margin,
        "margin_tpr": tpr,
        "margin_tnr": tnr,
        "reads": reads,
    }


def report(results: dict[str, dict[str, Any]]) -> str:
    out: list[str] = []
    rows = []
    for name, r in results.items():
        for lang, medians in r["pairs"].items():
            rows.append([name, lang, medians["unrelated"], medians["related"], medians["same"], lang in r["reads"]])
    out.append(format_table(["embedder", "lang", "unrelated p50", "related p50", "same p50", "read"], rows,
                            title="== pair cosines (medians) =="))  # fmt: skip
    write = WriteTuning()
    rows = []
    for name, r in results.items():
        unrelated, related, same_anchor = r["anchors"]
        scale = CosineScale(unrelated, related, same_anchor, relevance_margin=r["margin"])
        dedup = scale.raw(write.dedup_threshold)
        same = [v for lang in r["reads"] for v in r["pair_values"][lang]["same"]]
        related = [v for lang in r["reads"] for v in r["pair_values"][lang]["related"]]
        rows.append(
            [name, *r["anchors"], dedup,
             float(np.mean([v >= dedup for v in same])), float(np.mean([v >= dedup for v in related]))]
        )  # fmt: skip
    out.append("")
    out.append(
        format_table(
            [
                "embedder",
                "unrelated",
                "related",
                "same",
                "dedup 0.92 ->",
                "same >= dedup",
                "related >= dedup",
            ],
            rows,
            title=f"== anchors (reference, MiniLM English: {REFERENCE_ANCHORS}) and the thresholds mapped ==",
        )  # fmt: skip
    )
    rows = []
    for name, r in results.items():
        for lang, found in r["margins"].items():
            rows.append(
                [name, lang, *(float(np.percentile(found[k], p)) for k, p in
                               (("answered", 10), ("answered", 50), ("answered, other language", 50),
                                ("unanswered", 50), ("unanswered", 90), ("unanswered, other language", 90)))]
            )  # fmt: skip
    out.append("")
    out.append(
        format_table(
            [
                "embedder",
                "lang",
                "answered p10",
                "answered p50",
                "other lang p50",
                "unanswered p50",
                "unanswered p90",
                "unanswered other p90",
            ],
            rows,
            title="== relevance margins (the memory's cosine above the query's background) ==",
        )  # fmt: skip
    )
    rows = [[name, r["margin"], r["margin_tpr"], r["margin_tnr"], r["across_margin"]] for name, r in results.items()]
    out.append("")
    out.append(format_table(["embedder", "relevance margin", "answered kept", "unanswered refused", "across scripts"],
                            rows,
                            title="== the relevance margin (best balanced accuracy) =="))  # fmt: skip
    return "\n".join(out)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--embedder", action="append", choices=sorted(READS), help="repeatable; default: all")
    parser.add_argument("--json-out", type=Path, default=None)
    args = parser.parse_args(argv)
    with args.data.open(encoding="utf-8") as f:
        users = json.load(f)["users"]
    results = {name: calibrate(name, users) for name in args.embedder or list(READS)}
    print(report(results))
    if args.json_out:
        args.json_out.write_text(json.dumps(results, indent=2), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
