"""No module of rearview imports itself back, through any chain of imports (lazy and type-checking ones included).

`make lint`'s acyclic_siblings contract finds cycles between the modules and subpackages of each package; a module
that imports its own package's `__init__` while that `__init__` imports it escapes it, and is caught here.
"""

from __future__ import annotations

import grimp
import pytest

pytestmark = pytest.mark.unit


def test_no_module_imports_itself_back() -> None:
    graph = grimp.build_graph("rearview")
    cycles = []
    for module in sorted(graph.modules):
        for imported in sorted(graph.find_modules_directly_imported_by(module)):
            back = graph.find_shortest_chain(importer=imported, imported=module)
            if back is not None:
                cycles.append(" -> ".join((module, *back)))
    assert not cycles, "import cycles:\n" + "\n".join(cycles)
