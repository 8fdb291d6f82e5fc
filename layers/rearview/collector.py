"""Python's cyclic garbage collector, kept off the hot paths: paused while a change set is applied, and the heap
alive at the end of start-up (modules, classes, pydantic's schemas, the services just built) frozen once per process.

Why. A full collection walks every tracked object. After `build()` the start-up heap alone is ~55,000 objects
with ~300,000 references, and walking it took ~45 ms a collection on the 2-core machine the benchmarks run on; a
bulk load triggers a full collection every 10,000 rows or so (the caller's batch of models survives long enough
to be promoted), and a request that triggers one waits for it. Frozen, those objects are never walked again
(`gc.freeze`); objects made later are collected as before.

What freezing costs: an object frozen that later becomes cyclic garbage is never freed (plain reference counting
still frees every acyclic one). The start-up heap lives as long as the process, so this is a few leftovers at
most; a host that embeds Rearview and does not want its own heap frozen turns `freeze_start_up_heap` off.
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager

_lock = threading.Lock()
_frozen = False


def freeze_start_up_heap() -> bool:
    """Collect, then freeze every object alive, the first time it is called in this process; True if it froze now.
    Later calls do nothing: what is built after start-up stays collectable."""
    global _frozen
    with _lock:
        if _frozen:
            return False
        _frozen = True
    gc.collect()
    gc.freeze()
    return True


@contextmanager
def paused() -> Iterator[None]:
    """No automatic collection inside the block (if the collector was on, it is on again after). For a block that
    makes many objects and no reference cycles: a bulk change set's rows are tuples, strings and numbers. The
    objects it allocates still count towards the next collection, which then runs once, outside the block."""
    enabled = gc.isenabled()
    if enabled:
        gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()
