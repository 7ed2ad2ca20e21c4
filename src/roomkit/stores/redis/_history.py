"""The Redis store's approvals: each request's history, and its approvers.

``P:h:<pending id>`` is a list of the request's history entries, oldest first, each the
JSON text of :func:`~roomkit.stores._history.entry_text`; its ``seq`` is
its index. It does not expire with the record: it is the audit of what was decided and run,
kept for good, or (with the store's ``audit_retention``) until the server expires it that
long after its last entry once the request is closed (the settle that closes it, and every
append after, set the expiry; an open request's history has none).
Each entry carries ``prev``, the digest of the one before it. Lua has no SHA-256, so the
caller links the entries to the head it believes in (:class:`Heads`: the last one this
process wrote, or an empty chain) and the script checks that belief: :data:`HEAD_MOVED` is
the chain's check-and-set, a Lua function every script that appends entries starts with
(:data:`APPEND`, and the settle of
:mod:`~roomkit.stores.redis._scripts`). A script calls it before it
writes anything; when the list is no longer as long as the caller read it, the script
returns what the function hands back, the real head, having written nothing, and the caller
links again and runs the script once more (:meth:`Heads.moved`).

``P:ha:<pending id>`` is the chain's signed head (see
:mod:`~roomkit.stores._trail`), a hash: ``v``, the head as
:func:`~roomkit.stores._trail.head_value` writes it, and ``c``, there once
a checkpoint took the chain. The caller signs the head its entries leave (:meth:`Heads.link`)
and every script that appends them writes it, with ``anchor``, a function beside
``head_moved``, which also adds the key to ``P:hd``, the heads the next checkpoint takes
(:mod:`~roomkit.stores.redis._trail`). It expires with the history. A
caller without the audit key sends no head, and the script drops the one there was.

Approvers are a field of the record (JSON text), and so are a quorum's voters. Adding some
is a compare-and-set: the script writes the new lists only while the record is pending and
its approvers are still the ones the caller read (a vote changes them too), and says
``retry`` otherwise, so that two escalations, or an escalation and a vote, never lose one.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from redis.asyncio import Redis

from roomkit.stores._history import (
    deadline_entry,
    first_prev,
    link_digest,
    linked_chain,
    read_entry,
)
from roomkit.stores._quorum import widened
from roomkit.stores._records import FORMAT, NONE, names_text, read_names
from roomkit.stores._trail import Anchoring, head_value
from roomkit.stores.redis._once import once
from roomkit.stores.redis._outbox import ADD_ITEMS

__all__ = [
    "APPEND",
    "APPEND_AT",
    "APPEND_AT_NOTICED",
    "HEAD_MOVED",
    "SET_APPROVERS",
    "SET_APPROVERS_LOGGED",
    "Heads",
    "history_key",
    "read_chain",
    "set_approvers_args",
]

_HEADS_KEPT = 16_384

_APPROVERS_AS_READ = """
-- nil while the request at `record` is pending in `format` with the approvers the caller
-- read ('' when the field is missing); else 0 (settled, or another format) or 'retry'.
local function approvers_moved(record, read, format)
  local cur = redis.call('HMGET', record, 'format', 'status', 'approvers')
  if cur[1] ~= format or cur[2] ~= 'pending' then
    return 0
  end
  if (cur[3] or '') ~= read then
    return 'retry'
  end
  return nil
end
"""

SET_APPROVERS = (
    _APPROVERS_AS_READ
    + """
-- KEYS: record
-- ARGV: approvers as read ('' when the field is missing), new approvers, format, new voters
local moved = approvers_moved(KEYS[1], ARGV[1], ARGV[3])
if moved then
  return moved
end
redis.call('HSET', KEYS[1], 'approvers', ARGV[2], 'voters', ARGV[4])
return 1
"""
)


HEAD_MOVED = """
-- The chain's check-and-set: nil while the list at key is `length` long (the head the
-- caller linked its entries to is the head), else the head to link to again: {0} for an
-- empty list, {n, text of the last entry} otherwise. Call it before writing anything.
local function head_moved(key, length)
  local n = redis.call('LLEN', key)
  if n == length then
    return nil
  end
  if n == 0 then
    return {0}
  end
  return {n, redis.call('LINDEX', key, -1)}
end
-- The chain's signed head, written with its entries and left for the next checkpoint;
-- a caller without the audit key (value '') leaves the chain with none.
local function anchor(key, dirty, value)
  if value == '' then
    redis.call('HDEL', key, 'v')
  else
    redis.call('HSET', key, 'v', value)
    redis.call('SADD', dirty, key)
  end
end
"""

APPEND = once(
    HEAD_MOVED
    + """
-- KEYS: the request's record, history list, signed head, heads to checkpoint
-- ARGV: the length the caller read, the audit retention ms ('' keeps the history for
--       good), the signed head, the entries' texts (linked to the head it read)
local moved = head_moved(KEYS[2], tonumber(ARGV[1]))
if moved then
  return moved
end
redis.call('RPUSH', KEYS[2], unpack(ARGV, 4))
anchor(KEYS[3], KEYS[4], ARGV[3])
-- An open request's history never expires; a closed one's a retention after its last entry.
if ARGV[2] ~= '' and redis.call('HGET', KEYS[1], 'status') ~= 'pending' then
  redis.call('PEXPIRE', KEYS[2], ARGV[2])
  redis.call('PEXPIRE', KEYS[3], ARGV[2])
end
return tonumber(ARGV[1])
"""
)
"""Appends entries to a chain; run once per token (:mod:`~roomkit.stores.redis._once`)."""

_APPEND_AT = """
local cur = redis.call('HMGET', KEYS[1], 'format', 'status')
if cur[1] ~= ARGV[1] or cur[2] ~= 'pending' then
  return 0
end
local moved = head_moved(KEYS[2], tonumber(ARGV[2]))
if moved then
  return moved
end
redis.call('RPUSH', KEYS[2], ARGV[4])
anchor(KEYS[3], KEYS[4], ARGV[3])
"""
"""The guarded append both scripts below make: nothing unless the request is pending and its
chain as long as the caller read it (returning 0, or the length it has)."""

APPEND_AT = once(
    HEAD_MOVED
    + """
-- KEYS: the request's record, history list, signed head, heads to checkpoint
-- ARGV: format, the length the caller read (-1 to learn it), the signed head, the entry's
--       text (linked to the head it read)
"""
    + _APPEND_AT
    + "return 1\n"
)
"""Appends an entry to a pending request's chain only while the chain is as long as the
caller read it; run once per token. An open request's history never expires."""

APPEND_AT_NOTICED = once(
    HEAD_MOVED
    + ADD_ITEMS
    + """
-- KEYS: as APPEND_AT, then the outbox's keys (as ADD_ITEMS takes them)
-- ARGV: as APPEND_AT, then the suffix of an ending's id and the notices' arguments
"""
    + _APPEND_AT
    + """
add_items(5, ARGV[5], 6)
return 1
"""
)
"""As :data:`APPEND_AT`, adding the outbox items the entry owes people in the same script:
a reassignment and the notice to its new person land together or not at all."""

SET_APPROVERS_LOGGED = once(
    HEAD_MOVED
    + _APPROVERS_AS_READ
    + """
-- KEYS: the request's record, history list, signed head, heads to checkpoint
-- ARGV: as SET_APPROVERS (approvers as read, new approvers, format, new voters), then as
--       APPEND (the length the caller read, the audit retention ms, the signed head, the
--       entry's text linked to the head it read)
local refused = approvers_moved(KEYS[1], ARGV[1], ARGV[3])
if refused then
  return refused
end
local moved = head_moved(KEYS[2], tonumber(ARGV[5]))
if moved then
  return moved
end
redis.call('HSET', KEYS[1], 'approvers', ARGV[2], 'voters', ARGV[4])
redis.call('RPUSH', KEYS[2], unpack(ARGV, 8))
anchor(KEYS[3], KEYS[4], ARGV[7])
return 1
"""
)
"""Adds approvers to a pending request and appends the entry that says so, in one script
run once per token: a decision never lands between the two."""


def history_key(prefix: str, pending_id: str) -> str:
    """The key of the request's history list under the store's ``prefix``."""
    return f"{prefix}:h:{pending_id}"


class Heads:
    """What this process believes the head of each chain it wrote to is: a good first guess.

    A guess is the chain's length and the digest of its last entry (what the next entry's
    ``prev`` is); a chain this process never wrote to is guessed empty. The last ``kept``
    chains are remembered (a digest each, not the entry): beyond them, a settle of an older
    request learns the head from the script and runs once more. ``anchoring`` signs the
    heads the appends leave.
    """

    __slots__ = ("_heads", "_kept", "anchoring")

    def __init__(self, anchoring: Anchoring, *, kept: int = _HEADS_KEPT) -> None:
        self._heads: dict[str, tuple[int, str]] = {}
        self._kept = kept
        self.anchoring = anchoring

    def link(
        self, pending_id: str, entries: Sequence[Mapping[str, Any]], head: tuple[int, str]
    ) -> tuple[list[str], str, str]:
        """The texts of ``entries`` linked after ``head`` (a guess), the digest of the last
        one, and the chain's head they leave, signed (``''`` without the audit key)."""
        lines, after = linked_chain(entries, head[1])
        if self.anchoring.keys is None:
            return lines, after, ""
        return (
            lines,
            after,
            head_value(self.anchoring.head(pending_id, head[0] + len(lines), after)),
        )

    def late(self, pending_id: str, head: tuple[int, str]) -> tuple[list[str], str, str]:
        """As :meth:`link`, for the entry a store appends when it records a timeout in place
        of a late settle."""
        return self.link(pending_id, (deadline_entry(),), head)

    def guess(self, pending_id: str) -> tuple[int, str]:
        """The length the request's chain is believed to have, and its next ``prev``."""
        return self._heads.get(pending_id) or (0, first_prev(pending_id))

    @staticmethod
    def moved(pending_id: str, reply: list[Any]) -> tuple[int, str]:
        """The head a script's :data:`HEAD_MOVED` reply hands back, as a guess is."""
        if len(reply) < 2:
            return int(reply[0]), first_prev(pending_id)
        return int(reply[0]), link_digest(reply[1])

    def wrote(self, pending_id: str, length: int, prev: str) -> None:
        """Note that the chain is now ``length`` long, its next entry's ``prev`` ``prev``
        (the digest :func:`~roomkit.stores._history.linked_chain` gives)."""
        heads = self._heads
        heads.pop(pending_id, None)
        heads[pending_id] = (length, prev)
        if len(heads) > self._kept:
            del heads[next(iter(heads))]


def set_approvers_args(read: Sequence[str], actors: tuple[str, ...]) -> list[str]:
    """The arguments of :data:`SET_APPROVERS` that add ``actors``, from the record's
    approvers, voters and quorum as read (``""`` for a missing field)."""
    seen, voters, quorum = read
    count = None if quorum in ("", NONE) else int(float(quorum))
    approvers, listed = widened(read_names(seen), read_names(voters), count, actors)
    return [seen, names_text(approvers), FORMAT, names_text(listed)]


async def read_chain(client: Redis, prefix: str, pending_id: str) -> list[dict[str, Any]]:
    """The request's history under ``prefix``, oldest first."""
    lines = await client.lrange(history_key(prefix, pending_id), 0, -1)
    return [read_entry(line, seq, pending_id=pending_id) for seq, line in enumerate(lines)]
