"""Infra tests: the CDK app's package (and the route table it reads) on sys.path, and jsii's Node-version banner
silenced (it would print on every import of aws_cdk on this machine's Node 20)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
# As infra/app.py does: the CDK app's package, and the library's route table it imports, from this checkout.
for directory in (REPO_ROOT / "layers", REPO_ROOT / "infra"):
    if str(directory) not in sys.path:
        sys.path.insert(0, str(directory))
os.environ.setdefault("JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION", "20")
