"""The memory store's trail: the histories a handler keeps in memory, signed and checkpointed.

:class:`AnchoredHistory` is a :class:`~roomkit.stores.MemoryHistory` that
counts what each append adds to a chain, and its :class:`MemoryTrail` keeps the signed heads
and the checkpoints beside the chains, in the same process. A memory history links a
settle's entries only when the chain is next read, so its heads are signed then too: when
the trail is read or checkpointed, each chain's head is signed at the length its appends
gave it. An entry changed in memory after that shows, the last one included; so does an
entry the history's own appends did not add, or one they added that is missing. A change
made before the chain was next read does not: what the process holds in its memory is
the process's to change. A chain the history's ``limit`` forgets may go (the checkpoints
record an audit retention of 0).

:class:`CarriedTrail` is the same trail over histories that requests carry (the memory
store's, :mod:`roomkit.tools.human_input._memory_trail`): nothing is counted as a settle
records, so the hot path pays nothing; the records a chain gained are counted when they
are linked (when the history, or the trail, is next read), and a chain is counted whole
the first time the trail reads it. A chain goes with its request when the store forgets
it (its retention), and is then reported forgotten, not deleted; a chain whose request
the store still holds and which is gone shows as deleted.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from typing import Any, Protocol

from roomkit.stores._audit_keys import AuditKeys
from roomkit.stores._checkpoints import plan_checkpoint, read_checkpoint, report, signing_keys
from roomkit.stores._history import link_digest
from roomkit.stores._trail import (
    PAGE,
    Anchoring,
    Checkpoint,
    CheckpointReport,
    Head,
    HeadChange,
    Trail,
    TrailPages,
    pages_of,
)
from roomkit.stores._trail_check import unsigned_heads
from roomkit.stores.memory._history import MemoryHistory

__all__ = ["AnchoredHistory", "CarriedTrail", "Chains", "MemoryTrail"]


class Chains(Protocol):
    """Histories kept in this process's memory."""

    def stored_texts(self) -> dict[str, list[str]]:
        """Every request's stored entries, oldest first, linking what was not linked yet."""
        ...


class MemoryTrail:
    """The signed heads and checkpoints of an :class:`AnchoredHistory`.

    Args:
        history: the history whose chains it vouches for.
        retention: the audit retention its checkpoints record (``None``: chains stay).
    """

    def __init__(self, history: Chains, retention: float | None) -> None:
        self.anchoring = Anchoring.from_environment()
        """What the heads are signed with."""
        self._history = history
        self._retention = retention
        self._lengths: dict[str, int] = {}
        """How long each chain's appends made it."""
        self._heads: dict[str, Head] = {}
        self._taken: dict[str, int] = {}
        """The length the last checkpoint took of each chain."""
        self.checkpoints: list[Checkpoint] = []
        """The checkpoints, oldest first."""

    def use_keys(self, keys: AuditKeys | None) -> None:
        """Sign with ``keys`` from now on (``None``: heads unsigned)."""
        self.anchoring.keys = keys

    def appended(self, pending_id: str, seqs: Sequence[int]) -> None:
        """Note that an append gave the chain the entries ``seqs``."""
        if seqs:
            self._lengths[pending_id] = seqs[-1] + 1

    async def read(self) -> Trail:
        """The chains, heads and checkpoints as the process holds them."""
        texts = self._signed()
        trail = Trail(checkpoints=list(self.checkpoints))
        for pending_id, chain in texts.items():
            trail.chains[pending_id] = list(enumerate(chain))
        trail.heads = dict(self._heads)
        return trail

    @asynccontextmanager
    async def stream(self, *, page: int = PAGE) -> AsyncIterator[TrailPages]:
        """What :meth:`read` gives, in pages: the process holds the chains in its memory
        already, so they are read at once, and nothing can change them between pages."""
        trail = await self.read()
        yield TrailPages(trail.checkpoints, trail.forgotten, pages_of(trail.chain_reads(), page))

    async def adopt(self) -> tuple[int, list[str]]:
        """Sign, as they stand, the heads of the chains that hold and have none signed.

        Raises:
            AuditKeyError: no audit key.
        """
        signing_keys(self.anchoring)
        texts = self._signed()
        waiting = {
            pending_id: list(enumerate(chain))
            for pending_id, chain in texts.items()
            if (head := self._heads.get(pending_id)) is None or head.mac is None
        }
        signed, broken = unsigned_heads(waiting, self.anchoring)
        for pending_id, head in signed.items():
            self._heads[pending_id] = head
            self._lengths[pending_id] = head.length
        return len(signed), broken

    async def checkpoint(self) -> CheckpointReport:
        """A checkpoint of every head that changed since the last one.

        Raises:
            AuditKeyError: no audit key.
            CorruptRecordError: the last checkpoint does not hold its signature.
        """
        keys = signing_keys(self.anchoring)
        self._signed()
        changes = [
            HeadChange(pending_id, head, pending_id in self._taken)
            for pending_id, head in sorted(self._heads.items())
            if self._taken.get(pending_id) != head.length
        ]
        last = self.checkpoints[-1] if self.checkpoints else None
        first = self.checkpoints[0].n if self.checkpoints else None
        plan = plan_checkpoint(
            last, changes, keys, first=first, retention=self._retention, now=time.time()
        )
        if plan.checkpoint is not None:
            self.checkpoints.append(plan.checkpoint)
            for pending_id, read, signed in plan.taken:
                self._taken[pending_id] = read.length
                if self._heads.get(pending_id) == read:
                    self._heads[pending_id] = signed
            self.anchoring.knew(plan.checkpoint.n)
        return report(plan)

    def _signed(self) -> dict[str, list[str]]:
        """The chains as stored, each head signed at the length its appends gave it."""
        texts = self._history.stored_texts()
        if self._retention is not None:
            for pending_id in [p for p in self._lengths if p not in texts]:
                # Forgotten by the history's limit: it goes with its head.
                del self._lengths[pending_id]
                self._heads.pop(pending_id, None)
        self._sign(texts)
        return texts

    def _sign(self, texts: Mapping[str, list[str]]) -> None:
        """Sign each chain's head at the length its appends gave it, where it changed."""
        for pending_id, length in self._lengths.items():
            chain = texts.get(pending_id, [])
            head = self._heads.get(pending_id)
            if (head is None or head.length != length) and len(chain) >= length:
                digest = link_digest(chain[length - 1])
                self._heads[pending_id] = self.anchoring.head(pending_id, length, digest)


class CarriedTrail(MemoryTrail):
    """The signed heads and checkpoints of histories that requests carry.

    What it keeps of each chain (its counted length, its signed head, the length the last
    checkpoint took) is written only when the trail is read or checkpointed, and dropped
    then for the requests the store has forgotten: it holds no more chains than the store.

    Args:
        chains: the histories; they call :meth:`grew` as they link records.
        holds: whether the store still holds a request (and so its history).
    """

    def __init__(self, chains: Chains, holds: Callable[[str], bool]) -> None:
        super().__init__(chains, None)
        self._holds = holds

    def grew(self, pending_id: str, count: int) -> None:
        """Note that ``count`` entries the handler recorded joined the chain."""
        if count and pending_id in self._lengths:
            self._lengths[pending_id] += count

    async def read(self) -> Trail:
        """The chains, heads and checkpoints as the process holds them; the chains a
        checkpoint lists whose requests the store has forgotten are named ``forgotten``."""
        trail = await super().read()
        listed: set[str] = set()
        for checkpoint in trail.checkpoints:
            body = read_checkpoint(checkpoint)
            if body is not None:
                listed.update(body["heads"])
        holds = self._holds
        trail.forgotten = {pending_id for pending_id in listed if not holds(pending_id)}
        return trail

    def _signed(self) -> dict[str, list[str]]:
        texts = self._history.stored_texts()
        holds = self._holds
        for table in (self._lengths, self._heads, self._taken):
            for pending_id in [p for p in table if not holds(p)]:
                del table[pending_id]  # forgotten with its request
        for pending_id, chain in texts.items():
            # A chain read for the first time is counted as it stands; one a checkpoint
            # took has been counted, and lost its count only with its head.
            if pending_id not in self._lengths and pending_id not in self._taken:
                self._lengths[pending_id] = len(chain)
        self._sign(texts)
        return texts


class AnchoredHistory(MemoryHistory):
    """A :class:`~roomkit.stores.MemoryHistory` with an audit trail.

    Args:
        limit: as :class:`~roomkit.stores.MemoryHistory`'s.
    """

    def __init__(self, *, limit: int | None = None) -> None:
        super().__init__(limit=limit)
        self.trail = MemoryTrail(self, None if limit is None else 0.0)
        """The signed heads and checkpoints of these histories."""

    def append_linked(self, pending_id: str, entries: Sequence[Mapping[str, Any]]) -> list[int]:
        seqs = super().append_linked(pending_id, entries)
        self.trail.appended(pending_id, seqs)
        return seqs

    def append_chained(self, pending_id: str, entries: Sequence[Mapping[str, Any]]) -> list[int]:
        seqs = super().append_chained(pending_id, entries)
        self.trail.appended(pending_id, seqs)
        return seqs
