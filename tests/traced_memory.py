"""Memory a test's own allocations hold, and collections of its own objects, measured the
same however much the run holds."""

from __future__ import annotations

import gc
import tracemalloc
from collections.abc import Callable, Iterator
from contextlib import contextmanager


@contextmanager
def tracing() -> Iterator[Callable[[], int]]:
    """Trace the allocations made from now on; gives ``traced()``, the bytes they still hold
    after a full collection.

    What was alive before (the modules, what earlier tests left) is kept out of the
    collector meanwhile (:func:`collecting_only_new`): a collection then walks what the test
    made, not the whole heap of a worker that ran thousands of tests, which made each
    collection, and the test, many times slower in a full run.
    """
    with collecting_only_new():
        tracemalloc.start()
        try:
            yield traced
        finally:
            tracemalloc.stop()


@contextmanager
def collecting_only_new() -> Iterator[None]:
    """Keep what is alive now out of the garbage collector until the block ends: a
    collection in the block walks only the objects made since, however big the heap.

    Garbage made in the block is collected as before (its finalizers run, its resource
    warnings are raised).
    """
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()


def traced() -> int:
    """The bytes the traced allocations hold once garbage is collected."""
    gc.collect()
    return tracemalloc.get_traced_memory()[0]
