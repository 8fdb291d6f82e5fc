"""The Lambda layer: the `rearview` package and its runtime dependencies, for python3.13 on arm64.

It is not built by CDK (asset bundling would need Docker): `make layer` pip-installs the project's wheel with
the `aws` extra into `build/layer/python` from PyPI wheels only, for the functions' platform (manylinux
aarch64, CPython 3.13). Lambda puts `/opt/python` on `sys.path`, hence the `python/` directory."""

from __future__ import annotations

from pathlib import Path

from aws_cdk import RemovalPolicy
from aws_cdk import aws_lambda as lambda_
from constructs import Construct

RUNTIME = lambda_.Runtime.PYTHON_3_13
# numpy and pydantic-core ship compiled code: the layer's wheels and the functions' architecture must agree
# (Makefile: LAYER_PLATFORMS, manylinux aarch64 by default; x86_64 for an emulator on an Intel machine).
ARCHITECTURES: dict[str, lambda_.Architecture] = {
    "arm64": lambda_.Architecture.ARM_64,
    "x86_64": lambda_.Architecture.X86_64,
}


class LayerNotBuilt(FileNotFoundError):
    """The layer directory is missing: run `make layer` before synthesising."""


class RearviewLayer(Construct):
    """A layer version from a pre-built directory (`<layer_dir>/python/...`)."""

    def __init__(
        self, scope: Construct, construct_id: str, *, layer_dir: Path, architecture: lambda_.Architecture
    ) -> None:
        super().__init__(scope, construct_id)
        if not (layer_dir / "python").is_dir():
            raise LayerNotBuilt(f"{layer_dir / 'python'} does not exist: run `make layer` first")
        self.layer = lambda_.LayerVersion(
            self,
            "Layer",
            code=lambda_.Code.from_asset(str(layer_dir)),
            compatible_runtimes=[RUNTIME],
            compatible_architectures=[architecture],
            description="rearview library with pydantic, numpy, boto3, opensearch-py, Powertools",
            # Functions deployed earlier keep pointing at their version; old versions go when nothing uses
            # them.
            removal_policy=RemovalPolicy.DESTROY,
        )
