"""`make synth-check`: synthesise every variant of the stack, fail on any cdk-nag finding (AwsSolutions and Serverless
packs) that rearview_infra/nag.py does not accept with its reason, then run cfn-lint over the templates.

CI-ready: no AWS account, no network, no Docker. The layer is a placeholder directory (the template does not depend on
its content, only its asset hash does); `make synth` synthesises with the real one.

cfn-lint checks left out, each with its reason:
- W3005 (a DependsOn already implied by a reference): the CDK adds the role's DependsOn to every function next to the
  GetAtt of its ARN, and the index custom resource depends on its function's whole construct so that the role's
  policy exists before CloudFormation invokes it. Redundant, never wrong.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
from pathlib import Path

_INFRA_DIR = Path(__file__).resolve().parent
sys.path[:0] = [str(_INFRA_DIR), str(_INFRA_DIR.parent / "layers")]

import aws_cdk as cdk  # noqa: E402

from rearview_infra.nag import add_checks  # noqa: E402
from rearview_infra.stack import RearviewProps, RearviewStack  # noqa: E402

# The deployments worth checking apart: the default, with a customer-managed key, the managed-domain flavour, the
# one without a search cluster (the cheapest floor), and with CloudFront and its WAF in front of the API.
VARIANTS: dict[str, dict[str, str]] = {
    "default": {},
    "kms": {"rearview:kmsKey": "true", "rearview:alarmEmail": "ops@example.com"},
    "domain": {"rearview:search": "domain", "rearview:retainData": "false", "rearview:reservedConcurrency": "none"},
    "table": {"rearview:search": "table", "rearview:snapStart": "none"},
    "waf": {"rearview:waf": "true", "rearview:wafRateLimit": "1000"},
}
CFN_LINT_IGNORED = ("W3005",)


def nag_findings(context: dict[str, str], outdir: Path, layer_dir: Path) -> tuple[list[str], Path]:
    """The unaccepted cdk-nag findings of one variant, and its template."""
    app = cdk.App(outdir=str(outdir), context=context)
    props = RearviewProps.from_context(app.node.try_get_context, layer_dir=layer_dir)
    stack = RearviewStack(app, "Rearview", props=props)
    add_checks(app)
    assembly = app.synth()
    artifact = assembly.get_stack_artifact(stack.artifact_id)
    findings = [
        f"{message.id}: {message.entry.data}"
        for message in artifact.messages
        if str(message.level).upper().endswith("ERROR")
    ]
    return findings, outdir / artifact.template_file


def main() -> int:
    failed = False
    templates: list[Path] = []
    with tempfile.TemporaryDirectory() as scratch:
        layer_dir = Path(scratch) / "layer"
        (layer_dir / "python").mkdir(parents=True)
        for name, context in VARIANTS.items():
            findings, template = nag_findings(context, Path("build/synth-check") / name, layer_dir)
            templates.append(template)
            print(f"cdk-nag {name}: {len(findings)} unaccepted finding(s)")
            for finding in findings:
                print("  " + finding)
            failed |= bool(findings)
    lint = [
        str(Path(sys.executable).parent / "cfn-lint"),
        "--ignore-checks",
        *CFN_LINT_IGNORED,
        "--",
        *map(str, templates),
    ]
    result = subprocess.run(lint, check=False)
    print(f"cfn-lint: {'clean' if result.returncode == 0 else 'findings above'} ({len(templates)} templates)")
    return 1 if failed or result.returncode != 0 else 0


if __name__ == "__main__":
    sys.exit(main())
