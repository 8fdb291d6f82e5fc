"""Infra tests: the CDK app's package on sys.path, and jsii's Node-version banner silenced (it would print on
every import of aws_cdk on this machine's Node 20)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

INFRA_DIR = Path(__file__).resolve().parents[2] / "infra"
if str(INFRA_DIR) not in sys.path:
    sys.path.insert(0, str(INFRA_DIR))
os.environ.setdefault("JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION", "20")
