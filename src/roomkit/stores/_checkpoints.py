"""Checkpoints: every head, signed now and then, each chained to the one before it.

A signed head vouches for its chain as it is, not for the chain existing: a chain deleted
whole, head and all, leaves nothing to check. A checkpoint lists the heads that changed
since the one before it, so that the checkpoints taken together name every chain ever
checkpointed and the length and last digest it had; ``verify`` finds each of those chains
still there, at least that long, with that entry at that place (or gone after the audit
retention the checkpoint records). Its text is canonical JSON::

    {"at": ISO-8601, "chains": C, "heads": {id: [length, digest], ...}, "key": kid,
     "n": N, "prev": digest of checkpoint N-1's text, "retention": seconds or null}

``chains`` counts the chains every checkpoint up to this one has listed, ``prev`` chains it
to the one before it (the first one's: :data:`FIRST_PREV`), and its signature (of
:func:`checkpoint_message`) is stored beside it: a checkpoint edited, deleted, reordered or
inserted shows. Each head it lists is signed again with ``epoch`` ``N``, so that deleting
the newest checkpoint shows too, as a head naming a checkpoint that is not there.

A checkpoint takes only heads that hold their signature: an unsigned head (an append by a
process without the key) or a forged one is left for ``verify`` to name, never vouched for.

Who writes them: ``roomkit desk`` and ``roomkit notify`` every :data:`EVERY` seconds while
they run (:func:`checkpointing`), when they hold the key, and ``roomkit audit checkpoint``
on demand. Writers take turns: each store writes a checkpoint in one transaction or
script that fails, writing nothing, if another one came first.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager, suppress
from datetime import UTC, datetime
from typing import Any, NamedTuple

from roomkit.core.exceptions import AuditKeyError, CorruptRecordError, StoreError
from roomkit.stores._audit_keys import AuditKeys
from roomkit.stores._history import link_digest
from roomkit.stores._trail import (
    Anchoring,
    Checkpoint,
    CheckpointReport,
    Head,
    HeadChange,
    StoreTrail,
    head_message,
)

__all__ = [
    "EVERY",
    "FIRST_PREV",
    "TAKE_HEAD",
    "Plan",
    "checkpoint_message",
    "checkpointing",
    "plan_checkpoint",
    "read_checkpoint",
    "report",
    "signing_keys",
    "taken_rows",
]

logger = logging.getLogger("roomkit.audit")

EVERY = 60.0
"""Seconds between two checkpoints of a desk or a notifier."""
FIRST_PREV = link_digest("roomkit checkpoints")
"""The ``prev`` of the first checkpoint."""

_ENCODER = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False)


class Plan(NamedTuple):
    """A checkpoint to write, and what it does to the heads."""

    checkpoint: Checkpoint | None
    """The checkpoint; ``None`` when no head changed."""
    taken: list[tuple[str, Head, Head]]
    """Each head it takes: the request, the head as read, and the head signed again with
    the checkpoint's number as its epoch (written only while the head is still as read)."""
    new: int
    """How many of them no checkpoint took before."""
    unsigned: tuple[str, ...]
    """The chains whose heads hold no signature, left out."""


def checkpoint_message(text: str) -> str:
    """What a checkpoint's signature signs (a head's message starts otherwise)."""
    return f"checkpoint\0{text}"


def signing_keys(anchoring: Anchoring) -> AuditKeys:
    """The keys a checkpoint is signed with.

    Raises:
        AuditKeyError: the store holds none.
    """
    if anchoring.keys is None:
        raise AuditKeyError(
            "No audit key to sign a checkpoint with: set ROOMKIT_AUDIT_KEY, or create "
            "audit.key in the desk's data folder with `roomkit audit key`"
        )
    return anchoring.keys


def read_checkpoint(checkpoint: Checkpoint) -> dict[str, Any] | None:
    """A checkpoint's body; ``None`` when its text is not one a checkpoint has."""
    try:
        body = json.loads(checkpoint.text)
    except (ValueError, RecursionError):
        return None
    if not isinstance(body, dict) or not isinstance(body.get("heads"), dict):
        return None
    if type(body.get("n")) is not int or type(body.get("chains")) is not int:
        return None
    return body


def plan_checkpoint(
    last: Checkpoint | None,
    changes: Sequence[HeadChange],
    keys: AuditKeys,
    *,
    first: int | None,
    retention: float | None,
    now: float,
) -> Plan:
    """The checkpoint after ``last`` that takes ``changes``, at ``now`` (seconds since the
    epoch); ``first`` is the number of the first checkpoint stored (``None``: there is
    none), ``retention`` the audit retention a missing chain is judged by.

    Raises:
        CorruptRecordError: ``last`` does not hold its signature, or cannot be read; or a
            checkpoint is stored before #0 (renumbered by hand), so that the next number
            may be one a checkpoint already has.
    """
    taken: list[tuple[str, Head]] = []
    unsigned: list[str] = []
    new = 0
    for change in changes:
        pending_id, head = change.pending_id, change.head
        if keys.check(head_message(pending_id, head), head.mac) is None:
            taken.append((pending_id, head))
            new += not change.seen
        else:
            unsigned.append(pending_id)
    if not taken:
        return Plan(None, [], 0, tuple(unsigned))
    n, chains, prev = 0, 0, FIRST_PREV
    if last is not None:
        body = read_checkpoint(last)
        why = keys.check(checkpoint_message(last.text), last.mac)
        if body is not None and why is None and body["n"] != last.n:
            why = f"it is stored as #{last.n} and says it is #{body['n']}"
        if body is None or why is not None:
            raise CorruptRecordError(
                f"checkpoint #{last.n} does not hold ({why or 'unreadable'}): no checkpoint "
                "goes after it; run `roomkit audit verify`"
            )
        if first is not None and first < 0:
            # A checkpoint moved below #0 leaves the last one stored short of the real
            # sequence: the next number would be that moved checkpoint's own.
            raise CorruptRecordError(
                f"checkpoint #{first} is stored before #0, where no checkpoint goes: no "
                "checkpoint goes after the last; run `roomkit audit verify`"
            )
        n, chains, prev = last.n + 1, body["chains"], link_digest(last.text)
    text = _ENCODER.encode(
        {
            "at": datetime.fromtimestamp(now, UTC).isoformat().replace("+00:00", "Z"),
            "chains": chains + new,
            "heads": {pending_id: [head.length, head.digest] for pending_id, head in taken},
            "key": keys.kid,
            "n": n,
            "prev": prev,
            "retention": retention,
        }
    )
    checkpoint = Checkpoint(n, text, keys.sign(checkpoint_message(text)))
    again = [
        (pending_id, head, _signed(keys, pending_id, head._replace(epoch=n)))
        for pending_id, head in taken
    ]
    return Plan(checkpoint, again, new, tuple(unsigned))


def _signed(keys: AuditKeys, pending_id: str, head: Head) -> Head:
    return head._replace(mac=keys.sign(head_message(pending_id, head)))


def taken_rows(plan: Plan) -> list[tuple[object, ...]]:
    """The parameters of a SQL store's :data:`TAKE_HEAD` for each head ``plan`` takes."""
    rows: list[tuple[object, ...]] = []
    for pending_id, read, signed in plan.taken:
        still = (read.length, read.digest)
        rows.append((read.length, *still, signed.epoch, *still, signed.mac, pending_id))
    return rows


TAKE_HEAD = (
    "UPDATE {chains} SET checked = {mark}, "
    "epoch = CASE WHEN length = {mark} AND head = {mark} THEN {mark} ELSE epoch END, "
    "mac = CASE WHEN length = {mark} AND head = {mark} THEN {mark} ELSE mac END "
    "WHERE pending_id = {mark}"
)
"""How a SQL store marks a head a checkpoint took (``checked``: the length taken, a head
changed since included, the chain being listed now) and signs it again with the
checkpoint's number only while it is still the head read: ``{chains}`` is the table,
``{mark}`` the parameter mark. Parameters: :func:`taken_rows`."""


def report(plan: Plan) -> CheckpointReport:
    """What writing ``plan`` did."""
    return CheckpointReport(plan.checkpoint, len(plan.taken), plan.unsigned)


@asynccontextmanager
async def checkpointing(trail: StoreTrail | None, every: float = EVERY) -> AsyncIterator[None]:
    """Write a checkpoint of ``trail`` every ``every`` seconds while the block runs, and
    one as it ends; nothing when ``trail`` is ``None`` or holds no audit key.

    A checkpoint that fails is logged and tried again at the next turn: the task never
    ends early.
    """
    if trail is None or trail.anchoring.keys is None:
        yield
        return
    task = asyncio.create_task(_every(trail, every), name="roomkit audit checkpoints")
    try:
        yield
    finally:
        task.cancel()
        with suppress(asyncio.CancelledError):
            await task
        await _write(trail, (0, None))


async def _every(trail: StoreTrail, every: float) -> None:
    seen: tuple[int, str | None] = (0, None)
    while True:
        await asyncio.sleep(every)
        seen = await _write(trail, seen)


async def _write(trail: StoreTrail, seen: tuple[int, str | None]) -> tuple[int, str | None]:
    """One checkpoint; what was last logged (unsigned heads, fault), to log changes once."""
    unsigned, fault = seen
    try:
        done = await trail.checkpoint()
    except StoreError as error:
        if str(error) != fault:
            logger.warning("Could not write an audit checkpoint: %s", error)
        return unsigned, str(error)
    except Exception:
        logger.exception("Could not write an audit checkpoint")
        return unsigned, None
    if done.unsigned and len(done.unsigned) != unsigned:
        logger.warning(
            "%d chains' heads are not signed (written by a process without the audit key, "
            "or edited) and were left out of the checkpoint: `roomkit audit verify` names them",
            len(done.unsigned),
        )
    return len(done.unsigned), None
