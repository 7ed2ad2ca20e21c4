"""The Lua scripts behind :class:`~roomkit.stores.redis._requests.RedisStore`.

Each write that must be atomic runs as one script on the server: the key check and the
insert (:mod:`~roomkit.stores.redis._inserts`), the settle (the store's one check-and-set),
the deadline update and the purge. A
script runs alone on the server, so no other client sees a record half written, and its
``PUBLISH`` goes out with the write it announces.

Layout, under a prefix ``P``:

- ``P:p:<id>``: the record, a hash of the flat fields of
  :mod:`~roomkit.stores._records`, plus ``settle_token`` (which settle
  call won), ``settled_at`` (on the store's clock) and ``unannounced`` (there from the
  insert until the request's announcement is recorded or it settles);
- ``P:k:<key>``: the idempotency key's record id;
- ``P:pending`` and ``P:r:<room id>``: the pending ids, scored by creation time;
- ``P:settled``, ``P:sa:<actor id>`` and ``P:su`` (requests that name no actor): the
  newest settled ids, scored by ``settled_at``, at most ``SETTLED_LIMIT`` each, expiring a
  retention after their last settle;
- ``P:events``: the channel that carries ``created <id>`` and ``settled <id>``;
- ``P:changes`` (with ``P:changes:seq`` and ``P:changes:floor``): the change log that every
  create, settle, vote and earlier deadline writes to
  (:mod:`~roomkit.stores.redis._changes`);
- ``P:h:<id>``: the request's history (:mod:`~roomkit.stores.redis._history`),
  which a settle that wins appends to in the same script, ``P:ha:<id>`` its signed head and
  ``P:hd`` the heads the next checkpoint takes, written by the same script, and ``P:cp`` the
  checkpoints (:mod:`~roomkit.stores.redis._trail`);
- ``P:once:<token>``: the reply of a write run once per token, kept a while so that the
  client's re-send of it writes nothing more (:mod:`~roomkit.stores.redis._once`).

Values a hash cannot hold (``None``) arrive as the ``NONE`` marker, passed in as an argument
so that the scripts never spell the marker themselves; a text that may be ``None`` arrives
:func:`~roomkit.stores._records.marked`, and the index keys named after
one (an idempotency key, an actor) use it as stored. A record a script hands back comes
as one JSON array of its field names and values: one string to read instead of forty.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping, Sequence
from typing import Any

from redis.asyncio import Redis

from roomkit.core.exceptions import CorruptRecordError
from roomkit.models.pending_input import PendingInput, PendingInputStatus
from roomkit.stores._checks import Outcome
from roomkit.stores._records import FORMAT, NONE, decode, marked
from roomkit.stores.base import SETTLED_LIMIT
from roomkit.stores.redis._changes import NOTE_CHANGE
from roomkit.stores.redis._history import HEAD_MOVED
from roomkit.stores.redis._layout import Layout
from roomkit.stores.redis._link import glob_escape

__all__ = [
    "CORRUPT",
    "LATE",
    "LOST_TO_DEADLINE",
    "PURGE",
    "SETTLE",
    "SET_DEADLINE",
    "UNANNOUNCED",
    "Layout",
    "audit_ms",
    "decode_hashes",
    "settle_args",
    "settle_script",
    "trim_settled",
    "unpack",
]

CORRUPT = "corrupt"
"""What a script returns when the record at the key is not one this library wrote."""
LATE = "late"
"""What the settle returns, having written nothing, when it found the deadline passed and
has no deadline's entry to append in place of its own: it runs again with one."""
LOST_TO_DEADLINE = "timed_out"
"""What the settle returns when it lost to a passed deadline and recorded the timeout."""
UNANNOUNCED = "unannounced"
"""The record's field that says its announcement is owed (deleted once it is recorded)."""

_READ_RECORD = """
-- The record at `rec`: its format, its status, then the fields named; false when there is
-- none, 'corrupt' when it holds another format than `format`.
local function read_record(rec, format, ...)
  local cur = redis.call('HMGET', rec, 'format', 'status', ...)
  if not cur[1] then
    return false
  end
  if cur[1] ~= format then
    return 'corrupt'
  end
  return cur
end
"""


_SETTLE_HEAD = """
-- KEYS: record, pending index, history list, signed head, heads to checkpoint
-- ARGV: id, status, result, reason, withdrawn, settled_by, now, retention ms, token,
--       NONE, channel, prefix, format, settled index size, audit retention ms ('' keeps
--       the history for good), the history's length as the caller read it, k (how many
--       entries the win appends), the signed heads the win and the deadline's entry
--       leave, the k entries' texts, and (when the caller knows the deadline passed) the
--       text of the deadline's entry, each linked to the head read
local rec = KEYS[1]
local none = ARGV[10]
local cur = read_record(rec, ARGV[13], 'deadline', 'room_id', 'key', 'settle_token', 'actor_id')
if type(cur) ~= 'table' then
  return cur
end
if cur[2] ~= 'pending' then
  -- The same token is this settle run again after a lost reply: it won the first time.
  if cur[6] == ARGV[9] then
    return cjson.encode(redis.call('HGETALL', rec))
  end
  return false
end
local now = tonumber(ARGV[7])
local due = false
if cur[3] and cur[3] ~= none then
  local deadline = tonumber(cur[3])
  if not deadline then
    return 'corrupt'
  end
  due = now >= deadline
end
local status = ARGV[2]
local won = true
if status == 'timed_out' then
  if not due then
    return false
  end
elseif due then
  status = 'timed_out'
  won = false
end
local k = tonumber(ARGV[17])
if k > 0 then
  -- Checked before anything is written: a moved head sends the caller to link again.
  local moved = head_moved(KEYS[3], tonumber(ARGV[16]))
  if moved then
    return moved
  end
  if won then
    redis.call('RPUSH', KEYS[3], unpack(ARGV, 20, 19 + k))
    anchor(KEYS[4], KEYS[5], ARGV[18])
  elseif ARGV[20 + k] then
    redis.call('RPUSH', KEYS[3], ARGV[20 + k])
    anchor(KEYS[4], KEYS[5], ARGV[19])
  else
    -- The deadline came first: nothing written, the caller sends the deadline's entry.
    return 'late'
  end
  if ARGV[15] ~= '' then
    redis.call('PEXPIRE', KEYS[3], ARGV[15])
    redis.call('PEXPIRE', KEYS[4], ARGV[15])
  end
end
if won then
  redis.call('HSET', rec, 'status', status, 'result', ARGV[3], 'reject_reason', ARGV[4],
             'withdrawn', ARGV[5], 'settle_token', ARGV[9], 'settled_at', ARGV[7])
  if ARGV[6] ~= none then
    redis.call('HSET', rec, 'settled_by', ARGV[6])
  end
"""

_SETTLE_TAIL = """
else
  redis.call('HSET', rec, 'status', status, 'result', none, 'reject_reason', none,
             'withdrawn', '0', 'settled_at', ARGV[7])
end
-- A settled request owes no announcement.
redis.call('HDEL', rec, 'unannounced')
local prefix = ARGV[12]
note_change(prefix .. 'changes', ARGV[1])
redis.call('ZREM', KEYS[2], ARGV[1])
redis.call('ZREM', prefix .. 'r:' .. (cur[4] or ''), ARGV[1])
redis.call('PEXPIRE', rec, ARGV[8])
if cur[5] and cur[5] ~= none then
  local index = prefix .. 'k:' .. cur[5]
  if redis.call('GET', index) == ARGV[1] then
    redis.call('PEXPIRE', index, ARGV[8])
  end
end
local recent = {prefix .. 'settled', prefix .. 'su'}
if cur[7] and cur[7] ~= none then
  recent[2] = prefix .. 'sa:' .. cur[7]
end
for _, index in ipairs(recent) do
  redis.call('ZADD', index, ARGV[7], ARGV[1])
  redis.call('ZREMRANGEBYRANK', index, 0, -1 - tonumber(ARGV[14]))
  redis.call('PEXPIRE', index, ARGV[8])
end
-- The settled record rides along with the hint: a waiter elsewhere needs no read.
local body = cjson.encode(redis.call('HGETALL', rec))
redis.call('PUBLISH', ARGV[11], 'settled ' .. ARGV[1] .. ' ' .. body)
if won then
  return body
end
return 'timed_out'
"""


def settle_script(prologue: str = "", on_win: str = "") -> str:
    """The settle's script, with ``prologue`` run first and ``on_win`` run in the write of
    an outcome that wins (a settle that also records what the win makes)."""
    return HEAD_MOVED + NOTE_CHANGE + _READ_RECORD + prologue + _SETTLE_HEAD + on_win + _SETTLE_TAIL


SETTLE = settle_script()
"""The settle: the store's one check-and-set of an outcome."""

SET_DEADLINE = (
    NOTE_CHANGE
    + _READ_RECORD
    + """
-- KEYS: record, change log
-- ARGV: deadline, NONE, format, id
local cur = read_record(KEYS[1], ARGV[3], 'deadline')
if cur == 'corrupt' then
  return cur
end
if not cur or cur[2] ~= 'pending' then
  return false
end
local current = cur[3]
if current and current ~= ARGV[2] then
  local value = tonumber(current)
  if not value then
    return 'corrupt'
  end
  if value <= tonumber(ARGV[1]) then
    return current
  end
end
redis.call('HSET', KEYS[1], 'deadline', ARGV[1])
note_change(KEYS[2], ARGV[4])
return ARGV[1]
"""
)

PURGE = """
-- KEYS: records to consider
-- ARGV: cutoff, NONE, format, key index prefix
local gone = 0
for _, rec in ipairs(KEYS) do
  local cur = redis.call('HMGET', rec, 'format', 'status', 'settled_at', 'key', 'pending_id')
  if cur[1] == ARGV[3] and cur[2] ~= 'pending' and cur[3]
      and tonumber(cur[3]) and tonumber(cur[3]) <= tonumber(ARGV[1]) then
    redis.call('DEL', rec)
    gone = gone + 1
    if cur[4] and cur[4] ~= ARGV[2] then
      local index = ARGV[4] .. cur[4]
      if redis.call('GET', index) == cur[5] then
        redis.call('DEL', index)
      end
    end
  end
end
return gone
"""


def settle_args(
    layout: Layout,
    pending_id: str,
    status: PendingInputStatus,
    outcome: Outcome,
    *,
    now: float,
    retention_seconds: float,
    token: str,
    history: tuple[int, list[str], str | None] = (0, [], None),
    audit_ms: int | str = "",
    heads: tuple[str, str] = ("", ""),
) -> list[Any]:
    """The arguments of :data:`SETTLE`, whose keys are :meth:`Layout.settle_keys`, for a
    settle to ``status`` with ``outcome`` (its history entries aside: ``history`` has them).

    ``token`` marks the record with this settle call, so that the same call run again
    (after a lost reply) knows it won. ``history`` is the length of the history the caller
    read, the texts a win appends and the text of the deadline's entry, each linked to its
    head (the deadline's is made only once the script said :data:`LATE`); a history the
    settle appends to expires ``audit_ms`` milliseconds later (``''``: never). ``heads``
    are the signed heads the win and the deadline's entry leave (``''``: none).
    """
    length, lines, late = history
    return [
        pending_id,
        status.value,
        marked(outcome.result),
        marked(outcome.reason),
        int(outcome.withdrawn),
        marked(outcome.settled_by),
        repr(float(now)),
        max(1, round(retention_seconds * 1000)),
        token,
        NONE,
        layout.channel,
        f"{layout.prefix}:",
        FORMAT,
        SETTLED_LIMIT,
        audit_ms,
        length,
        len(lines),
        *heads,
        *lines,
        *([] if late is None else [late]),
    ]


def audit_ms(audit_retention: float | None) -> int | str:
    """An audit retention as a script takes it: milliseconds, or ``''`` to keep for good."""
    return "" if audit_retention is None else max(1, round(audit_retention * 1000))


def unpack(reply: bytes | str) -> dict[str, Any]:
    """A record from a script's JSON array of names and values.

    Raises:
        CorruptRecordError: the reply is not such an array.
    """
    try:
        names_and_values = json.loads(reply)
        return dict(zip(names_and_values[::2], names_and_values[1::2], strict=True))
    except (TypeError, ValueError) as error:
        raise CorruptRecordError(f"a pending record came back unreadable ({error})") from None


def decode_hashes(
    keys: Sequence[str], replies: Sequence[Any], logger: logging.Logger
) -> list[tuple[PendingInput, Mapping[Any, Any]]]:
    """The records the hashes at ``keys`` hold (``replies``, one per key, as a pipeline
    read them), each with its fields; a missing one is left out, and one that cannot be
    read is left out with a warning on ``logger``."""
    records: list[tuple[PendingInput, Mapping[Any, Any]]] = []
    for key, fields in zip(keys, replies, strict=True):
        if not fields:
            continue
        try:
            if isinstance(fields, Exception):
                raise CorruptRecordError(str(fields))
            records.append((decode(fields, hashed=True), fields))
        except CorruptRecordError as error:
            logger.warning("skipping %s: %s", key, error)
    return records


async def trim_settled(client: Redis, layout: Layout, cutoff: str, batch: int) -> None:
    """Drop ids settled at or before ``cutoff`` from the settled indexes (an emptied index
    goes with them); the actors' indexes are found ``batch`` keys at a time."""
    indexes = [layout.settled, layout.unassigned]
    pattern = glob_escape(layout.by_actor) + "*"
    indexes += [key async for key in client.scan_iter(match=pattern, count=batch)]
    async with client.pipeline(transaction=False) as pipe:
        for index in indexes:
            pipe.zremrangebyscore(index, "-inf", cutoff)
        await pipe.execute()
