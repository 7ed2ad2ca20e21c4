"""The Redis store's trail: its chains, signed heads and checkpoints, read and written.

Each chain's signed head is the hash ``P:ha:<id>`` that every script appending to the chain
writes (:mod:`~roomkit.stores.redis._history`), and adds to the set
``P:hd``, the heads the next checkpoint takes. ``P:cp`` is the list of checkpoints, each the
JSON array ``[n, text, signature]``. A checkpoint is read (the set, each head in it, the
last checkpoint) and then written by :data:`CHECKPOINT`, a compare-and-set on the list's
length: when another writer came first the script writes nothing and the checkpoint is
planned again. It signs each head it took again with its number, and takes it out of the
set, while the head is still the one read; a head appended to meanwhile stays for the next.

The trail is read chain by chain, each chain's entries and head in one transaction (so
that the two agree), between two reads of the checkpoints: when a checkpoint came in
between, everything is read again.

Its stream reads the checkpoints and the chains' ids first, then a page of chains at a time,
each chain's entries and head in one transaction as above: Redis has no snapshot across
pages, so a chain appended to meanwhile is read as it is when its page is read (its entries
and head agreeing), a chain deleted meanwhile is missing and one created meanwhile absent.
A checkpoint written meanwhile is read once the last page is (``TrailPages.later``), so that
a head it signed again is not taken for one whose checkpoint was deleted.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any

from redis.asyncio import Redis

from roomkit.core.exceptions import StoreError
from roomkit.stores._audit_keys import AuditKeys
from roomkit.stores._checkpoints import plan_checkpoint, report, signing_keys
from roomkit.stores._durable_base import DurableBase
from roomkit.stores._trail import (
    Anchoring,
    ChainRead,
    Checkpoint,
    CheckpointReport,
    Head,
    HeadChange,
    Trail,
    TrailPages,
    head_value,
    read_head,
    stored_text,
)
from roomkit.stores._trail_check import unsigned_heads
from roomkit.stores.redis._link import describe, glob_escape, guard, text
from roomkit.stores.redis._scripts import Layout

__all__ = ["ADOPT", "CHECKPOINT", "RedisTrail"]

CHECKPOINT = """
-- KEYS: the checkpoints, the heads to checkpoint
-- ARGV: the checkpoints' length as read, the checkpoint ('' for none), then for each head
--       read: its key, its chain's key, its value as read ('' when it was gone), its value
--       signed again ('' to leave it)
if redis.call('LLEN', KEYS[1]) ~= tonumber(ARGV[1]) then
  return 0
end
if ARGV[2] ~= '' then
  redis.call('RPUSH', KEYS[1], ARGV[2])
end
for i = 3, #ARGV, 4 do
  local key, chain = ARGV[i], ARGV[i + 1]
  local now = redis.call('HGET', key, 'v')
  if ARGV[i + 3] ~= '' and (now or redis.call('EXISTS', chain) == 1) then
    -- Listed now, even if it moved since, or an append without the key dropped its head
    -- (which adoption signs again): the next checkpoint takes it as seen. A head made here
    -- lasts as long as its chain.
    local made = redis.call('EXISTS', key) == 0
    redis.call('HSET', key, 'c', '1')
    if made and redis.call('PTTL', chain) > 0 then
      redis.call('PEXPIRE', key, redis.call('PTTL', chain))
    end
  end
  if (now or '') == ARGV[i + 2] then
    if ARGV[i + 3] ~= '' then
      redis.call('HSET', key, 'v', ARGV[i + 3])
    end
    redis.call('SREM', KEYS[2], key)
  end
end
return 1
"""

ADOPT = """
-- KEYS: history list, signed head, heads to checkpoint
-- ARGV: the history's length as read, its head signed as it stands
if redis.call('LLEN', KEYS[1]) ~= tonumber(ARGV[1]) or redis.call('HEXISTS', KEYS[2], 'v') == 1 then
  return 0
end
redis.call('HSET', KEYS[2], 'v', ARGV[2])
redis.call('SADD', KEYS[3], KEYS[2])
local ttl = redis.call('PTTL', KEYS[1])
if ttl > 0 then
  redis.call('PEXPIRE', KEYS[2], ttl)
end
return 1
"""

_TURNS = 8
"""Times a read or a checkpoint starts again because another checkpoint came first."""
_BATCH = 256
"""Chains read in one transaction."""
_SCAN_BATCH = 1000
"""Keys the server looks at in one step of the scan for the chains: its default, ten, makes
a read cost a round trip per ten keys of the whole database, however few hold chains."""


class RedisTrail:
    """The trail of one Redis store.

    Args:
        client: the store's client.
        layout: the store's key layout.
        store: the store (its audit retention is recorded in its checkpoints, and its clock
            gives their time).
        ready: opens the store (lazily), or refuses once it was closed.
    """

    def __init__(
        self,
        client: Redis,
        layout: Layout,
        store: DurableBase,
        ready: Callable[[], Awaitable[None]],
    ) -> None:
        self.anchoring = Anchoring.from_environment()
        """What the store signs the heads it writes with."""
        self._client = client
        self._layout = layout
        self._store = store
        self._ready = ready
        self._where = describe(client)
        self._script = client.register_script(CHECKPOINT)
        self._adopt = client.register_script(ADOPT)

    def use_keys(self, keys: AuditKeys | None) -> None:
        """Sign with ``keys`` from now on (``None``: write heads unsigned)."""
        self.anchoring.keys = keys

    async def read(self) -> Trail:
        """The chains, heads and checkpoints, each chain with its head as one read."""
        await self._ready()
        # A bulk call: as long as the chains take, each round trip on the client's timeout.
        async with guard(self._where, within=None):
            for _ in range(_TURNS):
                trail = await self._read_once()
                if await self._client.llen(self._layout.checkpoints) == len(trail.checkpoints):
                    break
        return self.anchoring.read(trail)

    async def _read_once(self) -> Trail:
        trail = Trail(checkpoints=await self._checkpoints())
        async for page in self._pages(await self._ids(), _BATCH):
            for pending_id, rows, head in page:
                if rows:
                    trail.chains[pending_id] = rows
                if head is not None:
                    trail.heads[pending_id] = head
        return trail

    @asynccontextmanager
    async def stream(self, *, page: int = _BATCH) -> AsyncIterator[TrailPages]:
        """The chains, heads and checkpoints, ``page`` chains at a time: each chain with its
        head as one read, the pages one after the other (see the module docstring for what
        an append or a checkpoint meanwhile does). What it holds besides a page is each
        request's id."""
        await self._ready()
        # A bulk call: as long as the chains take, each round trip on the client's timeout.
        async with guard(self._where, within=None):
            checkpoints = await self._checkpoints()
            for checkpoint in checkpoints:
                self.anchoring.knew(checkpoint.n)
            later: list[Checkpoint] = []
            pages = self._then_later(later, len(checkpoints), await self._ids(), page)
            yield TrailPages(checkpoints, set(), pages, later)

    async def _then_later(
        self, later: list[Checkpoint], known: int, ids: list[tuple[str, bytes]], page: int
    ) -> AsyncIterator[list[ChainRead]]:
        """The pages of ``ids``; once the last is read, the checkpoints after the first
        ``known`` (written meanwhile) go to ``later``."""
        async for chains in self._pages(ids, page):
            yield chains
        later.extend((await self._checkpoints())[known:])

    async def _checkpoints(self) -> list[Checkpoint]:
        items = await self._client.lrange(self._layout.checkpoints, 0, -1)
        return [_checkpoint(item) for item in items]

    async def _ids(self) -> list[tuple[str, bytes]]:
        """Each chain's and each head's id, as read back and as the bytes stored, in the
        order of the ids as read back."""
        layout, client = self._layout, self._client
        # Ids, entries and heads are read as the bytes stored (an id is looked up by them):
        # bytes a hand edit left that are not UTF-8 are named by the check, never fail the read.
        ids: set[bytes] = set()
        for start in (f"{layout.prefix}:h:", layout.anchors):
            async for key in client.scan_iter(match=glob_escape(start) + "*", count=_SCAN_BATCH):
                ids.add(_raw(key)[len(start.encode()) :])
        return sorted((stored_text(raw_id), raw_id) for raw_id in ids)

    async def _pages(
        self, ids: list[tuple[str, bytes]], page: int
    ) -> AsyncIterator[list[ChainRead]]:
        """The chains and heads of ``ids``, in their order, ``page`` at a time."""
        chains, anchors = f"{self._layout.prefix}:h:".encode(), self._layout.anchors.encode()
        for first in range(0, len(ids), page):
            batch = ids[first : first + page]
            pipe = self._client.pipeline(transaction=True)
            for _, raw_id in batch:
                pipe.lrange(chains + raw_id, 0, -1)
                pipe.hget(anchors + raw_id, "v")
            replies = await pipe.execute()
            yield [
                ChainRead(
                    pending_id,
                    [(seq, stored_text(line)) for seq, line in enumerate(replies[2 * n] or ())],
                    None if replies[2 * n + 1] is None else read_head(replies[2 * n + 1]),
                )
                for n, (pending_id, _) in enumerate(batch)
            ]

    async def adopt(self) -> tuple[int, list[str]]:
        """Sign, as they stand, the heads of the chains that hold and have none signed (an
        append meanwhile leaves the chain as that append made it).

        Raises:
            AuditKeyError: the store holds no audit key.
        """
        signing_keys(self.anchoring)
        trail = await self.read()
        waiting = {p: rows for p, rows in trail.chains.items() if p not in trail.heads}
        signed, broken = unsigned_heads(waiting, self.anchoring)
        done = 0
        # A bulk call: as long as the chains take, each round trip on the client's timeout.
        async with guard(self._where, within=None):
            for pending_id, head in sorted(signed.items()):
                keys = self._layout.chain(pending_id)
                done += await self._adopt(keys=keys, args=[head.length, head_value(head)])
        return done, broken

    async def checkpoint(self) -> CheckpointReport:
        """Write a checkpoint of every head that changed since the last one.

        Raises:
            AuditKeyError: the store holds no audit key.
            CorruptRecordError: the last checkpoint does not hold its signature.
            StoreError: other checkpoints kept coming first.
        """
        keys = signing_keys(self.anchoring)
        await self._ready()
        layout, client = self._layout, self._client
        # A bulk call: as long as the chains take, each round trip on the client's timeout.
        async with guard(self._where, within=None):
            for _ in range(_TURNS):
                dirty = sorted(text(key) for key in await client.smembers(layout.dirty))
                pipe = client.pipeline(transaction=True)
                pipe.llen(layout.checkpoints).lindex(layout.checkpoints, 0)  # type: ignore[attr-defined]
                pipe.lindex(layout.checkpoints, -1)
                for key in dirty:
                    pipe.hmget(key, "v", "c")
                length, first, last, *heads = await pipe.execute()
                read = dict(zip(dirty, heads, strict=True))
                plan = plan_checkpoint(
                    None if last is None else _checkpoint(last),
                    [_change(layout, key, found) for key, found in read.items() if found[0]],
                    keys,
                    first=None if first is None else _checkpoint(first).n,
                    retention=self._store.audit_retention,
                    now=self._store.clock(),
                )
                args: list[Any] = [length, "" if plan.checkpoint is None else _item(plan)]
                for pending_id, _, signed in plan.taken:
                    chain, key, _ = layout.chain(pending_id)
                    args += (key, chain, text(read[key][0]), head_value(signed))
                for key, (value, _) in read.items():
                    if value is None:
                        args += (key, "", "", "")  # gone with its history: nothing to take
                if await self._script(keys=[layout.checkpoints, layout.dirty], args=args):
                    break
            else:
                raise StoreError(f"other checkpoints kept coming first at {self._where}")
        if plan.checkpoint is not None:
            self.anchoring.knew(plan.checkpoint.n)
        return report(plan)


def _change(layout: Layout, key: str, found: list[Any]) -> HeadChange:
    head = read_head(text(found[0])) or Head(0, "", -1, None)
    return HeadChange(key[len(layout.anchors) :], head, found[1] is not None)


def _item(plan: Any) -> str:
    checkpoint = plan.checkpoint
    return json.dumps([checkpoint.n, checkpoint.text, checkpoint.mac], ensure_ascii=False)


def _checkpoint(item: Any) -> Checkpoint:
    """A checkpoint as the list holds it; one that is not, as a checkpoint that cannot hold."""
    try:
        n, body, mac = json.loads(item)
    except (TypeError, ValueError, RecursionError):
        return Checkpoint(-1, stored_text(item), "")
    if type(n) is not int or not isinstance(body, str) or not isinstance(mac, str):
        return Checkpoint(-1, stored_text(item), "")
    return Checkpoint(n, body, mac)


def _raw(value: Any) -> bytes:
    """A reply as bytes, whether the client decodes replies or not."""
    return value if isinstance(value, bytes) else str(value).encode()
