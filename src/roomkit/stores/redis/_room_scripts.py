"""The Lua scripts :class:`~roomkit.stores.redis._rooms.RedisRoomStore` runs on the server.

Each write is one script, so it is atomic on the server whichever process runs it, and each
checks the format key first: a store holding another format version refuses the write and
changes nothing. The keys they take are drawn in :mod:`~roomkit.stores.redis._room_records`;
the values are JSON text written by Python, which the scripts store and return as they are.

The client sends a command again when a cut connection lost its reply, after the server ran
it, so each write lands once however often it is run. Most find by what they carry that they
ran already: a room's record holds a token of the create that wrote it; a participant who
joined, a binding attached, a turn begun, a step and a turn's end write the same again. Those
whose second run would change something (an event appended, with the turns it begins or the
turn it ends; a binding's removal; a turn's end without a reply) run once per token
(:mod:`~roomkit.stores.redis._once`): an event is not looked for in the history, which
another process may have appended to at any length before the client's re-send, and an
event the application adds twice is stored twice, as the SQL stores store it.
"""

from __future__ import annotations

from roomkit.stores.redis._once import once

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
    "RENEW_TURNS",
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
-- KEYS: format, last-event, event-nodes. ARGV: format, "1" to take a node ("0" not to).
-- Claims an empty store for this format; answers the largest event id and the node taken.
"""
    + _FORMAT_CHECK
    + """
local node = 0
if ARGV[2] == '1' then node = redis.call('INCR', KEYS[3]) end
return {'ok', redis.call('GET', KEYS[2]) or '0', node}
"""
)

CREATE_ROOM = (
    """
-- KEYS: format, all, seq, room. ARGV: format, room id, room (with the create's token).
"""
    + _FORMAT_CHECK
    + """
if redis.call('ZSCORE', KEYS[2], ARGV[2]) then
  -- The record this very create wrote: the client's re-send of it.
  if redis.call('GET', KEYS[4]) == ARGV[3] then return {'ok'} end
  return {'exists'}
end
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

# A removal carries a room and a channel: nothing in it tells the client's re-send from another
# caller's removal, nor keeps it from removing a binding attached in between. A token does.
REMOVE_BINDING = once(
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

# An append carries an event, which the history may hold any number of events after by the
# time the client sends the write again: a token tells its re-send from another write.
ADD_EVENT = once(
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

# Its turns are begun with its event: a re-send runs neither again (nor opens a turn that
# ended meanwhile).
RECORD_INBOUND = once(
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

# A turn's end carries the turn's id and its reply, if any: nothing in it tells the client's
# re-send from another run's end of the turn, which must be told it ended nothing, and the
# reply is not looked for in the history (as for ADD_EVENT).
FINISH_TURN = once(
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

# A round renews every turn a process holds at once: one script, whatever their number. Run
# again, it writes the same records again, and reopens no turn that ended meanwhile.
RENEW_TURNS = (
    """
-- KEYS: format, turns, then one key per turn. ARGV: format, then a turn id and a turn per
-- turn. Replaces the open turns' records; answers the ids of those it replaced.
"""
    + _FORMAT_CHECK
    + """
local renewed = {'ok'}
for n = 3, #KEYS do
  local turn_id = ARGV[2 * n - 4]
  if redis.call('ZSCORE', KEYS[2], turn_id) then
    redis.call('SET', KEYS[n], ARGV[2 * n - 3])
    renewed[#renewed + 1] = turn_id
  end
end
return renewed
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
