"""The Redis store's outbox: keys of its own under the store's prefix.

- ``<prefix>:outbox:item:<id>``: a hash (``pending_id``, ``body``, ``attempts``,
  ``created``, ``done``, ``receipt``, ``owner``, ``lane``, and ``claim``: the token of the
  claim that took it last);
- ``<prefix>:outbox:due``: a sorted set of the items not done, scored by due time;
- ``<prefix>:outbox:lane:<lane>``: the same, for the items of one lane (a surface's
  deliveries, or the steps);
- ``<prefix>:outbox:lanes``: a set of the lanes' names;
- ``<prefix>:outbox:req:<pending_id>``: a sorted set of a request's items, by creation;
- ``<prefix>:outbox:unended``: a set of the requests with items but no ending yet.

Every change is one script, so a claim is a check-and-set among every process on the
server. A claim marks the items it takes with a token of its own: sent again after its
reply was lost, it hands over the items its first run took and takes no more. One that
failed (the server killed as it answered, and still away when the client tried again) is
sent so once more, with its owner's next claim's lease: what it took comes back to its
owner then, not when its lease lapses, leased as long as that claim's. A postponement
carries a token (:mod:`~roomkit.stores.redis._once`) so that it counts no second attempt;
the other changes write the same when run twice. The due set has the last word: a lane's
entry whose item is done, or due later there, is put right when a claim comes across it.
Items recorded before lanes were (no ``lane`` field) are given theirs by each outbox's first
claim by lanes.

Once a request's ending is recorded and none of its items is left to do, its items
and its set expire after the store's ``outbox_retention_seconds`` (a week by default; the
retention of a settled request is shorter); an open request's stay.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Sequence
from contextlib import AbstractAsyncContextManager
from typing import Any

from roomkit.stores._lost_claims import HeardClaims, held_by
from roomkit.stores.outbox import ENDING, KEEP_DONE, Claim, OutboxItem
from roomkit.stores.redis._link import beside
from roomkit.stores.redis._once import once, with_token

__all__ = ["ADD_ITEMS", "RedisOutbox", "item_args", "outbox_keys"]

ADD_ITEMS = """
-- Records the items not recorded yet, from ARGV[from] on (7 arguments each: id, request,
-- due, body, attempts, created, lane); KEYS[first] to KEYS[first + 5] are the outbox's item
-- prefix, due set, request prefix, unended set, lane prefix and lanes set; `ending` is the
-- suffix of a request's ending's id. How many were new.
local function add_items(first, ending, from)
  local new = 0
  local item, due, req, unended = KEYS[first], KEYS[first + 1], KEYS[first + 2], KEYS[first + 3]
  local lane_of, lanes = KEYS[first + 4], KEYS[first + 5]
  for i = from, #ARGV, 7 do
    local key = item .. ARGV[i]
    if redis.call('EXISTS', key) == 0 then
      local request = ARGV[i + 1]
      local ended = request .. ending
      redis.call('HSET', key, 'pending_id', request, 'body', ARGV[i + 3],
                 'attempts', ARGV[i + 4], 'created', ARGV[i + 5], 'done', '0',
                 'lane', ARGV[i + 6])
      redis.call('ZADD', due, ARGV[i + 2], ARGV[i])
      redis.call('ZADD', lane_of .. ARGV[i + 6], ARGV[i + 2], ARGV[i])
      redis.call('SADD', lanes, ARGV[i + 6])
      redis.call('ZADD', req .. request, ARGV[i + 5], ARGV[i])
      redis.call('PERSIST', req .. request)
      if ARGV[i] == ended then
        redis.call('SREM', unended, request)
      elseif redis.call('EXISTS', item .. ended) == 0 then
        redis.call('SADD', unended, request)
      end
      new = new + 1
    end
  end
  return new
end
"""
"""A Lua function every script that adds outbox items runs: :data:`_ADD`, and the append of
a history entry with the notices it owes (:mod:`~roomkit.stores.redis._history`)."""

_ADD = (
    ADD_ITEMS
    + """
return add_items(1, ARGV[1], 2)
"""
)

_SET_DUE = """
-- KEYS[2] is the outbox's due set and KEYS[3] its lane prefix in every script that runs it.
local function set_due(key, id, due)
  redis.call('ZADD', KEYS[2], due, id)
  local lane = redis.call('HGET', key, 'lane')
  if lane then
    redis.call('ZADD', KEYS[3] .. lane, due, id)
  end
end
"""
"""A Lua function: an item's due time (``key`` its hash), in the due set and in its lane's
(an item recorded before lanes were has none yet)."""

_TAKEN_BEFORE = """
-- Sent again after its reply was lost, a claim hands over what its first run took, and
-- takes nothing more: the items that carry its token (ARGV[5]), still its owner's
-- (ARGV[4]), leased within ARGV[6] and ARGV[7] (its lease's end, twice), leased anew until
-- ARGV[2]. Its owner's next claim after one never heard of sends that one's token, and the
-- scores past now up to the last end its items may be leased until (the lost claim's, or
-- that of a hand-over of them whose reply was lost too, or its own): what it took comes
-- back, leased as long as the claim that hands it over, whatever the leases.
local again = {}
for _, id in ipairs(redis.call('ZRANGEBYSCORE', KEYS[2], ARGV[6], ARGV[7])) do
  local key = KEYS[1] .. id
  local mark = redis.call('HMGET', key, 'claim', 'owner')
  if mark[1] == ARGV[5] and mark[2] == ARGV[4] then
    set_due(key, id, ARGV[2])
    again[#again + 1] = id
    again[#again + 1] = redis.call(
      'HMGET', key, 'pending_id', 'body', 'attempts', 'created', 'receipt'
    )
  end
end
if #again > 0 then
  return again
end
"""
"""The start of a claim's script (after :data:`_SET_DUE`). ARGV: now, the lease's end, the
limit, the owner, the token, and the first and the last score (``ZRANGEBYSCORE``'s) at which
the items of the token may have been left."""

_CLAIM = (
    _SET_DUE
    + _TAKEN_BEFORE
    + """
local ids = redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', ARGV[1], 'LIMIT', 0, tonumber(ARGV[3]))
local out = {}
for _, id in ipairs(ids) do
  local key = KEYS[1] .. id
  set_due(key, id, ARGV[2])
  redis.call('HSET', key, 'owner', ARGV[4], 'claim', ARGV[5])
  out[#out + 1] = id
  out[#out + 1] = redis.call('HMGET', key, 'pending_id', 'body', 'attempts', 'created', 'receipt')
end
return out
"""
)

_CLAIM_LANES = (
    _SET_DUE
    + _TAKEN_BEFORE
    + """
local now, out = tonumber(ARGV[1]), {}
local function take(lane, room)
  local set, taken = KEYS[3] .. lane, 0
  while taken < room do
    local ids = redis.call('ZRANGEBYSCORE', set, '-inf', ARGV[1], 'LIMIT', 0, room - taken)
    if #ids == 0 then
      break
    end
    for _, id in ipairs(ids) do
      local due = redis.call('ZSCORE', KEYS[2], id)
      if not due then
        redis.call('ZREM', set, id)
      elseif tonumber(due) > now then
        redis.call('ZADD', set, due, id)
      else
        local key = KEYS[1] .. id
        redis.call('ZADD', KEYS[2], ARGV[2], id)
        redis.call('ZADD', set, ARGV[2], id)
        redis.call('HSET', key, 'owner', ARGV[4], 'claim', ARGV[5])
        out[#out + 1] = id
        out[#out + 1] = redis.call(
          'HMGET', key, 'pending_id', 'body', 'attempts', 'created', 'receipt'
        )
        taken = taken + 1
      end
    end
  end
  return taken
end
local named, rest = {}, tonumber(ARGV[3])
for i = 8, #ARGV, 2 do
  named[ARGV[i]] = true
  take(ARGV[i], tonumber(ARGV[i + 1]))
end
for _, lane in ipairs(redis.call('SMEMBERS', KEYS[4])) do
  if rest <= 0 then
    break
  end
  if not named[lane] then
    rest = rest - take(lane, rest)
  end
end
return out
"""
)
"""A claim by lanes. ARGV: those of :data:`_TAKEN_BEFORE` (the limit: how many to take in the
lanes not named), then each lane named and how many to take in it."""

_ADOPT = """
local ids = redis.call('ZRANGE', KEYS[2], ARGV[1], tonumber(ARGV[1]) + 499)
for _, id in ipairs(ids) do
  local key = KEYS[1] .. id
  if redis.call('HEXISTS', key, 'lane') == 0 then
    local surface = cjson.decode(redis.call('HGET', key, 'body') or '{}')['surface']
    local lane = type(surface) == 'string' and surface or ''
    redis.call('HSET', key, 'lane', lane)
    redis.call('ZADD', KEYS[3] .. lane, redis.call('ZSCORE', KEYS[2], id), id)
    redis.call('SADD', KEYS[4], lane)
  end
end
return #ids
"""
"""Give 500 items of the due set from ARGV[1] on their lane, when they have none (recorded
before lanes were); returns how many it looked at."""

_RENEW = (
    _SET_DUE
    + """
if redis.call('HGET', KEYS[1], 'owner') == ARGV[2] and redis.call('ZSCORE', KEYS[2], ARGV[3]) then
  set_due(KEYS[1], ARGV[3], ARGV[1])
  if ARGV[4] ~= '' then
    redis.call('HSET', KEYS[1], 'receipt', ARGV[4])
  end
  return 1
end
return 0
"""
)

_COMPLETE = """
if redis.call('EXISTS', KEYS[1]) == 0 then
  return 0
end
redis.call('HSET', KEYS[1], 'done', '1', 'receipt', ARGV[1])
redis.call('HDEL', KEYS[1], 'owner')
redis.call('ZREM', KEYS[2], ARGV[2])
local lane = redis.call('HGET', KEYS[1], 'lane')
if lane then
  redis.call('ZREM', KEYS[5] .. lane, ARGV[2])
end
local request = redis.call('HGET', KEYS[1], 'pending_id')
if redis.call('EXISTS', KEYS[4] .. request .. ARGV[4]) == 0 then
  return 1
end
local ids = redis.call('ZRANGE', KEYS[3] .. request, 0, -1)
for _, id in ipairs(ids) do
  if redis.call('ZSCORE', KEYS[2], id) then
    return 1
  end
end
for _, id in ipairs(ids) do
  redis.call('PEXPIRE', KEYS[4] .. id, ARGV[3])
end
redis.call('PEXPIRE', KEYS[3] .. request, ARGV[3])
return 1
"""

_ITEMS_FOR = """
local out = {}
for _, id in ipairs(redis.call('ZRANGE', KEYS[1], 0, -1)) do
  local fields = redis.call('HGETALL', KEYS[2] .. id)
  if #fields > 0 then
    out[#out + 1] = id
    out[#out + 1] = fields
    out[#out + 1] = redis.call('ZSCORE', KEYS[3], id) or ''
  end
end
return out
"""
"""A request's items, oldest first: for each its id, its hash, its due time if not done
(an item done long ago whose hash expired is left out)."""

_POSTPONE = once(
    _SET_DUE
    + """
if redis.call('ZSCORE', KEYS[2], ARGV[2]) then
  set_due(KEYS[1], ARGV[2], ARGV[1])
  redis.call('HINCRBY', KEYS[1], 'attempts', 1)
  redis.call('HDEL', KEYS[1], 'owner')
  if ARGV[3] ~= '' then
    redis.call('HSET', KEYS[1], 'receipt', ARGV[3])
  end
end
return 1
"""
)


def outbox_keys(prefix: str) -> list[str]:
    """The keys :data:`ADD_ITEMS` takes, for the store with ``prefix``."""
    outbox = f"{prefix}:outbox:"
    return [outbox + name for name in ("item:", "due", "req:", "unended", "lane:", "lanes")]


def item_args(items: Sequence[OutboxItem]) -> list[Any]:
    """The arguments :data:`ADD_ITEMS` takes for ``items``."""
    args: list[Any] = []
    for i in items:
        args += [i.item_id, i.pending_id, repr(i.due), i.encoded_body(), i.attempts]
        args += [repr(i.created), i.lane]
    return args


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


class RedisOutbox(HeardClaims):
    """The outbox on a Redis store's server (see
    :mod:`~roomkit.stores.outbox`)."""

    def __init__(self, store: Any) -> None:
        client = store._client  # the store's own client: same server, same pool
        prefix = f"{store.prefix}:outbox:"
        self._store = store
        self._client = client
        self._item = prefix + "item:"
        self._due = prefix + "due"
        self._request = prefix + "req:"
        self._unended = prefix + "unended"
        self._lane = prefix + "lane:"
        self._lanes = prefix + "lanes"
        self._adopted = False
        self._keep_ms = round(getattr(store, "outbox_retention", KEEP_DONE) * 1000)
        self._add = client.register_script(_ADD)
        self._claim = client.register_script(_CLAIM)
        self._claim_lanes = client.register_script(_CLAIM_LANES)
        self._adopt = client.register_script(_ADOPT)
        self._renew = client.register_script(_RENEW)
        self._complete = client.register_script(_COMPLETE)
        self._postpone = client.register_script(_POSTPONE)
        self._items_for = client.register_script(_ITEMS_FOR)
        self._unanswered = {}

    def _server(self) -> AbstractAsyncContextManager[None]:
        return beside(self._store, "Redis outbox")

    def _once(self, keys: list[str], args: list[Any]) -> dict[str, Any]:
        """The arguments of a call of a script run once per token, with a token of its own."""
        keys, args = with_token(self._store.prefix, keys, args, within=self._store.timeout)
        return {"keys": keys, "args": args}

    async def add(self, items: Sequence[OutboxItem]) -> int:
        if not items:
            return 0
        keys = outbox_keys(self._store.prefix)
        async with self._server():
            return int(await self._add(keys=keys, args=[f".{ENDING}", *item_args(items)]))

    async def _taken_by(self, lost: Claim, token: str, claim: Claim) -> list[OutboxItem]:
        # The claim's script hands over what the lost claim's token took first, leased anew
        # until the claim's lease's end; it takes no more here.
        after, last = held_by(lost, claim)
        left = f"({after!r}", repr(last)
        return await self._take(claim._replace(limit=0, lanes={}), token, left=left)

    async def _take(
        self, claim: Claim, token: str, *, left: tuple[str, str] | None = None
    ) -> list[OutboxItem]:
        """As :meth:`HeardClaims._take`; ``left``: the first and the last score at which the
        items ``token`` took may have been left (the claim's own lease's end when not given)."""
        owner, now, until, limit, lanes = claim
        if lanes is not None and not self._adopted:
            await self._adopt_all()
        args: list[Any] = [repr(now), repr(until), limit, owner, token]
        args += (repr(until), repr(until)) if left is None else left
        async with self._server():
            if lanes is None:
                raw = await self._claim(keys=[self._item, self._due, self._lane], args=args)
            else:
                for lane, room in lanes.items():
                    args += [lane, max(0, room)]
                raw = await self._claim_lanes(
                    keys=[self._item, self._due, self._lane, self._lanes], args=args
                )
        items = []
        for at in range(0, len(raw), 2):
            *fields, receipt = raw[at + 1]
            pending_id, body, attempts, created = (_text(v) for v in fields)
            items.append(
                OutboxItem(
                    item_id=_text(raw[at]),
                    pending_id=pending_id,
                    due=until,
                    body=json.loads(body),
                    attempts=int(attempts),
                    created=float(created),
                    receipt=json.loads(_text(receipt)) if receipt else None,
                )
            )
        return items

    async def _adopt_all(self) -> None:
        """Give every item recorded without a lane its lane (once per outbox): 500 at a
        time, each round trip within the store's ``timeout`` on its own."""
        keys = [self._item, self._due, self._lane, self._lanes]
        start = 0
        while True:
            async with self._server():
                looked = int(await self._adopt(keys=keys, args=[start]))
            if not looked:
                break
            start += looked
        self._adopted = True

    async def renew(
        self, item_id: str, owner: str, until: float, *, receipt: dict[str, Any] | None = None
    ) -> bool:
        text = "" if receipt is None else json.dumps(receipt, separators=(",", ":"))
        keys = [self._item + item_id, self._due, self._lane]
        async with self._server():
            return bool(await self._renew(keys=keys, args=[repr(until), owner, item_id, text]))

    async def complete(self, item_id: str, receipt: dict[str, Any] | None) -> None:
        text = "" if receipt is None else json.dumps(receipt, separators=(",", ":"))
        keys = [self._item + item_id, self._due, self._request, self._item, self._lane]
        async with self._server():
            await self._complete(keys=keys, args=[text, item_id, self._keep_ms, f".{ENDING}"])

    async def postpone(
        self, item_id: str, due: float, receipt: dict[str, Any] | None = None
    ) -> None:
        text = "" if receipt is None else json.dumps(receipt, separators=(",", ":"))
        async with self._server():
            await self._postpone(
                **self._once(
                    [self._item + item_id, self._due, self._lane], [repr(due), item_id, text]
                )
            )

    async def items_for(self, pending_id: str) -> list[OutboxItem]:
        async with self._server():
            raw = await self._items_for(keys=[self._request + pending_id, self._item, self._due])
        items = []
        for at in range(0, len(raw), 3):
            pairs = [_text(v) for v in raw[at + 1]]
            fields = dict(zip(pairs[::2], pairs[1::2], strict=True))
            due = _text(raw[at + 2])
            receipt = fields.get("receipt") or None
            items.append(
                OutboxItem(
                    item_id=_text(raw[at]),
                    pending_id=pending_id,
                    due=float(due) if due else 0.0,
                    body=json.loads(fields["body"]),
                    attempts=int(fields["attempts"]),
                    created=float(fields["created"]),
                    done=fields.get("done") == "1",
                    receipt=None if receipt is None else json.loads(receipt),
                )
            )
        return items

    async def next_due(self, lanes: Collection[str] | None = None) -> float | None:
        sets = [self._due] if lanes is None else [self._lane + lane for lane in lanes]
        async with self._server():
            pipe = self._client.pipeline(transaction=False)
            for name in sets:
                pipe.zrange(name, 0, 0, withscores=True)
            firsts = await pipe.execute()
        return min((float(first[0][1]) for first in firsts if first), default=None)

    async def unended(self) -> list[str]:
        async with self._server():
            members = await self._client.smembers(self._unended)
        return [_text(i) for i in members]

    async def purge(self, before: float) -> int:
        # Done items expire on their own (see the module docstring).
        return 0

    async def aclose(self) -> None:
        """The client is the store's: the store closes it."""
