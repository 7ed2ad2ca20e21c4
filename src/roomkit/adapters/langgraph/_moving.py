"""A thread that a resume moves on, held by one resumer, and continued by another when its
resumer died before the thread reached its next stop.

A resume runs the graph from the interrupts it answers up to the next ones (or the end),
through several steps, each checkpointed as it goes. A resumer killed in between leaves the
thread with tasks to run and no interrupt to answer: nothing asks anyone, and nothing would
resume it. So while a resume runs, the thread is marked as moving (a mark kept for good,
taken off when the run returns or raises) and held by a lease of
:data:`~roomkit.adapters._resumes.LEASE` seconds on the store's clock, renewed while the
resume runs, both in the handler's ledger. A resumer that finds a thread with tasks left
and no interrupt, still marked as moving, takes the lease once it lapsed and continues the
thread from its last checkpoint, as LangGraph continues one after a crash (the node that was
cut runs again). A thread stopped
with tasks left and no such mark (a static breakpoint, ``interrupt_before``) is left as it
is. A start running the graph with its input holds a lease of its own, so that two starts
of one thread run it once.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Any, TypeVar

from roomkit.adapters._keys import pause_key
from roomkit.adapters._resumes import LEASE, Resumes

__all__ = ["alone", "continued", "cut", "moving"]

T = TypeVar("T")


def _names(thread: str) -> tuple[str, str]:
    """The mark of ``thread`` moving, and the lease on moving it."""
    return pause_key("lg-moving", thread), pause_key("lg-mover", thread)


async def moving(
    resumes: Resumes, thread: str, claims: Sequence[str], run: Callable[[], Awaitable[T]]
) -> T | None:
    """``run``, moving ``thread`` on, as the one resumer holding it and every claim of
    ``claims`` (the interrupts it answers; none when it continues a cut thread); ``None``
    when another resumer holds the thread or one of the claims."""
    mark, lease = _names(thread)
    if not await resumes.claim(lease, lease=LEASE):
        return None
    try:
        await resumes.keep_claim(mark)
        out = await resumes.holding(
            [lease], lambda: resumes.resume_once(claims, run) if claims else run()
        )
    finally:
        await resumes.unclaim(mark)
        await resumes.unclaim(lease)
    return out


async def alone(resumes: Resumes, thread: str, run: Callable[[], Awaitable[None]]) -> bool:
    """``run`` as the one start of ``thread`` running its graph; ``False`` when another
    start holds it. A lease of its own: a start that died holding it keeps other starts
    out until it lapses, never the resumes of the requests it opened."""
    lease = pause_key("lg-start", thread)
    if not await resumes.claim(lease, lease=LEASE):
        return False
    try:
        await resumes.holding([lease], run)
    finally:
        await resumes.unclaim(lease)
    return True


async def cut(resumes: Resumes, state: Any, thread: str) -> bool:
    """Whether ``thread``, at ``state``, was cut while a resume moved it on: tasks left, no
    interrupt, and still marked as moving."""
    if state.interrupts or not state.tasks:
        return False
    return await resumes.held(_names(thread)[0])


async def continued(graph: Any, config: Any, checkpoint: str) -> bool:
    """The cut thread continued from ``checkpoint`` up to its next stop; ``False`` when it
    had moved on already (another resumer continued it)."""
    state = await graph.aget_state(config)
    if state.config["configurable"].get("checkpoint_id") != checkpoint or not state.tasks:
        return False
    await graph.ainvoke(None, config, version="v2")
    return True
