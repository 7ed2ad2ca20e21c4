"""The trail's anchors: each chain's signed head, and what a store's trail reads back.

A chain's head is its length, the digest of its last entry's stored text (what the next
entry's ``prev`` would be), ``epoch`` (the number of the last checkpoint the writer knew
of; ``-1`` for none) and the signature of those under the audit key (``None`` when the
writer held no key). Every append writes the chain's head in the same transaction (SQLite,
PostgreSQL), script (Redis) or step (memory) as its entries, so that the last entry, which
no successor's ``prev`` vouches for, is vouched for by a signature the database cannot
make: an edit of it, its deletion, or an entry appended without the key shows. The digest
of the last entry also fixes every entry before it, each ``prev`` being the digest of the
one before.

:class:`Anchoring` is what a store signs with; each durable store builds one from the
environment (``ROOMKIT_AUDIT_KEY``) and its ``trail`` (a :class:`StoreTrail`) reads the
chains, heads and checkpoints back as one :class:`Trail`, writes checkpoints
(:mod:`~roomkit.stores._checkpoints`), and takes a key with
:meth:`StoreTrail.use_keys`.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterable, Iterator, Sequence
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, field
from typing import Any, NamedTuple, Protocol, runtime_checkable

from roomkit.stores._audit_keys import AuditKeys

__all__ = [
    "PAGE",
    "Anchoring",
    "ChainRead",
    "Checkpoint",
    "CheckpointReport",
    "Head",
    "HeadChange",
    "StoreTrail",
    "Trail",
    "TrailPages",
    "head_message",
    "head_value",
    "pages_of",
    "read_head",
    "stored_head",
    "stored_text",
]


class Head(NamedTuple):
    """A chain's head as its last append wrote it."""

    length: int
    """How many entries the chain holds."""
    digest: str
    """The SHA-256 hex digest of the last entry's stored text."""
    epoch: int
    """The last checkpoint the writer knew of (``-1``: none)."""
    mac: str | None
    """The signature of the above under the audit key; ``None`` when written without one."""


PAGE = 256
"""Chains a trail's :meth:`~StoreTrail.stream` reads at a time."""


def head_message(pending_id: str, head: Head) -> str:
    """What a head's signature signs: its fields after ``head``, NUL between them. Only the
    request's id is free text, and what follows it holds no NUL (numbers, hex), so no two
    heads share a message."""
    return _message(pending_id, head.length, head.digest, head.epoch)


def _message(pending_id: str, length: int, digest: str, epoch: int) -> str:
    return f"head\0{pending_id}\0{length}\0{digest}\0{epoch}"


def head_value(head: Head) -> str:
    """A head as one text, JSON (where a store keeps it as one value)."""
    mac = "null" if head.mac is None else f'"{head.mac}"'
    return f'[{head.length},"{head.digest}",{head.epoch},{mac}]'


def read_head(value: object) -> Head | None:
    """The head :func:`head_value` wrote; ``None`` for anything else."""
    try:
        length, digest, epoch, mac = json.loads(value)  # type: ignore[arg-type]
    except (TypeError, ValueError, RecursionError):
        return None
    if not (type(length) is int and type(epoch) is int and isinstance(digest, str)):
        return None
    return Head(length, digest, epoch, mac if isinstance(mac, str) else None)


def stored_head(length: Any, digest: Any, epoch: Any, mac: Any) -> Head:
    """A head from the columns a SQL store keeps it in (``epoch`` NULL: ``-1``; a number
    column holding something else, as SQLite lets a hand edit leave it: ``-1``, which no
    signature holds for)."""
    return Head(
        _stored_int(length),
        stored_text(digest),
        -1 if epoch is None else _stored_int(epoch),
        None if mac is None else stored_text(mac),
    )


def stored_text(value: Any) -> str:
    """A text column's value as text: bytes (what a store reads a column as, so that bytes
    a hand edit left there that are not UTF-8 are named rather than failing the read)
    decoded with each byte that is not UTF-8 kept as a lone surrogate, which no text a
    store writes holds."""
    if isinstance(value, bytes):
        return value.decode("utf-8", "surrogateescape")
    return str(value)


def _stored_int(value: Any) -> int:
    """A number column's value; ``-1`` when it holds no whole number (tampered with): text,
    bytes, or a real, which SQLite keeps as a hand edit wrote it (a fraction, an infinity)
    where it would have stored a whole one as an integer."""
    return value if type(value) is int else -1


class Anchoring:
    """What a store signs the heads it writes with.

    Args:
        keys: the audit keys; ``None`` writes heads unsigned.
    """

    __slots__ = ("epoch", "keys")

    def __init__(self, keys: AuditKeys | None = None) -> None:
        self.keys = keys
        """The audit keys the heads are signed with (``None``: unsigned)."""
        self.epoch = -1
        """The last checkpoint this process wrote or read (``-1``: none)."""

    @classmethod
    def from_environment(cls) -> Anchoring:
        """Signing with ``ROOMKIT_AUDIT_KEY`` when it is set.

        Raises:
            ValueError: it holds a key too short.
        """
        return cls(AuditKeys.from_environment())

    def head(self, pending_id: str, length: int, digest: str) -> Head:
        """The head of a chain ``length`` long whose last entry's digest is ``digest``."""
        keys, epoch = self.keys, self.epoch
        if keys is None:
            return Head(length, digest, epoch, None)
        return Head(length, digest, epoch, keys.sign(_message(pending_id, length, digest, epoch)))

    def knew(self, epoch: int) -> None:
        """Note that checkpoint ``epoch`` exists."""
        self.epoch = max(self.epoch, epoch)

    def read(self, trail: Trail) -> Trail:
        """``trail``, once the checkpoints it holds are noted as known."""
        for checkpoint in trail.checkpoints:
            self.knew(checkpoint.n)
        return trail


class Checkpoint(NamedTuple):
    """A checkpoint as stored: its number, its canonical JSON text and its signature."""

    n: int
    text: str
    mac: str


class HeadChange(NamedTuple):
    """A head that changed since the last checkpoint took it, as the checkpoint reads it."""

    pending_id: str
    head: Head
    seen: bool
    """Whether an earlier checkpoint took this chain."""


@dataclass
class Trail:
    """Everything a store keeps of the trail, as read at one time."""

    chains: dict[str, list[tuple[int, str]]] = field(default_factory=dict)
    """Each request's entries, oldest first, as ``(seq, stored text)``."""
    heads: dict[str, Head] = field(default_factory=dict)
    """Each chain's head, as its last append wrote it (chains with none are left out)."""
    checkpoints: list[Checkpoint] = field(default_factory=list)
    """The checkpoints, in the order the store keeps them."""
    forgotten: set[str] = field(default_factory=set)
    """Chains a checkpoint lists that went with their requests, forgotten by the store's
    retention (the memory store's): missing, they count as purged, not deleted."""

    @classmethod
    def from_rows(
        cls,
        history: Iterable[Sequence[Any]],
        heads: Iterable[Sequence[Any]],
        checkpoints: Iterable[Sequence[Any]],
    ) -> Trail:
        """The trail a SQL store read: rows of ``(pending_id, seq, text)`` (oldest first
        within a chain), of ``(pending_id, length, digest, epoch, mac)`` and of ``(n,
        text, mac)``; each text as text or as the bytes stored (:func:`stored_text`)."""
        trail = cls()
        for pending_id, seq, text in history:
            trail.chains.setdefault(stored_text(pending_id), []).append(
                (_stored_int(seq), stored_text(text))
            )
        for pending_id, *head in heads:
            trail.heads[stored_text(pending_id)] = stored_head(*head)
        trail.checkpoints = [
            Checkpoint(_stored_int(n), stored_text(text), stored_text(mac))
            for n, text, mac in checkpoints
        ]
        return trail

    def chain_reads(self, ids: Iterable[str] | None = None) -> Iterator[ChainRead]:
        """Each request of ``ids`` (``None``: each with a chain or a head, in the order of
        the ids) with its chain and its head."""
        chains, heads = self.chains, self.heads
        for pending_id in sorted(chains.keys() | heads.keys()) if ids is None else ids:
            yield ChainRead(pending_id, chains.get(pending_id, []), heads.get(pending_id))

    def texts(self) -> dict[str, list[str]]:
        """Each request's stored texts, oldest first."""
        return {pending_id: [text for _, text in rows] for pending_id, rows in self.chains.items()}


class ChainRead(NamedTuple):
    """One request's chain and head, as a trail's read gives them."""

    pending_id: str
    rows: list[tuple[int, str]]
    """Its entries, oldest first, as ``(seq, stored text)``; empty when none is stored."""
    head: Head | None
    """Its head, as its last append wrote it (``None``: none is stored)."""


@dataclass
class TrailPages:
    """A trail read a page of chains at a time (:meth:`StoreTrail.stream`): the checkpoints
    and the forgotten chains read first, then the chains, each request whole in one page."""

    checkpoints: list[Checkpoint]
    """The checkpoints, in the order the store keeps them."""
    forgotten: set[str]
    """As :attr:`Trail.forgotten`."""
    pages: AsyncIterator[list[ChainRead]]
    """Every request with a chain or a head, in the order of the ids (Python's order of the
    ids as text, the order :func:`sorted` gives), a page at a time."""
    later: list[Checkpoint] = field(default_factory=list)
    """Checkpoints written while the pages were read, after :attr:`checkpoints`, once the
    last page is read (only where the pages are not one snapshot: Redis)."""


async def pages_of(reads: Iterable[ChainRead], page: int = PAGE) -> AsyncIterator[list[ChainRead]]:
    """``reads`` in pages of ``page``."""
    batch: list[ChainRead] = []
    for read in reads:
        batch.append(read)
        if len(batch) == page:
            yield batch
            batch = []
    if batch:
        yield batch


class CheckpointReport(NamedTuple):
    """What writing a checkpoint did."""

    checkpoint: Checkpoint | None
    """The checkpoint written; ``None`` when no head had changed since the last one."""
    heads: int
    """How many heads it took."""
    unsigned: tuple[str, ...]
    """The chains whose heads it left out: unsigned, or not holding their signature
    (``roomkit audit verify`` names why)."""


@runtime_checkable
class StoreTrail(Protocol):
    """A store's trail: its anchoring, what it reads back, and its checkpoints."""

    anchoring: Anchoring

    def use_keys(self, keys: AuditKeys | None) -> None:
        """Sign with ``keys`` from now on (``None``: write heads unsigned)."""
        ...

    async def read(self) -> Trail:
        """The chains, heads and checkpoints as stored."""
        ...

    def stream(self, *, page: int = PAGE) -> AbstractAsyncContextManager[TrailPages]:
        """The chains, heads and checkpoints as stored, ``page`` chains at a time: what
        :meth:`read` gives, holding one page of chains in memory (each store says how
        consistent the pages are with each other)."""
        ...

    async def adopt(self) -> tuple[int, list[str]]:
        """Sign, as they stand, the heads of the chains that have none or an unsigned one
        (written before heads were signed, or by a process without the key), each chain
        that holds; how many, and the chains left because they do not hold.

        Raises:
            AuditKeyError: the store holds no audit key.
        """
        ...

    async def checkpoint(self) -> CheckpointReport:
        """Write a checkpoint of every head that changed since the last one, signed.

        Raises:
            AuditKeyError: the store holds no audit key.
            CorruptRecordError: the last checkpoint does not hold its signature.
        """
        ...
