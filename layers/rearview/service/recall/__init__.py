"""Recall as a pipeline of stages over one state: `pipeline` runs them in order; `query`, `candidates`, `ranking` and
`results` hold the stages; `fusion` and `scoring` the arithmetic they use; `state` what they share."""

from rearview.service.recall.pipeline import RecallService

__all__ = ["RecallService"]
