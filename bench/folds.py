"""Conversation-level cross-validation of recall's defaults, for `bench/locomo.py --folds K`.

The conversations are dealt into K folds (conversation i into fold i mod K). For each fold, the choice between the
defaults and each variant (a setting changed, as in the ablations) is made on the other folds' conversations and
scored on the fold's own: a variant is chosen when it raises the tuning conversations' mean R@10 *and* raises more of
those conversations than it lowers (a change that helps the mean but hurts most conversations does not ship). Every
question is scored once, in the fold its conversation belongs to, so the cross-validated figure is the mean over all
questions of what the choices made without them scored.

Per-conversation spread: each variant's R@10 change against the defaults, conversation by conversation (how many
rise and fall, and the smallest, median and largest change).
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from metrics import format_table, mean

METRIC = "R@10"
# A change of a conversation's R@10 smaller than this counts as neither a rise nor a fall.
TIE = 0.0005


@dataclass(frozen=True)
class Row:
    """One question's metric under one variant, and the conversation it belongs to."""

    qid: str
    conv: str
    value: float


def fold_of(convs: Sequence[str], k: int) -> dict[str, int]:
    """Conversation -> fold: dealt round-robin in the order given."""
    return {conv: i % k for i, conv in enumerate(convs)}


def per_conversation(rows: Sequence[Row]) -> dict[str, float]:
    """The metric's mean per conversation."""
    by_conv: dict[str, list[float]] = {}
    for row in rows:
        by_conv.setdefault(row.conv, []).append(row.value)
    return {conv: mean(values) for conv, values in by_conv.items()}


def ships(defaults: Sequence[Row], variant: Sequence[Row], convs: set[str]) -> bool:
    """Whether `variant` beats the defaults on the conversations `convs`: a higher mean over their questions and
    more of them raised than lowered."""
    base = [r.value for r in defaults if r.conv in convs]
    other = [r.value for r in variant if r.conv in convs]
    if mean(other) <= mean(base):
        return False
    up, down = ups_and_downs(per_conversation([r for r in defaults if r.conv in convs]),
                              per_conversation([r for r in variant if r.conv in convs]))  # fmt: skip
    return up > down


def ups_and_downs(base: Mapping[str, float], other: Mapping[str, float]) -> tuple[int, int]:
    """How many of `base`'s conversations `other` raises and lowers by more than `TIE`."""
    deltas = [other[c] - base[c] for c in base]
    return sum(1 for d in deltas if d > TIE), sum(1 for d in deltas if d < -TIE)


@dataclass(frozen=True)
class FoldResult:
    fold: int
    held_out: tuple[str, ...]
    chosen: str
    tuned_on: float
    held_out_value: float
    defaults_held_out: float


def cross_validate(variants: Mapping[str, Sequence[Row]], convs: Sequence[str], k: int) -> dict[str, object]:
    """The cross-validated choice among all variants (the defaults first), and each variant's own yes/no decision,
    fold by fold. The first variant is the defaults."""
    names = list(variants)
    default_name = names[0]
    folds = fold_of(convs, k)
    joint: list[FoldResult] = []
    decisions: dict[str, list[bool]] = {name: [] for name in names[1:]}
    decided_rows: dict[str, list[float]] = {name: [] for name in names[1:]}
    joint_rows: list[float] = []
    for fold in range(k):
        held = {c for c, f in folds.items() if f == fold}
        tune = set(folds) - held
        best = default_name
        for name in names[1:]:
            shipped = ships(variants[default_name], variants[name], tune)
            decisions[name].append(shipped)
            source = variants[name] if shipped else variants[default_name]
            decided_rows[name] += [r.value for r in source if r.conv in held]
            if shipped and _mean_on(variants[name], tune) > _mean_on(variants[best], tune):
                best = name
        held_values = [r.value for r in variants[best] if r.conv in held]
        joint_rows += held_values
        joint.append(
            FoldResult(
                fold=fold,
                held_out=tuple(sorted(held)),
                chosen=best,
                tuned_on=_mean_on(variants[best], tune),
                held_out_value=mean(held_values),
                defaults_held_out=_mean_on(variants[default_name], held),
            )
        )
    return {
        "k": k,
        "defaults": mean([r.value for r in variants[default_name]]),
        "cross_validated": mean(joint_rows),
        "folds": joint,
        "decisions": {
            name: {"shipped_in": sum(d), "cross_validated": mean(decided_rows[name])} for name, d in decisions.items()
        },  # fmt: skip
    }


def _mean_on(rows: Sequence[Row], convs: set[str]) -> float:
    return mean([r.value for r in rows if r.conv in convs])


def spread(variants: Mapping[str, Sequence[Row]]) -> list[list[object]]:
    """Per variant: its mean, the change against the defaults, conversations raised / lowered, and the smallest,
    median and largest per-conversation change."""
    names = list(variants)
    base = per_conversation(variants[names[0]])
    out: list[list[object]] = []
    for name in names:
        rows = variants[name]
        conv = per_conversation(rows)
        deltas = [conv[c] - base[c] for c in base]
        up, down = ups_and_downs(base, conv)
        overall = mean([r.value for r in rows])
        defaults = mean([r.value for r in variants[names[0]]])
        out.append([name, overall, overall - defaults, up, down, min(deltas), statistics.median(deltas), max(deltas)])
    return out


def report(
    variants: Mapping[str, Sequence[Row]],
    convs: Sequence[str],
    k: int,
    baselines: Mapping[str, Sequence[Row]] | None = None,
) -> str:
    """The folds' tables: the joint choice fold by fold, each variant's decisions, the per-conversation spread, and
    the defaults (with the `baselines`) conversation by conversation."""
    cv = cross_validate(variants, convs, k)
    defaults_name = next(iter(variants))
    fold_rows: list[list[object]] = [
        [f"fold {f.fold + 1}", ", ".join(f.held_out), f.chosen, f.tuned_on, f.held_out_value, f.defaults_held_out]
        for f in cv["folds"]  # type: ignore[attr-defined]
    ]
    out = [
        format_table(
            ["fold", "held out", "chosen on the others", f"{METRIC} tuned", f"{METRIC} held out", "defaults held out"],
            fold_rows,
            title=(
                f"== {k}-fold cross-validation over conversations: {METRIC} defaults {cv['defaults']:.3f}, "
                f"cross-validated choice {cv['cross_validated']:.3f} =="
            ),
        ),
        "",
    ]
    decisions = cv["decisions"]
    assert isinstance(decisions, dict)
    out.append(
        format_table(
            ["variant (against the defaults)", "folds shipping it", f"{METRIC} cross-validated"],
            [[name, f"{d['shipped_in']} of {k}", d["cross_validated"]] for name, d in decisions.items()],
            title=f"== each variant decided alone, fold by fold ({defaults_name}: {cv['defaults']:.3f}) ==",
        )
    )
    out.append("")
    base = per_conversation(variants[defaults_name])
    out.append(
        format_table(
            ["variant", METRIC, f"d{METRIC}", "convs up", "convs down", "min d", "median d", "max d"],
            spread(variants),
            title=f"== per-conversation spread ({len(base)} conversations; up/down: change over {TIE}) ==",
        )
    )
    out.append("")
    others = {name: per_conversation(rows) for name, rows in (baselines or {}).items()}
    out.append(
        format_table(
            ["conversation", f"{METRIC} defaults", *others],
            [[conv, value, *(o.get(conv, float("nan")) for o in others.values())] for conv, value in base.items()],
            title="== the defaults (and the baselines), conversation by conversation ==",
        )
    )
    return "\n".join(out)
