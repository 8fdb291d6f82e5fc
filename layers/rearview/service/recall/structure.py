"""The structure stage: whether a namespace's conversations have the shape that three refinements assume, measured
from the namespace itself (never from what a recall is judged by), and cached per namespace.

Keyword context (the turn before a turn, matched at `context_weight`) and session neighbours (the turns around a
hit) assume that the turns next to each other are one exchange: a question and its answer. That holds in a chat
whose speakers take turns in short sessions; it fails in long logs of short messages sent in bursts, where the turn
after a question is as often the asker's next message or another thread. Pseudo-relevance feedback assumes that the
first pass's best few memories say something about the topic; a namespace of messages of a few words gives it
"lol"s and "ok"s to move towards. So the stage measures, on a sample of the namespace's episodes:

- `reply_share`: of the turns that ask a question, the share the next turn of the session answers (said by
  someone else);
- `turn_words`: the median words of a turn (without a leading speaker label);
- `session_turns`: the size of the session an average turn is in;

and turns each refinement off where its assumption does not hold (`RecallParameters.structure_*`). A namespace with
too few sessioned episodes to tell keeps every refinement on: the defaults are what a small namespace gets.
"""

from __future__ import annotations

from rearview.service.recall.profile import refinements, short_turn_weights
from rearview.service.recall.state import Collaborators, RecallState


def structure(ctx: Collaborators, run: RecallState) -> None:
    """Which of keyword context, session neighbours and feedback this namespace's structure supports (with
    `structure_gates` on); the stages read `run.refinements`."""
    if not ctx.tuning.structure_gates:
        return
    with run.stage("structure") as st:
        profile = ctx.profiles.get(ctx.store, ctx.index, run.namespace, ctx.tuning.structure_sample)
        run.refinements = refinements(profile, ctx.tuning)
        run.weights = short_turn_weights(run.weights, profile, ctx.tuning)
        st.detail = {
            "profile": {k: round(v, 3) if isinstance(v, float) else v for k, v in profile.figures().items()},
            "context": run.refinements.context,
            "neighbours": run.refinements.neighbours,
            "feedback": run.refinements.feedback,
            "reason": run.refinements.reason,
            "weights": {"keyword": run.weights.keyword, "vector": run.weights.vector},
        }
