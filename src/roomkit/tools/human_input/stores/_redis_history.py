"""The Redis store's approvals: each request's history, and its approvers.

``P:h:<pending id>`` is a list of the request's history entries, oldest first, each the
JSON text of :func:`~roomkit.tools.human_input.stores._history.entry_text`; its ``seq`` is
its index. It does not expire with the record: it is the audit of what was decided and run.
Each entry carries ``prev``, the digest of the one before it; an append is a check-and-set
on the chain's head (:data:`APPEND`): the script pushes only while the list is as long as
the caller read it, and hands back the head otherwise, so that the caller links again.

Approvers are a field of the record (JSON text). Adding some is a compare-and-set: the
script writes the new list only while the record is pending and its approvers are still the
ones the caller read, and says ``retry`` otherwise, so that two escalations never lose one.
"""

from __future__ import annotations

__all__ = ["APPEND", "SET_APPROVERS", "history_key"]

SET_APPROVERS = """
-- KEYS: record
-- ARGV: approvers as read ('' when the field is missing), new approvers, format
local cur = redis.call('HMGET', KEYS[1], 'format', 'status', 'approvers')
if cur[1] ~= ARGV[3] or cur[2] ~= 'pending' then
  return 0
end
if (cur[3] or '') ~= ARGV[1] then
  return 'retry'
end
redis.call('HSET', KEYS[1], 'approvers', ARGV[2])
return 1
"""


APPEND = """
-- KEYS: history list
-- ARGV: the length the caller read, the entry's text (linked to the head it read)
local n = redis.call('LLEN', KEYS[1])
if n ~= tonumber(ARGV[1]) then
  if n == 0 then
    return {0}
  end
  return {n, redis.call('LINDEX', KEYS[1], -1)}
end
redis.call('RPUSH', KEYS[1], ARGV[2])
return n
"""


def history_key(prefix: str, pending_id: str) -> str:
    """The key of the request's history list under the store's ``prefix``."""
    return f"{prefix}:h:{pending_id}"
