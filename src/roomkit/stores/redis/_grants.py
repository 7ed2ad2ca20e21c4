"""The Redis store's standing grants: keys of their own under the store's prefix.

- ``<prefix>:grants:item:<id>``: a hash (``tool``, ``expires_at``, ``max_uses`` — empty for
  none —, ``uses``, ``created_at``, ``revoked_at`` and ``revoked_by`` — empty while it
  stands —, ``body``);
- ``<prefix>:grants:all``: a sorted set of the ids, scored by creation time.

Every change is one script, so a use is a check-and-set among every process on the server;
the grant an approval makes is recorded by that approval's settle script
(:mod:`~roomkit.stores.redis._settling`, with the same :data:`WRITE_GRANT`). Each change
made here carries a token (:mod:`~roomkit.stores.redis._once`): sent again after its reply was
lost, it counts no second use and reports what it did. Times are on the store's clock,
passed in by the caller.
"""

from __future__ import annotations

import builtins
from contextlib import AbstractAsyncContextManager
from typing import Any

from roomkit.stores._checks import check_grant_text, check_revoker
from roomkit.stores._grant_rows import grant_from_row, readable_grants
from roomkit.stores.grants import LIST_LIMIT, Grant, ListingGrants, check_grant_id
from roomkit.stores.redis._layout import Layout
from roomkit.stores.redis._link import beside
from roomkit.stores.redis._once import once, with_token

__all__ = ["WRITE_GRANT", "RedisGrants", "grant_args"]

WRITE_GRANT = """
-- Records a grant at `item` and in the index `all`, made at `now`, unless its hash is there:
-- `grant` holds its id, tool, expires_at, max_uses ('' for none), uses and body
-- (grant_args). 1 when it was written, 0 when it was there already.
local function write_grant(item, all, grant, now)
  if redis.call('EXISTS', item) == 1 then
    return 0
  end
  redis.call('HSET', item, 'tool', grant[2], 'expires_at', grant[3], 'max_uses', grant[4],
             'uses', grant[5], 'created_at', now, 'revoked_at', '', 'revoked_by', '',
             'body', grant[6])
  redis.call('ZADD', all, now, grant[1])
  return 1
end
"""
"""The Lua function that records a grant: :meth:`RedisGrants.add`'s, and the one the settle
of an approval that makes a grant calls when it wins."""

_ADD = once(
    WRITE_GRANT
    + """
-- KEYS: the grant's hash, the grants' index; ARGV: grant_args, then the store's now
return write_grant(KEYS[1], KEYS[2], ARGV, ARGV[7])
"""
)

_REVOKE = once("""
local revoked = redis.call('HGET', KEYS[1], 'revoked_at')
if revoked == false or revoked ~= '' then return 0 end
redis.call('HSET', KEYS[1], 'revoked_at', ARGV[1], 'revoked_by', ARGV[2])
return 1
""")

_USE = once("""
local h = redis.call('HMGET', KEYS[1], 'revoked_at', 'expires_at', 'max_uses', 'uses')
if h[1] == false or h[1] ~= '' then return false end
if tonumber(h[2]) <= tonumber(ARGV[1]) then return false end
if h[3] ~= '' and tonumber(h[4]) >= tonumber(h[3]) then return false end
redis.call('HINCRBY', KEYS[1], 'uses', 1)
return 1
""")

_FIELDS = ("tool", "expires_at", "max_uses", "uses", "created_at", "revoked_at", "revoked_by")


def grant_args(grant: Grant) -> list[Any]:
    """What :data:`WRITE_GRANT` takes of ``grant``: its id, tool, expiry, most uses (``''``
    for none), uses and body."""
    most = "" if grant.max_uses is None else str(grant.max_uses)
    return [grant.grant_id, grant.tool, repr(grant.expires_at), most, grant.uses, grant.body()]


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def _grant(grant_id: str, values: list[Any]) -> Grant | None:
    """The grant ``grant_id`` from the values of its hash's fields (``None``: no hash)."""
    if values[0] is None:
        return None
    texts = [None if value is None else _text(value) for value in values]
    tool, expires, most, uses, created, revoked, revoked_by, body = texts
    return grant_from_row(
        (
            grant_id,
            tool,
            expires,
            most or None,
            uses,
            created,
            revoked or None,
            revoked_by or None,
            body,
        )
    )


class RedisGrants(ListingGrants):
    """The grants on a Redis store's server (see :mod:`~roomkit.stores.grants`)."""

    def __init__(self, store: Any) -> None:
        client = store._client  # the store's own client: same server, same pool
        self._store = store
        self._client = client
        self._layout = layout = Layout(store.prefix)
        self._item = layout.grant_items
        self._add = client.register_script(_ADD)
        self._revoke = client.register_script(_REVOKE)
        self._use = client.register_script(_USE)

    def clock(self) -> float:
        """The store's clock: grants expire on it."""
        return float(self._store.clock())

    def _server(self) -> AbstractAsyncContextManager[None]:
        return beside(self._store, "Redis grants")

    def _once(self, keys: builtins.list[str], args: builtins.list[Any]) -> dict[str, Any]:
        """The arguments of a call of a script run once per token, with a token of its own."""
        keys, args = with_token(self._store.prefix, keys, args, within=self._store.timeout)
        return {"keys": keys, "args": args}

    async def _read(self, grant_id: str) -> Grant | None:
        values = await self._client.hmget(self._item + grant_id, [*_FIELDS, "body"])
        return _grant(grant_id, values)

    async def add(self, grant: Grant) -> Grant:
        check_grant_text(grant)
        keys = self._layout.grant_keys(grant.grant_id)
        async with self._server():
            added = await self._add(**self._once(keys, [*grant_args(grant), repr(self.clock())]))
            if not added:
                raise ValueError(f"grant {grant.grant_id!r} is recorded already")
            recorded = await self._read(grant.grant_id)
        assert recorded is not None
        return recorded

    async def get(self, grant_id: str) -> Grant | None:
        check_grant_id(grant_id)
        async with self._server():
            return await self._read(grant_id)

    async def _newest(
        self, tool: str | None, live: bool, limit: int | None
    ) -> builtins.list[Grant]:
        now = self.clock()
        found: builtins.list[Grant] = []
        async with self._server():
            start = 0
            # Newest first, a page at a time, until the limit is met or the ids run out.
            while limit is None or len(found) < limit:
                ids = await self._client.zrevrange(
                    self._layout.grants, start, start + LIST_LIMIT - 1
                )
                if not ids:
                    break
                start += len(ids)
                for grant in await self._read_many([_text(grant_id) for grant_id in ids]):
                    if tool is not None and grant.tool != tool:
                        continue
                    if not live or grant.live(now):
                        found.append(grant)
        return found if limit is None else found[:limit]

    async def _read_many(self, grant_ids: builtins.list[str]) -> builtins.list[Grant]:
        """The grants ``grant_ids`` that are there and can be read, read in one round trip."""
        async with self._client.pipeline(transaction=False) as pipe:
            for grant_id in grant_ids:
                pipe.hmget(self._item + grant_id, [*_FIELDS, "body"])
            replies = await pipe.execute()
        return readable_grants(zip(grant_ids, replies, strict=True), lambda row: _grant(*row))

    async def revoke(self, grant_id: str, *, by: str | None = None) -> bool:
        check_grant_id(grant_id)
        check_revoker(by)
        async with self._server():
            done = await self._revoke(
                **self._once([self._item + grant_id], [repr(self.clock()), by or ""])
            )
        return bool(done)

    async def use(self, grant_id: str) -> Grant | None:
        check_grant_id(grant_id)
        async with self._server():
            used = await self._use(**self._once([self._item + grant_id], [repr(self.clock())]))
            if not used:
                return None
            return await self._read(grant_id)
