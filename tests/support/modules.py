"""Loading a module from its file: the Lambda handlers under functions/ and the scripts under bench/ are files, not
an installed package."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

REPO = Path(__file__).resolve().parents[2]


def load_module(relative_path: str, name: str) -> ModuleType:
    """Import `REPO/relative_path` as module `name` (registered in sys.modules, so dataclasses and pickling see
    it), afresh on every call."""
    spec = importlib.util.spec_from_file_location(name, REPO / relative_path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module
