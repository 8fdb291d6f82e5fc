"""Python's cyclic garbage collector, kept off the hot paths: paused while a change set is applied, and the heap
alive at the end of start-up (modules, classes, pydantic's schemas, the services just built) frozen once per process.

Why. A full collection walks every tracked object. After `build()` the start-up heap alone is ~55,000 objects
with ~300,000 references: walking it took ~45 ms a collection on the 2-core machine the benchmarks run on. A bulk
load triggers a full collection every 10,000 rows or so (the caller's batch of models lives long enough to reach
the oldest generation), and a request that triggers one waits for it. Frozen, those objects are never walked
again (`gc.freeze`); objects made later are collected as before.

What freezing costs: an object frozen that later becomes cyclic garbage is never freed (reference counting still
frees every acyclic one). The start-up heap lives as long as the process. The heap is frozen as it is, without a
collection first: after `build()` one found 20 garbage objects and took ~28 ms, which a Lambda cold start would
pay. A host that embeds Rearview and does not want its own heap frozen turns `freeze_start_up_heap` off.
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager

_lock = threading.Lock()
_frozen = False


def freeze_start_up_heap() -> bool:
    """Freeze every object alive, the first time it is called in this process; True if it froze now. Later calls do
    nothing: what is built after start-up stays collectable."""
    global _frozen
    with _lock:
        if _frozen:
            return False
        _frozen = True
    gc.freeze()
    return True


@contextmanager
def paused() -> Iterator[None]:
    """No automatic collection inside the block (if the collector was on, it is on again after). For a block that
    makes many objects and no reference cycles: a bulk change set's rows are tuples, strings and numbers. The
    objects it allocates still count towards the next collection, which then runs once, outside the block.
    Process-wide, as the collector is: another thread's block, or a host that switches the collector off meanwhile,
    may find it on again when the first block ends, which costs a collection, nothing more."""
    enabled = gc.isenabled()
    if enabled:
        gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()
