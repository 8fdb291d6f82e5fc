"""The CDK app: `python infra/app.py` (or `make synth`, or `cdk synth` from infra/) writes the CloudFormation
template to `cdk.out`.

Settings come from CDK context (`-c rearview:embeddingDim=1024`; every field of `RearviewProps`), the stack
name from `rearview:stackName` (default `Rearview`). No AWS credentials are needed: the stack is
environment-agnostic. cdk-nag's AwsSolutions and Serverless packs run on every synthesis; `make synth-check` (infra/
synth_check.py) also runs cfn-lint over the templates of every variant."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

# Run as a script from anywhere: make the sibling package importable without installing it, and the library's
# dependency-free route table (`rearview.api.routes`) with it, from this checkout.
_INFRA_DIR = Path(__file__).resolve().parent
sys.path[:0] = [str(_INFRA_DIR), str(_INFRA_DIR.parent / "layers")]

import aws_cdk as cdk  # noqa: E402

from rearview_infra.edge import EdgeWebAclStack  # noqa: E402
from rearview_infra.nag import add_checks  # noqa: E402
from rearview_infra.stack import RearviewProps, RearviewStack  # noqa: E402


def main(argv: list[str] | None = None) -> None:
    """Synthesise the Rearview stack into `cdk.out` (or where the CDK CLI asks, through CDK_OUTDIR).

    `-c key=value` (repeatable) sets context as the CDK CLI's option does; `--outdir` overrides `cdk.out`.
    """
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-c", "--context", action="append", default=[], metavar="KEY=VALUE")
    parser.add_argument("--outdir", default=os.environ.get("CDK_OUTDIR", "cdk.out"))
    args = parser.parse_args(argv)
    context = dict(item.split("=", 1) for item in args.context)
    app = cdk.App(outdir=args.outdir, context=context or None)
    props = RearviewProps.from_context(app.node.try_get_context)
    name = app.node.try_get_context("rearview:stackName") or "Rearview"
    RearviewStack(app, name, props=props)
    if str(app.node.try_get_context("rearview:wafWebAclStack") or "").lower() in ("1", "true", "yes", "on"):
        # The web ACL alone in us-east-1, for a stack elsewhere (its WebAclArn output -> rearview:wafWebAclArn).
        EdgeWebAclStack(app, f"{name}EdgeWaf", rate_limit=props.waf_rate_limit)
    cdk.Tags.of(app).add("project", "rearview")
    # cdk-nag: an unsuppressed AwsSolutions or Serverless finding fails synthesis (rearview_infra/nag.py).
    add_checks(app)
    app.synth()


if __name__ == "__main__":
    main()
