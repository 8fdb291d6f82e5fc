"""What the structure stage measures on a benchmark's conversations, and the refinements it turns on.

Each conversation is profiled as its namespace would be (`rearview.service.recall.profile`): its oldest
`structure_sample` turns, written as `bench/locomo.py` writes them ("<speaker>: <text>", the speaker its entity, one
session per chat log). Read from the files, before the write path merges near-duplicates (a few in a hundred on
Chatlog), so a figure can differ from the stage's own in the last digit. No label of the gold file is read.

    .venv/bin/python bench/profiles.py --data ../shared/benchmarks/locomo
    .venv/bin/python bench/profiles.py --data .bench/chatlog
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from locomo import Turn, load_turns
from metrics import format_table
from rearview.domain.memory import Episode
from rearview.service.recall.parameters import RecallParameters
from rearview.service.recall.profile import profile_of, refinements


def episodes(turns: Sequence[Turn], sample: int) -> list[Episode]:
    """The conversation's oldest `sample` turns as the episodes the bench writes."""
    oldest = sorted(turns, key=lambda t: t.ts)[:sample]
    return [
        Episode(
            id=t.dia_id,
            namespace=f"bench:{t.conv}",
            content=f"{t.speaker}: {t.text}",
            occurred_at=t.ts,
            created_at=t.ts,
            entities=[t.speaker],
            session_id=f"{t.conv}-s{t.session}",
        )
        for t in oldest
    ]


def rows(data: Path, tuning: RecallParameters) -> list[list[object]]:
    """One row a conversation: its profile and the refinements the stage turns on."""
    out: list[list[object]] = []
    for conv, turns in load_turns(data / "locomo10_turns.jsonl").items():
        profile = profile_of(episodes(turns, tuning.structure_sample))
        chosen = refinements(profile, tuning)
        out.append(
            [
                conv,
                profile.sampled,
                profile.sessions,
                round(profile.session_turns),
                profile.turn_words,
                profile.questions,
                profile.reply_share,
                "on" if chosen.context else "off",
                "on" if chosen.feedback else "off",
            ]
        )
    return out


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, required=True, help="directory with locomo10_turns.jsonl")
    args = parser.parse_args(argv)
    tuning = RecallParameters()
    headers = ["conversation", "sampled", "sessions", "session turns", "median words", "questions", "reply share"]
    print(
        format_table(
            [*headers, "context, neighbours", "feedback"],
            rows(args.data, tuning),
            title=(
                f"== structure profiles (sample {tuning.structure_sample}; exchanges: reply share >= "
                f"{tuning.structure_min_reply_share} and session turns <= {tuning.structure_max_session_turns}; "
                f"feedback: median words >= {tuning.structure_min_turn_words}) =="
            ),
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
