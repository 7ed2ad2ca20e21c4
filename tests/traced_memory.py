"""Memory a test's own allocations hold, measured the same however much the run holds."""

from __future__ import annotations

import gc
import tracemalloc
from collections.abc import Callable, Iterator
from contextlib import contextmanager


@contextmanager
def tracing() -> Iterator[Callable[[], int]]:
    """Trace the allocations made from now on; gives ``traced()``, the bytes they still hold
    after a full collection.

    What was alive before (the modules, what earlier tests left) is frozen out of the
    collector meanwhile: a collection then walks what the test made, not the whole heap of
    a worker that ran thousands of tests, which made each collection, and the test, many
    times slower in a full run. What the test makes is collected as before.
    """
    gc.freeze()
    tracemalloc.start()
    try:
        yield traced
    finally:
        tracemalloc.stop()
        gc.unfreeze()


def traced() -> int:
    """The bytes the traced allocations hold once garbage is collected."""
    gc.collect()
    return tracemalloc.get_traced_memory()[0]
