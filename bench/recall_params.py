"""`--param NAME=VALUE` for the benches that run recall: one of recall's values, a setting or a constant of
`RecallParameters` (service/recall/parameters.py), changed for the whole run. The constants are not settings, so
no environment variable reaches them; this is how a benchmark measures another value of one."""

from __future__ import annotations

import argparse
from collections.abc import Sequence

from rearview.service.recall.parameters import RecallParameters
from rearview.settings import Settings


def add_param_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--param",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="run recall with this value of a RecallParameters field, a setting or a constant (repeatable)",
    )


def with_params(settings: Settings, params: Sequence[str]) -> Settings:
    """`settings` with recall's parameters overridden by `params` ("name=value"): the settings' own values (from
    the environment too) and the constants, then the overrides, validated as `RecallParameters` validates them."""
    if not params:
        return settings
    changes: dict[str, str] = {}
    for param in params:
        name, sep, value = param.partition("=")
        if not sep or name not in RecallParameters.model_fields:
            raise SystemExit(f"--param {param!r}: expected NAME=VALUE with NAME a field of RecallParameters")
        changes[name] = value
    recall = RecallParameters(**{**settings.recall.model_dump(), **changes})
    return settings.model_copy(update={"recall": recall})
