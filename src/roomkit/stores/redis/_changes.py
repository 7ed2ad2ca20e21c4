"""The Redis store's change log: which requests changed since a look, in one round trip.

``P:changes`` is a sorted set of request ids, each scored by the number of its last change;
``P:changes:seq`` counts the changes, and ``P:changes:epoch`` holds the server's time when
the count began (a count that starts again, on a server that lost its data, starts a new
epoch, so that a mark from the old one is not taken for a place in the new). Every script
that creates, settles, votes on or brings forward the deadline of a request calls
:data:`NOTE_CHANGE` in its own run, so the change and its number are one atomic step on the
server (scripts run one at a time, so the numbers are in the order the changes were made,
and a look never misses one made before it). The set
holds the last :data:`LOG_SIZE` ids; when it grows past that the oldest goes, and
``P:changes:floor`` keeps the highest number dropped, so that a look from before it knows it
cannot tell what changed. Deleting the log whole is safe at any time: the next change starts
a new epoch, and a look from before it cannot tell what changed (its reader reads what it
waits on).

:func:`changes_since` reads the counter, the floor and the ids scored above the mark in one
transaction: while nothing moves, it finds no id and reads no record.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from redis.asyncio import Redis

from roomkit.stores._durable_base import LISTED
from roomkit.stores.base import ChangeMark, ChangesSince
from roomkit.stores.redis._link import guard, text

__all__ = ["LOG_SIZE", "NOTE_CHANGE", "changes_since", "log_keys"]

LOG_SIZE = 4 * LISTED
"""The most ids the change log holds."""

NOTE_CHANGE = f"""
-- The change of request `id`, numbered, in the change log `log` (see _redis_changes).
local function note_change(log, id)
  local seq = redis.call('INCR', log .. ':seq')
  if seq == 1 then
    local now = redis.call('TIME')
    redis.call('SET', log .. ':epoch', now[1] .. string.format('%06d', tonumber(now[2])))
  end
  redis.call('ZADD', log, seq, id)
  if redis.call('ZCARD', log) > {LOG_SIZE} then
    local oldest = redis.call('ZPOPMIN', log)
    redis.call('SET', log .. ':floor', oldest[2])
  end
end
"""
"""The Lua function a script that changes a request starts with, and calls once it wrote."""


async def changes_since(
    ready: Callable[[], Awaitable[None]],
    client: Redis,
    log: str,
    server: tuple[str, float],
    mark: ChangeMark | None,
) -> ChangesSince:
    """The requests changed since ``mark``'s number, and the number now.

    Args:
        ready: opens the store, or raises when it is closed.
        client: the store's client.
        log: the key of the store's change log.
        server: the server, for error messages, and the seconds the read may wait for it.
        mark: the mark of the previous look, or ``None`` for a first look.
    """
    await ready()
    after = "+inf" if mark is None else f"({mark[0]}"
    pipe = client.pipeline(transaction=True)
    pipe.get(f"{log}:seq").get(f"{log}:epoch").get(f"{log}:floor")  # type: ignore[attr-defined]
    pipe.zrangebyscore(log, after, "+inf", start=0, num=LISTED + 1)
    async with guard(server[0], within=server[1]):
        counter, epoch, floor, ids = await pipe.execute()
    now = (int(counter or 0), int(epoch or 0))
    named = frozenset(text(pending_id) for pending_id in ids)
    # Another epoch, or a count below the mark's: the server lost changes (a restart without
    # persistence), and the numbers since may name other changes than the mark's did.
    known = (
        mark is not None
        and (mark[1:] == now[1:] or mark == (0, 0))  # (0, 0): before the first change
        and mark[0] <= now[0]
        and int(floor or 0) <= mark[0]
        and len(named) <= LISTED
    )
    return ChangesSince(now, named if known else None)


def log_keys(log: str) -> list[str]:
    """Every key of the change log ``log``."""
    return [log, f"{log}:seq", f"{log}:epoch", f"{log}:floor"]
