"""The baseline Summarizer, in plain Python: the cluster's most central statement, trimmed to a fact's length."""

from __future__ import annotations

from collections.abc import Sequence

from rearview.domain.limits import MAX_FACT_CHARS


class ExtractiveSummarizer:
    """The cluster's most central statement (consolidation passes the contents most central first)."""

    def summarize(self, contents: Sequence[str]) -> str:
        text = contents[0].strip()
        return text if len(text) <= MAX_FACT_CHARS else text[: MAX_FACT_CHARS - 1].rstrip() + "…"
