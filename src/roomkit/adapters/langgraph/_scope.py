"""Who a thread's requests are for, and which store keeps them, from its start: a resume
under another ``actor`` or ``room``, or on a handler over another store, is refused rather
than asking again.

A request's key holds the thread and the interrupt, within the scope of the actor and room
it was opened for: a resume given another actor or room would find none of the thread's
requests and open new ones, asking people again about what was decided. So the first start
of a thread keeps, in the handler's ledger, a mark of the thread under its actor and room
and a mark that the thread's scope is kept, both for good; a start or resume under another
scope finds the second without the first and is refused before anything is opened.

The ledger writes one mark at a time, so a start takes the thread first (a spend-once with a
lease: of starts at the same moment, one takes it and the others are told that another start
is under way), writes its own mark for the same lease, then keeps the thread's mark for good
and its own after it. A start cancelled or failing in between gives them back. One killed in
between leaves them to the next start under its scope, which keeps them for good, or to lapse
with its lease, the thread then free for any start; its own mark is never kept for good
before the thread's, as it would outlast the lease and let a start under another scope take
the thread too.

A handler over another store holds neither mark, as a thread started before these marks
were kept does. So the checkpoints that a start and its resumes write on a durable store
carry :data:`SCOPE_KEPT` in their metadata: a thread whose checkpoint says its scope is
kept, on a store that keeps none of it, was started on another store, and is refused. A
thread started before, whose checkpoints say nothing, goes on as it is asked; so does one
started on the memory store, whose marks and requests end with its process.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from roomkit.adapters._keys import pause_key
from roomkit.adapters._pauses import Asker
from roomkit.adapters._resumes import LEASE, Resumes, ledger_now
from roomkit.core.exceptions import RunUnderWayError
from roomkit.models.shown import shown

__all__ = ["SCOPE_KEPT", "check_scope", "keep_scope", "kept_here"]

SCOPE_KEPT = "roomkit_scope_kept"
"""The key, in the metadata of the checkpoints a start and its resumes write, saying that the
store the thread started on keeps its actor and room."""


def _names(thread: str, asker: Asker) -> tuple[str, str, str]:
    """The claim of a start taking ``thread``, the mark that its scope is kept, and the
    mark of its scope being ``asker``'s."""
    scope = json.dumps([asker.actor, asker.room])
    return (
        pause_key("lg-scoping", thread),
        pause_key("lg-scoped", thread),
        pause_key("lg-scope", thread, scope),
    )


async def check_scope(asker: Asker, thread: str, state: Any, where: str) -> bool:
    """Raise unless ``thread``, found at ``state``, was started under ``asker``'s actor and
    room on its store (or its scope was never kept); whether this store keeps it.

    Raises:
        ValueError: it was started under another actor or room (or a start is taking it),
            or on another store (nothing was opened).
    """
    taking, kept, mine = _names(thread, asker)
    resumes = asker.resumes
    if await resumes.held(mine):
        return True
    if await resumes.held(kept) or await resumes.held(taking):
        raise _another(asker, thread, where)
    _check_store(thread, state, where)
    return False


async def keep_scope(asker: Asker, thread: str, state: Any, where: str) -> None:
    """Keep ``thread``'s scope, found at ``state``, as ``asker``'s actor and room, unless it
    is kept as theirs already.

    Raises:
        ValueError: it is kept under another actor or room, or on another store (nothing
            was opened).
        RunUnderWayError: another start is taking the thread at this moment, or died doing
            so less than :data:`LEASE` seconds ago (nothing was opened).
    """
    taking, kept, mine = _names(thread, asker)
    resumes = asker.resumes
    if await resumes.held(mine):
        # Its own mark within a lease: the start that wrote it died before keeping both.
        await _keep(resumes, kept, mine)
        return
    if await resumes.held(kept):
        raise _another(asker, thread, where)
    _check_store(thread, state, where)
    until = ledger_now(asker.handler) + LEASE
    if not await resumes.claim(taking, until=until):
        raise RunUnderWayError(
            f"{where}: another start() of thread {shown(thread)} is taking it: nothing was "
            "run and nobody was asked; start() it again once that one returned (under the "
            "same actor and room it re-attaches to the thread's requests, under others it "
            f"is refused), or, if that one died, once its claim lapses ({LEASE:.0f} seconds "
            "after it began)"
        )
    if await resumes.held(kept):  # kept by a start whose claim lapsed meanwhile
        raise _another(asker, thread, where)
    try:
        await resumes.claim(mine, until=until)  # lapses with the claim when left there
        await _keep(resumes, kept, mine)
    except BaseException:
        await resumes.unclaim(mine)
        await resumes.unclaim(kept)
        await resumes.unclaim(taking)
        raise


async def _keep(resumes: Resumes, kept: str, mine: str) -> None:
    """Keep the thread's mark for good, then the scope's (never the other way round)."""
    await resumes.keep_claim(kept)
    await resumes.keep_claim(mine)


def kept_here(config: Mapping[str, Any], asker: Asker) -> Mapping[str, Any]:
    """``config`` with :data:`SCOPE_KEPT` in its metadata, which LangGraph writes into each
    checkpoint of a run given it, when ``asker``'s store is durable. The memory store's
    marks end with its process, as its requests do: a thread it started, resumed on a new
    one (the process restarted), has nothing left to find and asks again."""
    if not asker.handler.durable:
        return config
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
    # The marks are the store's, not a checkpointer's: another graph, or a checkpointer
    # started afresh, whose thread has the same id on this store meets them too.
    return ValueError(
        f"{where}: thread {shown(thread)} was started under another actor or room than actor "
        f"{shown(asker.actor)} and room {shown(asker.room)} on this handler's store; nothing "
        "was opened. To go on with that thread, pass the actor and room given to start() "
        "(they scope its requests; under others, people would be asked again about what "
        "they decided). For another thread of the same thread_id (another graph, or a "
        "checkpointer started afresh, on this store), give it a thread_id of its own, "
        f"such as one led by its graph's name ({shown('billing:' + thread)}): a thread_id "
        "names one thread on a handler's "
        "store for good, whatever checkpointer holds it"
    )
