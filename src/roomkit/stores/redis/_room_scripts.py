"""The Lua scripts :class:`~roomkit.stores.redis._rooms.RedisRoomStore` runs on the server.

Each write is one script, so it is atomic on the server whichever process runs it, and each
checks the format key first: a store holding another format version refuses the write and
changes nothing. The keys they take are drawn in :mod:`~roomkit.stores.redis._room_records`;
the values are JSON text written by Python, which the scripts store and return as they are.
"""

from __future__ import annotations

__all__ = [
    "ADD_BINDING",
    "ADD_EVENT",
    "ADD_PARTICIPANT",
    "BEGIN_TURN",
    "CREATE_ROOM",
    "END_TURN",
    "FINISH_TURN",
    "OPEN",
    "READ_ORDERED",
    "READ_TURNS",
    "RECORD_INBOUND",
    "RECORD_STEP",
    "REMOVE_BINDING",
]

# Every write script takes the format key as KEYS[1] and the format as ARGV[1], and answers a
# table whose first element says what happened: "ok", "format" (with the stored format),
# "exists", "noroom" or "noturn".

_FORMAT_CHECK = """
local stored = redis.call('GET', KEYS[1])
if stored and stored ~= ARGV[1] then return {'format', stored} end
if not stored then redis.call('SET', KEYS[1], ARGV[1]) end
"""

_APPEND_EVENT = """
local function append_event(events, last_key, id, event)
  redis.call('RPUSH', events, event)
  if tonumber(id) > tonumber(redis.call('GET', last_key) or '0') then
    redis.call('SET', last_key, id)
  end
end
"""

_UPSERT_TURN = """
local function upsert_turn(turns, seq, key, turn_id, turn)
  redis.call('SET', key, turn)
  if not redis.call('ZSCORE', turns, turn_id) then
    redis.call('ZADD', turns, redis.call('INCR', seq), turn_id)
  end
end
"""

OPEN = (
    """
-- KEYS: format, last-event. ARGV: format. Claims an empty store for this format.
"""
    + _FORMAT_CHECK
    + """
return {'ok', redis.call('GET', KEYS[2]) or '0'}
"""
)

CREATE_ROOM = (
    """
-- KEYS: format, all, seq, room. ARGV: format, room id, room.
"""
    + _FORMAT_CHECK
    + """
if redis.call('ZSCORE', KEYS[2], ARGV[2]) then return {'exists'} end
redis.call('ZADD', KEYS[2], redis.call('INCR', KEYS[3]), ARGV[2])
redis.call('SET', KEYS[4], ARGV[3])
return {'ok'}
"""
)

ADD_PARTICIPANT = (
    """
-- KEYS: format, all, seq, roster, roster order. ARGV: format, room id, participant id, record.
"""
    + _FORMAT_CHECK
    + """
if not redis.call('ZSCORE', KEYS[2], ARGV[2]) then return {'noroom'} end
if redis.call('HSETNX', KEYS[4], ARGV[3], ARGV[4]) == 1 then
  redis.call('ZADD', KEYS[5], redis.call('INCR', KEYS[3]), ARGV[3])
end
return {'ok'}
"""
)

ADD_BINDING = (
    """
-- KEYS: format, all, seq, bindings, binding order, channel.
-- ARGV: format, room id, channel id, binding.
"""
    + _FORMAT_CHECK
    + """
local place = redis.call('ZSCORE', KEYS[2], ARGV[2])
if not place then return {'noroom'} end
redis.call('HSET', KEYS[4], ARGV[3], ARGV[4])
if not redis.call('ZSCORE', KEYS[5], ARGV[3]) then
  redis.call('ZADD', KEYS[5], redis.call('INCR', KEYS[3]), ARGV[3])
end
redis.call('ZADD', KEYS[6], place, ARGV[2])
return {'ok'}
"""
)

REMOVE_BINDING = (
    """
-- KEYS: format, bindings, binding order, channel. ARGV: format, room id, channel id.
"""
    + _FORMAT_CHECK
    + """
if redis.call('HDEL', KEYS[2], ARGV[3]) == 0 then return {'ok', 0} end
redis.call('ZREM', KEYS[3], ARGV[3])
redis.call('ZREM', KEYS[4], ARGV[2])
return {'ok', 1}
"""
)

ADD_EVENT = (
    """
-- KEYS: format, all, events, last-event. ARGV: format, room id, event id, event.
"""
    + _FORMAT_CHECK
    + _APPEND_EVENT
    + """
if not redis.call('ZSCORE', KEYS[2], ARGV[2]) then return {'noroom'} end
append_event(KEYS[3], KEYS[4], ARGV[3], ARGV[4])
return {'ok'}
"""
)

RECORD_INBOUND = (
    """
-- KEYS: format, all, events, last-event, turns, seq, then one key per turn.
-- ARGV: format, room id, event id, event, then a turn id and a turn per turn.
"""
    + _FORMAT_CHECK
    + _APPEND_EVENT
    + _UPSERT_TURN
    + """
if not redis.call('ZSCORE', KEYS[2], ARGV[2]) then return {'noroom'} end
append_event(KEYS[3], KEYS[4], ARGV[3], ARGV[4])
for n = 7, #KEYS do
  upsert_turn(KEYS[5], KEYS[6], KEYS[n], ARGV[2 * n - 9], ARGV[2 * n - 8])
end
return {'ok'}
"""
)

BEGIN_TURN = (
    """
-- KEYS: format, turns, seq, turn. ARGV: format, turn id, turn.
"""
    + _FORMAT_CHECK
    + _UPSERT_TURN
    + """
upsert_turn(KEYS[2], KEYS[3], KEYS[4], ARGV[2], ARGV[3])
return {'ok'}
"""
)

RECORD_STEP = (
    """
-- KEYS: format, turns, steps. ARGV: format, turn id, index, step.
"""
    + _FORMAT_CHECK
    + """
if not redis.call('ZSCORE', KEYS[2], ARGV[2]) then return {'noturn'} end
redis.call('HSET', KEYS[3], ARGV[3], ARGV[4])
return {'ok'}
"""
)

FINISH_TURN = (
    """
-- KEYS: format, turns, turn, steps, and with a reply: all, events, last-event.
-- ARGV: format, turn id, and with a reply: room id, event id, event.
"""
    + _FORMAT_CHECK
    + _APPEND_EVENT
    + """
if not redis.call('ZSCORE', KEYS[2], ARGV[2]) then return {'ok', 0} end
if #KEYS > 4 and not redis.call('ZSCORE', KEYS[5], ARGV[3]) then return {'noroom'} end
redis.call('ZREM', KEYS[2], ARGV[2])
redis.call('DEL', KEYS[3], KEYS[4])
if #KEYS > 4 then append_event(KEYS[6], KEYS[7], ARGV[4], ARGV[5]) end
return {'ok', 1}
"""
)

END_TURN = (
    """
-- KEYS: format, turns, turn, steps. ARGV: format, turn id.
"""
    + _FORMAT_CHECK
    + """
redis.call('ZREM', KEYS[2], ARGV[2])
redis.call('DEL', KEYS[3], KEYS[4])
return {'ok'}
"""
)

READ_ORDERED = """
-- KEYS: an order zset, the hash it orders. The hash's values in that order, in one read.
local values = {}
for _, member in ipairs(redis.call('ZRANGE', KEYS[1], 0, -1)) do
  local value = redis.call('HGET', KEYS[2], member)
  if value then values[#values + 1] = value end
end
return values
"""

READ_TURNS = """
-- KEYS: turns. ARGV: what each turn's key starts with. The open turns, oldest first.
local values = {}
for _, turn_id in ipairs(redis.call('ZRANGE', KEYS[1], 0, -1)) do
  local value = redis.call('GET', ARGV[1] .. turn_id)
  if value then values[#values + 1] = value end
end
return values
"""
