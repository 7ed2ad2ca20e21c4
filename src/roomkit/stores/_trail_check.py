"""Checking a trail: every chain, and with the audit key every head and checkpoint.

Without the key, each chain is checked as it reads: its entries numbered 0, 1, 2, ... in a
row (an entry renumbered, deleted or inserted, alone or with others, breaks the row), each
``prev`` the digest of the entry before it, each text the canonical JSON it was stored as,
and each arguments digest (a ``created`` entry's, an edit's) the digest of its arguments.
That finds an edit anywhere but at a chain's end; a person who can write to the database
can still change or drop the last entry, append one, or delete a chain whole.

With the key, :func:`check_trail` also checks what only the key can make
(:mod:`~roomkit.stores._trail`, :mod:`~roomkit.stores._checkpoints`):

- each chain's head holds its signature and names the chain as it is: as many entries, the
  same last one (an edited, deleted or appended last entry shows, and so does a chain whose
  last append was made by a process without the key);
- the checkpoints are numbered 0, 1, 2, ... in a row, each holds its signature and its
  ``prev`` is the digest of the one before (one edited, deleted, reordered or inserted
  shows), and no head names a checkpoint newer than the last one (the newest deleted shows
  while a head it signed remains);
- every chain a checkpoint lists is still there, at least as long, with the entry the
  checkpoint recorded at that place, unless the audit retention the checkpoints record has
  passed since (see :func:`check_trail`) or the store forgot the chain with its request
  (``Trail.forgotten``, the memory store's retention); every head left without its chain
  shows.

What a checkpoint has not listed yet is vouched for by its head alone: a chain created
since the last checkpoint can be deleted whole, head and all, and a chain can be rolled
back, together with its head, to a state it had since the last checkpoint (given a copy
of the head as it was then), without showing.

:class:`TrailChecker` is the check itself, fed one chain at a time in the order of the ids
(what a store's :meth:`~roomkit.stores.StoreTrail.stream` gives), so that ``roomkit audit``
holds one chain in memory, not the trail; :func:`check_trail` feeds it a whole
:class:`~roomkit.stores.Trail`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence, Set
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from roomkit.models.pending_input import arguments_digest
from roomkit.stores._audit_keys import AuditKeys
from roomkit.stores._checkpoints import FIRST_PREV, checkpoint_message, read_checkpoint
from roomkit.stores._history import broken_link, entry_text, link_digest
from roomkit.stores._trail import Anchoring, Checkpoint, Head, Trail, head_message

__all__ = [
    "TrailChecker",
    "TrailReport",
    "chain_problem",
    "check_trail",
    "first_break",
    "unsigned_heads",
]


@dataclass
class TrailReport:
    """What :func:`check_trail` found."""

    problems: list[str] = field(default_factory=list)
    """Each thing that does not hold, one sentence each; empty when the trail holds."""
    chains: int = 0
    """How many chains the store holds."""
    entries: int = 0
    """How many entries they hold."""
    signed: bool = False
    """Whether the heads and checkpoints were checked (with the audit key)."""
    checkpoints: int = 0
    """How many checkpoints the store holds."""
    last_at: str | None = None
    """When the last checkpoint was written (ISO-8601), if there is one."""
    purged: int = 0
    """Chains a checkpoint listed that are gone after the audit retention."""
    unlisted: int = 0
    """Chains no checkpoint lists yet (vouched for by their heads alone)."""


@dataclass
class _Listed:
    """The chains the checkpoints list, as the last one listing each recorded it."""

    chains: dict[str, tuple[int, str, int]] = field(default_factory=dict)
    """Each chain's length and last digest, and the checkpoint that recorded them."""
    times: dict[int, float | None] = field(default_factory=dict)
    """Each checkpoint's time, by the number it is stored under (any integer a hand wrote)."""
    retention: float | None = None
    last: int = -1


def first_break(pending_id: str, texts: Sequence[str]) -> str | None:
    """What is wrong with the first broken entry of the chain of ``texts``, ``None`` if it
    holds (its links, its texts and its arguments digests)."""
    found = broken_link(pending_id, texts)
    if found is not None:
        seq, why = found
        return f"the history of {pending_id!r} breaks at entry {seq}: {why}"
    tool: object = None
    for seq, text in enumerate(texts):
        entry = json.loads(text)
        if entry.get("type") == "created":
            tool = entry.get("tool")
        arguments = entry.get("arguments")
        # A vote's edit names its own arguments' digest ``edited``; its ``digest`` is the
        # digest of the arguments it was a vote on.
        named = "edited" if entry.get("type") == "voted" else "digest"
        checkable = isinstance(tool, str) and isinstance(arguments, dict) and named in entry
        if checkable and entry[named] != arguments_digest(str(tool), arguments):
            return (
                f"the history of {pending_id!r} breaks at entry {seq}: its digest is not "
                "the digest of its arguments"
            )
    return None


def chain_problem(pending_id: str, rows: Sequence[tuple[int, str]]) -> str | None:
    """The first thing wrong with a chain read as ``(seq, text)`` rows, ``None`` if it holds.

    An id read back holding lone surrogates (stored as bytes that are not UTF-8) is wrong
    too: no store writes one, and none can sign a head for it.
    """
    for place, (seq, _) in enumerate(rows):
        if seq != place:
            return (
                f"the history of {pending_id!r} breaks at entry {place}: it is stored as "
                f"entry {seq} (entries were renumbered, deleted or inserted)"
            )
    problem = first_break(pending_id, [text for _, text in rows])
    if problem is None and not pending_id.isascii():
        try:
            pending_id.encode("utf-8")
        except UnicodeEncodeError:
            return f"the history of {pending_id!r} does not hold: its id is not UTF-8 text"
    return problem


def unsigned_heads(
    chains: Mapping[str, Sequence[tuple[int, str]]], anchoring: Anchoring
) -> tuple[dict[str, Head], list[str]]:
    """The heads of ``chains`` (those whose heads are missing or unsigned) signed as they
    stand, for each chain that holds (:func:`chain_problem`); and the chains that do not.

    This is what vouching for a trail as it is now takes: for the chains written before
    their heads were signed, or by a process without the audit key. A signed head that
    does not match its chain is never signed again here: that is what an edit looks like.
    """
    signed: dict[str, Head] = {}
    broken: list[str] = []
    for pending_id, rows in chains.items():
        if not rows or chain_problem(pending_id, rows) is not None:
            broken.append(pending_id)
            continue
        signed[pending_id] = anchoring.head(pending_id, len(rows), link_digest(rows[-1][1]))
    return signed, broken


def check_trail(trail: Trail, keys: AuditKeys | None, *, now: float) -> TrailReport:
    """Check ``trail``: its chains, and with ``keys`` its heads and checkpoints.

    A chain a checkpoint listed that is missing counts as purged, not deleted, when the
    last checkpoint records an audit retention and that long has passed since the
    checkpoint before the one that last listed it (since that one, for the first): its
    last append came after the earlier one. It counts as purged too when the trail names
    it forgotten with its request (``trail.forgotten``).

    Args:
        trail: what the store read.
        keys: the audit keys; ``None`` checks the chains alone.
        now: the time (seconds since the epoch) a retention is judged at.
    """
    checker = TrailChecker(keys, trail.checkpoints, forgotten=trail.forgotten, now=now)
    for chain in trail.chain_reads():
        checker.chain(*chain)
    return checker.finish()


class TrailChecker:
    """A trail checked one chain at a time (:func:`check_trail`'s rules and words), so that
    a check holds one chain in memory, not the trail.

    Feed it every chain and every head, each request once, in the order of its id
    (:meth:`chain`), then :meth:`finish`. What it keeps meanwhile is small per request: the
    chains the checkpoints list, and what it found.

    Args:
        keys: the audit keys; ``None`` checks the chains alone.
        checkpoints: the checkpoints, as the store keeps them.
        forgotten: chains a checkpoint lists that went with their requests
            (``Trail.forgotten``).
        now: the time (seconds since the epoch) a retention is judged at.
    """

    def __init__(
        self,
        keys: AuditKeys | None,
        checkpoints: Sequence[Checkpoint],
        *,
        forgotten: Set[str] = frozenset(),
        now: float,
    ) -> None:
        self._keys = keys
        self._forgotten = forgotten
        self._now = now
        self.report = TrailReport(checkpoints=len(checkpoints), signed=keys is not None)
        """What it found so far."""
        # Each kind of problem in its own list, joined by ``finish`` in the order a whole
        # trail's check names them: chains, checkpoints, heads, then what the checkpoints list.
        self._chain_problems: list[str] = []
        self._head_problems: list[str] = []
        self._listed_problems: list[str] = []
        checkpoint_report = TrailReport()
        self._listed = _Listed() if keys is None else _fold(checkpoints, keys, checkpoint_report)
        self.report.last_at = checkpoint_report.last_at
        self._checkpoint_problems = checkpoint_report.problems
        self._waiting = iter(sorted(self._listed.chains))
        """The chains the checkpoints list, not reached yet."""
        self._next_listed = next(self._waiting, None)
        self._newest: tuple[int, str] | None = None
        self._last: str | None = None

    def chain(self, pending_id: str, rows: Sequence[tuple[int, str]], head: Head | None) -> None:
        """Check one request's chain (``rows``: its ``(seq, text)`` rows, oldest first; empty
        when it has none) and its head (``None``: none).

        Raises:
            ValueError: ``pending_id`` does not come after the one fed before.
        """
        if self._last is not None and pending_id <= self._last:
            raise ValueError(
                f"chains go to the check in the order of their ids, each once: {pending_id!r} "
                f"came after {self._last!r}"
            )
        self._last = pending_id
        report = self.report
        if rows:
            report.chains += 1
            report.entries += len(rows)
            problem = chain_problem(pending_id, rows)
            if problem is not None:
                self._chain_problems.append(problem)
        if self._keys is None:
            return
        self._listed_before(pending_id)
        self._check_head(pending_id, rows, head, self._keys)
        if self._next_listed == pending_id:
            self._next_listed = next(self._waiting, None)
            self._check_listed(pending_id, rows)

    def finish(self, later: Sequence[Checkpoint] = ()) -> TrailReport:
        """The report, once every chain was fed.

        Args:
            later: checkpoints written while the chains were read, after the checkpoints
                given (by a store whose pages are not one snapshot): a head one of them
                signed (its signature holding) is not taken for a head whose checkpoint was
                deleted. What they list is checked by the next check.
        """
        report = self.report
        if self._keys is not None:
            self._listed_before(None)
            last = max(
                [self._listed.last]
                + [
                    c.n
                    for c in later
                    if self._keys.check(checkpoint_message(c.text), c.mac) is None
                ]
            )
            if self._newest is not None and self._newest[0] > last:
                self._head_problems.append(
                    f"checkpoint #{self._newest[0]} is missing (deleted): the head of the "
                    f"history of {self._newest[1]!r} was signed after it, and the last "
                    f"checkpoint stored is #{last}"
                )
        report.problems = [
            *self._chain_problems,
            *self._checkpoint_problems,
            *self._head_problems,
            *self._listed_problems,
        ]
        return report

    def _listed_before(self, pending_id: str | None) -> None:
        """The chains the checkpoints list before ``pending_id`` (``None``: all left), which
        were not fed: missing."""
        while self._next_listed is not None and (
            pending_id is None or self._next_listed < pending_id
        ):
            missing = self._next_listed
            self._next_listed = next(self._waiting, None)
            self._check_listed(missing, ())

    def _check_head(
        self, pending_id: str, rows: Sequence[tuple[int, str]], head: Head | None, keys: AuditKeys
    ) -> None:
        """The chain against its head, and the head against its chain."""
        problems = self._head_problems
        if head is None or head.mac is None:
            problems.append(
                f"the history of {pending_id!r} has no signed head: its last entries were "
                "written by a process without the audit key (or before heads were signed: "
                "`roomkit audit checkpoint --adopt` signs them as they stand), or its head "
                "was deleted"
            )
            return
        why = keys.check(head_message(pending_id, head), head.mac)
        if why is not None:
            problems.append(f"the head of the history of {pending_id!r} does not hold: {why}")
            return
        newest = self._newest
        if head.epoch > max(self._listed.last, newest[0] if newest else -1):
            self._newest = (head.epoch, pending_id)
        if not rows:
            problems.append(
                f"the history of {pending_id!r} was deleted: its signed head remains "
                f"({head.length} entries)"
            )
            return
        problem = _against_head(pending_id, rows, head)
        if problem is not None:
            problems.append(problem)
        if pending_id not in self._listed.chains:
            self.report.unlisted += 1

    def _check_listed(self, pending_id: str, rows: Sequence[tuple[int, str]]) -> None:
        """A chain the checkpoints list against the chain as stored."""
        listed, report = self._listed, self.report
        length, digest, n = listed.chains[pending_id]
        if not rows:
            if pending_id in self._forgotten or _purged(listed, n, self._now):
                report.purged += 1
            else:
                self._listed_problems.append(
                    f"the history of {pending_id!r} was deleted: checkpoint #{n} lists it "
                    f"with {length} entries"
                )
            return
        if len(rows) < length:
            self._listed_problems.append(
                f"the history of {pending_id!r} holds {len(rows)} entries and checkpoint "
                f"#{n} recorded {length}: entries were deleted"
            )
        elif length and link_digest(rows[length - 1][1]) != digest:
            self._listed_problems.append(
                f"entry {length - 1} of the history of {pending_id!r} is not the one "
                f"checkpoint #{n} recorded: it was edited or replaced"
            )


def _fold(checkpoints: Sequence[Checkpoint], keys: AuditKeys, report: TrailReport) -> _Listed:
    """What the checkpoints list, taken in order; what does not hold goes to ``report``."""
    listed = _Listed()
    problems = report.problems
    expected, prev = 0, FIRST_PREV
    for checkpoint in checkpoints:
        n = checkpoint.n
        if n != expected:
            problems.append(_out_of_place(n, expected))
        body = read_checkpoint(checkpoint)
        why = keys.check(checkpoint_message(checkpoint.text), checkpoint.mac)
        if why is not None or body is None:
            problems.append(f"checkpoint #{n} does not hold: {why or 'it is not a checkpoint'}")
            expected, prev = n + 1, link_digest(checkpoint.text)
            continue
        if body["n"] != n:
            problems.append(f"checkpoint #{n} is stored in the place of #{body['n']}")
        elif n == expected and body.get("prev") != prev:
            problems.append(
                f"checkpoint #{n} does not follow the one before it (a checkpoint before it "
                "was deleted, replaced or reordered)"
            )
        if entry_text(body) != checkpoint.text:
            problems.append(f"checkpoint #{n}'s text is not the canonical JSON it was stored as")
        for pending_id, head in body["heads"].items():
            length, digest = _listed_head(head)
            before = listed.chains.get(pending_id)
            if before is not None and length < before[0]:
                problems.append(
                    f"checkpoint #{n} records the history of {pending_id!r} shorter than "
                    f"checkpoint #{before[2]} did"
                )
            listed.chains[pending_id] = (length, digest, n)
        if body["chains"] != len(listed.chains):
            problems.append(
                f"checkpoint #{n} counts {body['chains']} histories, and the checkpoints up "
                f"to it list {len(listed.chains)}"
            )
        listed.times[n] = _seconds(body.get("at"))
        listed.retention = _retention(body.get("retention"))
        listed.last = max(listed.last, n)
        expected, prev = n + 1, link_digest(checkpoint.text)
        report.last_at = body.get("at") if isinstance(body.get("at"), str) else None
    return listed


def _out_of_place(n: int, expected: int) -> str:
    """What a checkpoint stored as ``n`` where ``expected`` goes is."""
    if n > expected:
        return (
            f"checkpoint #{expected} is missing (deleted, or the checkpoints reordered): "
            f"the next one stored is #{n}"
        )
    if expected == 0:
        return f"checkpoint #{n} is stored before #0, where no checkpoint goes"
    return f"checkpoint #{n} is stored again, or out of order, after #{expected - 1}"


def _against_head(pending_id: str, rows: Sequence[tuple[int, str]], head: Head) -> str | None:
    if len(rows) != head.length:
        how = (
            "entries at its end were deleted"
            if len(rows) < head.length
            else "entries were appended without the key"
        )
        return (
            f"the history of {pending_id!r} holds {len(rows)} entries and its signed head "
            f"says {head.length}: {how}"
        )
    if link_digest(rows[-1][1]) != head.digest:
        return (
            f"the last entry of the history of {pending_id!r} (entry {head.length - 1}) is not "
            "the one its signed head names: it was edited or replaced"
        )
    return None


def _purged(listed: _Listed, n: int, now: float) -> bool:
    """Whether a chain checkpoint ``n`` last listed may be gone after the audit retention."""
    if listed.retention is None:
        return False
    since = listed.times.get(n - 1) if n > 0 else listed.times.get(n)
    return since is not None and since + listed.retention <= now


def _listed_head(head: Any) -> tuple[int, str]:
    if isinstance(head, list) and len(head) == 2:
        length, digest = head
        if type(length) is int and isinstance(digest, str):
            return length, digest
    return 0, ""


def _seconds(at: object) -> float | None:
    if not isinstance(at, str):
        return None
    try:
        return datetime.fromisoformat(at.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def _retention(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)
