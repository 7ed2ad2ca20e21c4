"""Who a thread's requests are for, and which store keeps them, from its start: a resume
under another ``actor`` or ``room``, or on a handler over another store, is refused rather
than asking again.

A request's key holds the thread and the interrupt, within the scope of the actor and room
it was opened for: a resume given another actor or room would find none of the thread's
requests and open new ones, asking people again about what was decided. So the first start
of a thread takes, in the handler's ledger, the mark that the thread's scope is kept (a
spend-once: of starts under different scopes at the same moment, one takes it), then keeps
for good a mark of the thread under its actor and room, and the first mark for good; a start
or resume under another scope finds the first mark without the second and is refused before
anything is opened.

A handler over another store holds neither mark, as a thread started before these marks
were kept does. So the checkpoints that a start and its resumes write carry
:data:`SCOPE_KEPT` in their metadata: a thread whose checkpoint says its scope is kept, on a
store that keeps none of it, was started on another store, and is refused. A thread started
before, whose checkpoints say nothing, goes on as it is asked.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from roomkit.adapters._keys import pause_key
from roomkit.adapters._pauses import Asker
from roomkit.adapters._resumes import LEASE
from roomkit.models.shown import shown

__all__ = ["SCOPE_KEPT", "check_scope", "keep_scope", "kept_here"]

SCOPE_KEPT = "roomkit_scope_kept"
"""The key, in the metadata of the checkpoints a start and its resumes write, saying that the
store the thread started on keeps its actor and room."""


def _names(thread: str, asker: Asker) -> tuple[str, str]:
    """The mark that ``thread``'s scope is kept, and the mark of its scope being ``asker``'s."""
    scope = json.dumps([asker.actor, asker.room])
    return pause_key("lg-scoped", thread), pause_key("lg-scope", thread, scope)


async def check_scope(asker: Asker, thread: str, state: Any, where: str) -> bool:
    """Raise unless ``thread``, found at ``state``, was started under ``asker``'s actor and
    room on its store (or its scope was never kept); whether this store keeps it.

    Raises:
        ValueError: it was started under another actor or room, or on another store
            (nothing was opened).
    """
    kept, mine = _names(thread, asker)
    if await asker.resumes.held(mine):
        return True
    if await asker.resumes.held(kept):
        raise _another(asker, thread, where)
    _check_store(thread, state, where)
    return False


async def keep_scope(asker: Asker, thread: str, state: Any, where: str) -> None:
    """Keep ``thread``'s scope, found at ``state``, as ``asker``'s actor and room, unless it
    is kept as theirs already.

    Raises:
        ValueError: it is kept under another actor or room (another start took it, at the
            same moment too), or on another store (nothing was opened).
    """
    kept, mine = _names(thread, asker)
    resumes = asker.resumes
    if await resumes.held(mine):
        return
    if not await resumes.held(kept):
        _check_store(thread, state, where)
    # Taken for a lease, kept for good once the scope's own mark is: a start that dies in
    # between leaves the thread to the next start once the lease lapses.
    if await resumes.claim(kept, lease=LEASE):
        try:
            await resumes.keep_claim(mine)
        except BaseException:
            await resumes.unclaim(kept)
            raise
        await resumes.keep_claim(kept)
        return
    if not await resumes.held(mine):
        raise _another(asker, thread, where)


def kept_here(config: Mapping[str, Any]) -> dict[str, Any]:
    """``config`` with :data:`SCOPE_KEPT` in its metadata, which LangGraph writes into each
    checkpoint of a run given it."""
    return {**config, "metadata": {**(config.get("metadata") or {}), SCOPE_KEPT: True}}


def _check_store(thread: str, state: Any, where: str) -> None:
    """Raise when ``state`` says that the store ``thread`` started on keeps its scope (this
    one keeps none of it)."""
    if not (getattr(state, "metadata", None) or {}).get(SCOPE_KEPT):
        return
    raise ValueError(
        f"{where}: thread {shown(thread)} was started on another store than this handler's "
        "(its checkpoints say its store keeps the actor and room it started under, and this "
        "store keeps none): pass the handler on the store start() used, which holds the "
        "thread's requests (on this one, people would be asked again about what they "
        "decided); nothing was opened"
    )


def _another(asker: Asker, thread: str, where: str) -> ValueError:
    return ValueError(
        f"{where}: thread {shown(thread)} was started under another actor or room than actor "
        f"{shown(asker.actor)} and room {shown(asker.room)}: pass the actor and room given to "
        "start() (they scope the thread's requests; under others, people would be asked again "
        "about what they decided); nothing was opened"
    )
