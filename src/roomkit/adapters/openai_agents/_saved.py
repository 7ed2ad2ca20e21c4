"""A paused run's ``RunState``, kept in roomkit's store beside the requests it raised.

Each pause of a run is a *generation* (0 for the pause :func:`start` reached, then one more
per resume that paused again). Its first approval asked about is its anchor, keyed
``oa-anchor:{run_key}:g{generation}`` (the others ``oa:{run_key}:{call_id}``, a namespace no
call id reaches; each part escaped by :func:`~roomkit.adapters._keys.pause_key`).

A pause is kept in three steps. The anchor is made with the state in its history, in the
insert's own write, as ``saved`` entries holding ``draft`` (in parts, each well under a
history entry's size limit) with which approvals are asked about: the pause's *draft*. The
ledger then marks the generation, so that a look finds it; then the other requests are
opened, and the state is written again beside their pending ids (``saved`` entries holding
``state``, ``None`` for a call its rule left to no one, which has no request). A writer that
dies after the mark leaves a draft: the next :func:`start` or :func:`resume` opens the
requests it lacks (those opened re-attach by key) and keeps it, and the model is not run
again. One that dies before the mark leaves at most an anchor with its draft, which the
next writer's anchor re-attaches to, or names in its conflict: that writer then keeps the
draft it finds there in place of its own (:mod:`roomkit.adapters.openai_agents._keeping`).

Each writing of a state (or of an output) tags its parts with an attempt of its own, and a
read takes the parts of one attempt only, the last one written whole: a resumer that dies
part-way through keeping a generation, whose resume another takes over once its claim
lapses, leaves parts that are never joined to the other's.

A run that finishes on a resume keeps its final output (as JSON text) on the anchor of the
pause it was resumed from, as ``saved`` entries holding ``output`` in place of ``state`` (in
parts, as the state), and the ledger then marks the run as finished. A resumer that dies
between the two leaves its resume to another, which keeps the output again: the last whole
output kept is the run's, as the last whole state kept is the generation's.

The ledger's marks are kept for good; an anchor goes when the store lets it go, a retention
after it was settled. A look then finds a generation marked and no anchor: the run went past
the retention, and is refused by name (finished, it stays so: the ledger says it). A request
is read by its key only by making one under it, so the look leaves a placeholder there,
settled as it is made and never announced.
"""

from __future__ import annotations

import dataclasses
import json
import os
from typing import Any, NamedTuple

from roomkit.adapters._claims import ledger_name
from roomkit.adapters._keys import call_id_of, pause_key
from roomkit.adapters._pauses import Asker, Pause
from roomkit.adapters._policy_pause import create_paused
from roomkit.core.exceptions import KeyConflictError, UnknownRequestError
from roomkit.models.pending_input import PendingInput
from roomkit.models.shown import shown
from roomkit.stores import new_entry
from roomkit.tools.approvals import reject
from roomkit.tools.human_input import decided_at_once

__all__ = ["Paused", "SavedRuns"]

PART_CHARS = 20_000
"""The most characters of a state one ``saved`` entry holds."""
GENERATIONS = 256
"""How many generations' marks one read of the ledger asks for (a run with more is read in
as many steps)."""
_LOOK = "openai-agents-look"
"""The surface of a placeholder a look at a run makes: nobody's, settled in its making."""
_PLACEHOLDER = Pause("", "approval", "openai_agents.run", {})
"""What a look at an anchor asks to make under the anchor's key (no tool has that name)."""
_LOOKED_UP = reject("a look at the run's kept state, past the store's retention; nobody asked")
"""How a placeholder is settled as it is made."""


class Paused(NamedTuple):
    """A pause of a run, as the store keeps it."""

    generation: int
    """Which pause of the run it is."""
    text: str
    """Its ``RunState``, as ``to_string()`` wrote it."""
    asked: list[bool]
    """Which of its approvals, in the state's order, a person is asked about."""
    pending: list[str | None] | None
    """The pending id of each approval (``None`` for one nobody is asked about); ``None``
    while the pause is a draft, its requests not all opened yet."""


class SavedRuns:
    """The kept states of the run ``key``, through ``asker``'s handler.

    A run is named by its key within its owner's scope (the asker's room, channel and
    actor), as its requests' keys are: the ledger's marks and the resume's claims carry
    that scope, so a look under another actor or room finds no run, and opens nothing.
    """

    __slots__ = ("asker", "key", "scoped")

    def __init__(self, asker: Asker, key: str) -> None:
        self.asker = asker
        self.key = key
        self.scoped = json.dumps(
            [asker.room, asker.channel, asker.actor, key], separators=(",", ":")
        )
        """The key within its owner's scope, as the ledger's names hold it."""

    def claim(self, generation: int) -> str:
        """The name of the claim on resuming from ``generation``."""
        return f"oa:{self.scoped}:{generation}"

    def starting(self) -> str:
        """The name of the claim on starting the run (running its model up to its first
        pause)."""
        return f"oa-start:{self.scoped}"

    def anchor(self, generation: int, pause: Pause) -> Pause:
        """``pause``, keyed as the anchor of ``generation``."""
        return dataclasses.replace(pause, key=pause_key("oa-anchor", self.key, f"g{generation}"))

    def mark(self, generation: int) -> str:
        """The ledger entry saying ``generation`` was kept."""
        return ledger_name("oa-run", f"{self.scoped}:g{generation}")

    def done(self) -> str:
        """The ledger entry saying the run finished and its output was kept."""
        return ledger_name("oa-run-done", self.scoped)

    async def open_anchor(
        self, generation: int, pause: Pause, draft: tuple[str, list[bool]] | None = None
    ) -> PendingInput:
        """The anchor request of ``generation``, made for ``pause``: created with ``draft``
        (the pause's state and which approvals are asked about) in its history, in the same
        write; or the one its key names, which holds what its own maker wrote.

        Raises:
            KeyConflictError: the key names an anchor made for another call.
        """
        history: tuple[dict[str, Any], ...] = ()
        if draft is not None:
            text, asked = draft
            history = self._entries("draft", text, generation=generation, asked=asked)
        return await self.asker.open(self.anchor(generation, pause), history=history)

    async def open(self, generation: int, pauses: list[Pause], opened: list[PendingInput]) -> None:
        """Open the requests of ``generation``'s pauses, the first as its anchor, each put in
        ``opened`` as it is made."""
        first, *rest = pauses
        opened.append(await self.open_anchor(generation, first))
        for pause in rest:
            opened.append(await self.asker.open(pause))

    async def mark_kept(self, generation: int) -> None:
        """Mark ``generation`` kept in the ledger: a look finds it from now on."""
        await self.asker.handler.ledger.record_spent(self.mark(generation), until=None)

    async def keep(self, generation: int, text: str, pending: list[str | None]) -> None:
        """Keep ``text``, the state paused at the requests ``pending`` (one per approval of
        the pause, ``None`` where its rule left the call to no one), as ``generation``, on
        its anchor (the first request of ``pending``)."""
        anchor = next(pending_id for pending_id in pending if pending_id is not None)
        await self._record(anchor, "state", text, generation=generation, pending=pending)

    async def drafted(self, anchor: str, generation: int) -> tuple[str, list[bool]] | None:
        """The state and the approvals asked about that the anchor ``anchor`` holds whole
        for ``generation`` (kept, else as its draft); ``None`` when it holds neither."""
        history = await self.asker.handler.history(anchor)
        kept = _whole(history, "state", generation)
        if kept is not None:
            return kept[0], [pending_id is not None for pending_id in kept[1]["pending"]]
        draft = _whole(history, "draft", generation)
        return None if draft is None else (draft[0], list(draft[1]["asked"]))

    async def finish(self, generation: int, output: str) -> None:
        """Keep ``output``, the run's final output as JSON text, on the anchor of
        ``generation`` (the pause the run was last resumed from), and mark the run finished."""
        anchor = await self._anchor(generation)
        await self._record(anchor.pending_id, "output", output, generation=generation)
        await self.asker.handler.ledger.record_spent(self.done(), until=None)

    def _entries(self, field: str, text: str, **fields: Any) -> tuple[dict[str, Any], ...]:
        """``text`` as ``saved`` entries, its parts each under ``field``, beside ``fields``,
        all tagged with one new attempt."""
        parts = _parts(text)
        attempt = os.urandom(8).hex()
        # The run is named as a request keeps a framework's id: a long key by its digest,
        # which leaves room in the entry for the state's part.
        run = call_id_of(self.key)
        return tuple(
            new_entry(
                "saved",
                run=run,
                attempt=attempt,
                part=index,
                parts=len(parts),
                **fields,
                **{field: part},
            )
            for index, part in enumerate(parts)
        )

    async def _record(self, anchor: str, field: str, text: str, **fields: Any) -> None:
        """Record ``text`` on the request ``anchor`` as :meth:`_entries` writes it."""
        for entry in self._entries(field, text, **fields):
            await self.asker.handler.record(anchor, entry)

    async def finished(self) -> bool:
        """Whether the run finished on a resume (its output kept)."""
        return bool(await self.asker.handler.ledger.read_spent([self.done()]))

    async def output(self) -> str | None:
        """The run's final output as :meth:`finish` kept it; ``None`` while it is not kept.

        Raises:
            UnknownRequestError: the run finished, and its output went past the store's
                retention.
        """
        if not await self.finished():
            return None
        generation = await self._generation()
        if generation < 0:
            return None
        found = await self._history(generation)
        if found is None:
            raise UnknownRequestError(self._forgotten("finished, and its output"))
        kept = _whole(found, "output", generation)
        return None if kept is None else kept[0]

    async def latest(self) -> Paused | None:
        """The last generation kept: kept whole, or its draft (the writer keeping it stopped,
        or is still opening its requests); ``None`` when none was.

        Raises:
            UnknownRequestError: one was, and its anchor went past the store's retention.
        """
        generation = await self._generation()
        if generation < 0:
            return None
        history = await self._history(generation)
        if history is None:
            raise UnknownRequestError(
                self._forgotten("paused, and its state")
                + ": it cannot be resumed, nor started again under this run_key; start a new "
                "run under a new run_key, and resume a run while the store keeps its requests"
            )
        kept = _whole(history, "state", generation)
        if kept is not None:
            text, entry = kept
            pending = list(entry["pending"])
            return Paused(generation, text, [p is not None for p in pending], pending)
        text, entry = _whole(history, "draft", generation) or ("", {})
        return Paused(generation, text, list(entry["asked"]), None) if entry else None

    def _forgotten(self, what: str) -> str:
        """Why a run's ``what`` is no longer in the store."""
        return (
            f"the run {shown(self.key)} {what} went past the store's retention with the "
            "request it was kept on (settled longer ago than the store keeps requests: "
            "retention_seconds on a durable store, retention on the memory store)"
        )

    async def _history(self, generation: int) -> list[dict[str, Any]] | None:
        """The history of the anchor of ``generation``, a kept one; ``None`` when it went past
        the store's retention (the look found, or made, its placeholder)."""
        anchor = await self._anchor(generation)
        history = await self.asker.handler.history(anchor.pending_id)
        if not any(entry.get("type") == "saved" for entry in history):
            return None
        return history

    async def _generation(self) -> int:
        """The last generation kept, or -1."""
        handler = self.asker.handler
        generation, start = -1, 0
        while True:
            generations = {self.mark(n): n for n in range(start, start + GENERATIONS)}
            marks = await handler.ledger.read_spent(list(generations))
            if marks:
                generation = max(generations[name] for name in marks)
            if generation < start + GENERATIONS - 1:
                break
            start += GENERATIONS  # every one of these was kept: the run went on past them
        return generation

    async def _anchor(self, generation: int) -> PendingInput:
        """The anchor request of ``generation``, a kept one, read by its key: a request is
        read by its key only by making one under it, which hands back the one the key names.

        An anchor past the store's retention has freed its key: the look then makes a
        placeholder, which nobody is told about and which is settled in its making (the
        next look finds it, and no saved entry on it)."""
        try:
            with decided_at_once(_LOOKED_UP, by=None, surface=_LOOK):
                return await create_paused(self.asker, self.anchor(generation, _PLACEHOLDER))
        except KeyConflictError as named:
            return named.request  # the anchor, made for the run's first call


def _whole(
    history: list[dict[str, Any]], field: str, generation: int
) -> tuple[str, dict[str, Any]] | None:
    """The text under ``field`` of ``generation`` that ``history``'s ``saved`` entries hold
    whole, joined from the parts of the last attempt written whole, with that attempt's
    last entry; ``None`` when no attempt was.

    An attempt is one :meth:`SavedRuns._record`: the parts of another (a resumer that died
    part-way through, or one still writing) are never joined to its own.
    """
    attempts: dict[Any, dict[int, str]] = {}
    whole: tuple[str, dict[str, Any]] | None = None
    for entry in history:
        if entry.get("type") != "saved" or field not in entry:
            continue  # another entry of the anchor, or the other field's parts
        if entry.get("generation") != generation:
            continue
        parts = attempts.setdefault(entry.get("attempt"), {})
        parts[int(entry["part"])] = str(entry[field])
        if len(parts) == int(entry["parts"]):
            whole = "".join(parts[i] for i in sorted(parts)), entry
    return whole


def _parts(text: str) -> list[str]:
    """``text`` cut into parts that each fit a history entry."""
    return [text[i : i + PART_CHARS] for i in range(0, len(text), PART_CHARS)] or [""]
