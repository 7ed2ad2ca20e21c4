"""The Redis store's inserts: the key check and the insert of a request, in one script.

A request with a key first reads the key's holder: one still within its retention is handed
back and nothing is written; one past it is deleted, which frees the key. The same request
stored again is this insert retried after a lost reply, and finds itself. The record, its
place in the pending indexes, its key, the start of its history and its change then go in
together, and ``created <id>`` is published with them.

A request settled as it is made (:data:`INSERT_SETTLED`) goes in with its outcome and its
whole history instead, never among the pending: it is kept a retention, listed among the
settled and its history kept the audit retention, as :data:`~._scripts.SETTLE` does for a
request settled after its insert, and ``settled <id> <record>`` is published after
``created <id>``. The granted inserts (:mod:`._granted`) are built of the same parts.
"""

from __future__ import annotations

from typing import Any

from roomkit.models.pending_input import PendingInput
from roomkit.stores._records import encode_hash, marked
from roomkit.stores.base import SETTLED_LIMIT
from roomkit.stores.redis._changes import NOTE_CHANGE
from roomkit.stores.redis._history import HEAD_MOVED
from roomkit.stores.redis._layout import Layout
from roomkit.stores.redis._scripts import UNANNOUNCED

__all__ = [
    "DUPLICATE",
    "HEAD",
    "INSERT",
    "INSERT_CHECKS",
    "INSERT_SETTLED",
    "INSERT_WRITES",
    "SETTLED_ARGS",
    "SETTLED_WRITES",
    "insert_call",
]

DUPLICATE = "duplicate"
"""What the insert returns when another request already has the id."""
HEAD = "head"
"""What leads the insert's reply when the history's head moved: ``[HEAD, head]``."""

INSERT_CHECKS = """
-- KEYS: record, pending index, room index, history list, signed head, heads to
--       checkpoint, change log[, key index] (`keyed`, set by the script's first line)
--       (the script's first lines also set `last`, the index of its last ARGV of the insert)
-- ARGV: id, score, channel, record key prefix, retention cutoff, created_at, arguments,
--       the history's length as the caller read it, h (how many entries start it), the
--       signed head they leave, the h entries' texts (linked to the head read), field,
--       value, ...
local id = ARGV[1]
local h = tonumber(ARGV[9])
local function expired(rec)
  local cur = redis.call('HMGET', rec, 'status', 'settled_at')
  local settled_at = tonumber(cur[2])
  return cur[1] ~= 'pending' and settled_at ~= nil and settled_at <= tonumber(ARGV[5])
end
local function same(rec)
  -- The same request stored again is this insert retried after a lost reply.
  local cur = redis.call('HMGET', rec, 'created_at', 'arguments')
  return cur[1] == ARGV[6] and cur[2] == ARGV[7]
end
if keyed then
  local owner = redis.call('GET', keyed)
  if owner then
    local rec = ARGV[4] .. owner
    if redis.call('EXISTS', rec) == 1 then
      if not expired(rec) then
        local created = 0
        if owner == id and same(rec) then
          created = 1
        end
        return {created, cjson.encode(redis.call('HGETALL', rec))}
      end
      redis.call('DEL', rec)
    end
  end
end
if redis.call('EXISTS', KEYS[1]) == 1 then
  if same(KEYS[1]) then
    return {1, cjson.encode(redis.call('HGETALL', KEYS[1]))}
  end
  return 'duplicate'
end
if h > 0 then
  -- Checked before anything is written: a moved head sends the caller to link again.
  local moved = head_moved(KEYS[4], tonumber(ARGV[8]))
  if moved then
    return {'head', moved}
  end
end
"""
"""The checks of :data:`INSERT`, which write nothing (but the key's expired holder): a
script that writes more with the insert checks what it needs after them."""

SETTLED_WRITES = """
-- ARGV after the insert's (from `last`): settled_at, retention ms, settled index size, audit
--       retention ms ('' keeps the history for good), the settled index, the actor's
local function settled_writes()
  local at, keep, audit = ARGV[last + 1], ARGV[last + 2], ARGV[last + 4]
  redis.call('PEXPIRE', KEYS[1], keep)
  if keyed then
    redis.call('PEXPIRE', keyed, keep)
  end
  if h > 0 and audit ~= '' then
    redis.call('PEXPIRE', KEYS[4], audit)
    redis.call('PEXPIRE', KEYS[5], audit)
  end
  for _, index in ipairs({ARGV[last + 5], ARGV[last + 6]}) do
    redis.call('ZADD', index, at, id)
    redis.call('ZREMRANGEBYRANK', index, 0, -1 - tonumber(ARGV[last + 3]))
    redis.call('PEXPIRE', index, keep)
  end
  -- The settled record rides along with the hint: a waiter elsewhere needs no read.
  local body = cjson.encode(redis.call('HGETALL', KEYS[1]))
  redis.call('PUBLISH', ARGV[3], 'settled ' .. id .. ' ' .. body)
  return {1, body}
end
"""
"""What an insert of a request settled as it is made writes besides its record, as
:data:`SETTLE` would (defined after :data:`INSERT_CHECKS`, called by :data:`INSERT_WRITES`
when the script's ``settled`` is true): it is kept a retention, listed among the settled,
and never among the pending."""

INSERT_WRITES = """
if h > 0 then
  redis.call('RPUSH', KEYS[4], unpack(ARGV, 11, 10 + h))
  anchor(KEYS[5], KEYS[6], ARGV[10])
end
redis.call('HSET', KEYS[1], unpack(ARGV, 11 + h, last))
if keyed then
  redis.call('SET', keyed, id)
end
note_change(KEYS[7], id)
redis.call('PUBLISH', ARGV[3], 'created ' .. id)
if settled then
  return settled_writes()
end
redis.call('ZADD', KEYS[2], ARGV[2], id)
redis.call('ZADD', KEYS[3], ARGV[2], id)
return {1}
"""
"""The writes of :data:`INSERT`, once its checks passed."""

SETTLED_ARGS = 6
"""How many arguments :data:`SETTLED_WRITES` reads after the insert's."""

INSERT = (
    HEAD_MOVED
    + NOTE_CHANGE
    + "local keyed, last, settled = KEYS[8], #ARGV, false\n"
    + INSERT_CHECKS
    + INSERT_WRITES
)

INSERT_SETTLED = (
    HEAD_MOVED
    + NOTE_CHANGE
    + f"local keyed, last, settled = KEYS[8], #ARGV - {SETTLED_ARGS}, true\n"
    + INSERT_CHECKS
    + SETTLED_WRITES
    + INSERT_WRITES
)
""":data:`INSERT` of a request settled as it is made, with its whole history
(:func:`insert_call` with ``settled``)."""


def insert_call(
    layout: Layout,
    request: PendingInput,
    cutoff: float,
    history: tuple[int, list[str], str],
    settled: tuple[float, float, int | str] | None = None,
) -> tuple[list[str], list[Any], dict[str, Any]]:
    """The keys and arguments of :data:`INSERT`, and the record's fields as the hash holds them.

    ``cutoff`` is the time at or before which a settled holder of the key has expired.
    ``history`` is the length of the request's history the caller read, the texts that
    start it (linked to the head read; none for no history) and the signed head they leave
    (``''``: none). ``settled``, for :data:`INSERT_SETTLED` (a request settled as it is
    made): its ``settled_at``, the retention in seconds and the history's audit retention
    as :func:`~roomkit.stores.redis._scripts.audit_ms` gives it.
    """
    fields = encode_hash(request)
    pending_id = request.pending_id
    length, lines, signed = history
    keys = [layout.record(pending_id), layout.pending, layout.room(request.room_id)]
    keys += layout.chain(pending_id)
    keys.append(layout.changes)
    if request.key is not None:
        keys.append(layout.keys + marked(request.key))
    args: list[Any] = [
        pending_id,
        repr(request.created_at.timestamp()),
        layout.channel,
        layout.records,
        repr(cutoff),
        fields["created_at"],
        fields["arguments"],
        length,
        len(lines),
        signed,
        *lines,
    ]
    for name, value in fields.items():
        args += (name, value)
    if settled is None:
        args += (UNANNOUNCED, "1")
        return keys, args, fields
    at, keep, audit = settled
    fields["settled_at"] = repr(float(at))
    args += ("settled_at", fields["settled_at"])
    args += (
        fields["settled_at"],
        max(1, round(keep * 1000)),
        SETTLED_LIMIT,
        audit,
        layout.settled,
        layout.settled_for(request.actor_id),
    )
    return keys, args, fields
