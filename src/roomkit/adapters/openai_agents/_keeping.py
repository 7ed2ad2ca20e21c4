"""Keeping a durable run's pause, so that a writer that dies part-way through leaves it to the
next one without anyone asked twice.

A pause is kept in three steps (:mod:`roomkit.adapters.openai_agents._saved`): its anchor is
made with its draft (the state, and which approvals are asked about) in the insert's own
write; the ledger marks the generation; the other requests are opened and the state is kept
beside their ids. A draft a look finds marked is finished from the state its writer decided
(:func:`keep_pause` with ``marked``): the requests opened already are re-attached to by key,
the others opened, and the model is not run again.

A writer that dies before the mark leaves at most its anchor with its draft and no other
request. The next writer runs the model again; when its anchor is that one (the key
re-attaches to it under another call id, or names it in a conflict: the model's first call
changed), the draft found there is kept in place of its own, so that the anchor's person
decides the call they were asked about.
"""

from __future__ import annotations

import itertools
from collections.abc import Awaitable, Callable
from typing import NamedTuple

from roomkit.adapters._asking import one_stop
from roomkit.adapters._keys import call_id_of
from roomkit.adapters._pauses import Pause
from roomkit.adapters.openai_agents._saved import SavedRuns
from roomkit.core.exceptions import KeyConflictError, StoreError
from roomkit.models.pending_input import PendingInput

__all__ = ["Draft", "Load", "keep_pause"]

Load = Callable[[str], Awaitable[list[Pause]]]
"""The approvals of a state kept as text, in the state's order."""


class Draft(NamedTuple):
    """A pause as its writer decided it, before its requests are opened."""

    text: str
    """Its ``RunState``, as ``to_string()`` wrote it."""
    asked: list[bool]
    """Which of its approvals a person is asked about."""
    pauses: list[Pause]
    """Its approvals, in the state's order."""


async def keep_pause(
    saved: SavedRuns, generation: int, draft: Draft, load: Load, *, marked: bool = False
) -> list[str | None]:
    """Open the requests of ``draft`` and keep it as ``generation``; the pending id of each
    of its approvals (``None`` for one nobody is asked about).

    ``marked``: the draft a look found, which its writer marked and did not keep; else the
    anchor is made with the draft (or the draft a writer that died left on it is kept in
    its place, read through ``load``) and the generation is marked before the other
    requests are opened.

    A stop that fails for good (:func:`~roomkit.adapters._asking.one_stop`) withdraws the
    requests it opened and takes the mark back: nothing is kept, as when the model's
    arguments are refused before anything is opened.
    """
    try:
        async with one_stop(saved.asker.handler) as requests:
            if not marked:
                draft = await _anchored(saved, generation, draft, load, requests)
                await saved.mark_kept(generation)
            asked = list(itertools.compress(draft.pauses, draft.asked))
            if marked:
                requests.append(await saved.open_anchor(generation, asked[0]))
            for pause in asked[1:]:
                requests.append(await saved.asker.open(pause))
            opened = iter(request.pending_id for request in requests)
            pending = [next(opened) if person else None for person in draft.asked]
            await saved.keep(generation, draft.text, pending)
    except (ValueError, TypeError) as error:
        if not isinstance(error, StoreError):
            await saved.asker.handler.ledger.refund_spent(saved.mark(generation))
        raise
    return pending


async def _anchored(
    saved: SavedRuns, generation: int, draft: Draft, load: Load, requests: list[PendingInput]
) -> Draft:
    """Open the anchor of ``generation`` with ``draft``, put it in ``requests``; the draft
    to keep: ``draft``, or the one a writer that died before marking it left there."""
    first = draft.pauses[draft.asked.index(True)]
    try:
        anchor = await saved.open_anchor(generation, first, (draft.text, draft.asked))
    except KeyConflictError as named:
        anchor = named.request  # made for the first call a dead writer's model made
        left = await _left(saved, anchor, generation, load)
        if left is None:
            raise
        draft = left
    else:
        if anchor.tool_call_id != call_id_of(first.tool_call_id):
            draft = await _left(saved, anchor, generation, load) or draft
    requests.append(anchor)
    return draft


async def _left(
    saved: SavedRuns, anchor: PendingInput, generation: int, load: Load
) -> Draft | None:
    """The draft another writer left on ``anchor``, if it holds one whole."""
    found = await saved.drafted(anchor.pending_id, generation)
    if found is None:
        return None
    text, asked = found
    return Draft(text, asked, await load(text))
