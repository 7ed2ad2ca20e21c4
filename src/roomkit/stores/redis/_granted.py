"""The Redis store's insert of a request a standing grant covers: the grant's use and the
request, in one script.

The script makes the insert's checks first (the key's holder, which it returns untouched
with no use spent; an id stored already; a history head that moved), then the grant's
(unrevoked, unexpired on the store's clock, not used up), and writes only once they all
pass: the use and the request land together or not at all. The request's history is linked
and signed here, before the script runs, and its ``grant_used`` entry names the use it
takes: the script counts the use only while the grant holds the uses this process read
(a compare-and-set), and otherwise says so, and the grant is read again.
"""

from __future__ import annotations

import logging
from dataclasses import replace
from typing import Any

from roomkit.core.exceptions import StoreError
from roomkit.models.pending_input import PendingInput, PendingInputStatus
from roomkit.stores._checks import check_history, check_insertable
from roomkit.stores._records import decode
from roomkit.stores.grants import GrantedHistory, GrantedInsert, check_grant_id
from roomkit.stores.redis import _history
from roomkit.stores.redis import _inserts as inserts
from roomkit.stores.redis import _scripts as scripts
from roomkit.stores.redis._changes import NOTE_CHANGE
from roomkit.stores.redis._history import HEAD_MOVED
from roomkit.stores.redis._link import guard, text

__all__ = ["INSERT_GRANTED", "INSERT_GRANTED_SETTLED", "insert_granted"]

logger = logging.getLogger("roomkit.tools.human_input.stores.redis")

SPENT = "spent"
"""What the script returns when the grant covers nothing now (nothing was written)."""
USES = "uses"
"""What leads its reply when the grant's uses moved since they were read: ``[USES, uses]``."""

_USE_RACES = 64
"""Times the grant is read again because other processes used it first."""

_GRANT_CHECKS = (
    inserts.INSERT_CHECKS
    + """
local g = redis.call('HMGET', KEYS[8], 'revoked_at', 'expires_at', 'max_uses', 'uses')
if g[1] == false or g[1] ~= '' or tonumber(g[2]) <= now then
  return 'spent'
end
if g[3] ~= '' and tonumber(g[4]) >= tonumber(g[3]) then
  return 'spent'
end
if tonumber(g[4]) ~= read_uses then
  return {'uses', g[4]}
end
redis.call('HINCRBY', KEYS[8], 'uses', 1)
"""
)


def _script(settled: bool) -> str:
    """The script of a granted insert: of a pending request, or of one ``settled`` as it is
    made (``INSERT_SETTLED``'s arguments before the grant's)."""
    after = 2 + (inserts.SETTLED_ARGS if settled else 0)
    return (
        HEAD_MOVED
        + NOTE_CHANGE
        + f"""
-- KEYS: as INSERT's, the grant's hash in place of the key index, then the key index
-- ARGV: as INSERT's, then the store's now and the grant's uses as the caller read them
local keyed, last, settled = KEYS[9], #ARGV - {after}, {"true" if settled else "false"}
local now, read_uses = tonumber(ARGV[#ARGV - 1]), tonumber(ARGV[#ARGV])
"""
        + _GRANT_CHECKS
        + (inserts.SETTLED_WRITES if settled else "")
        + inserts.INSERT_WRITES
    )


INSERT_GRANTED = _script(settled=False)
INSERT_GRANTED_SETTLED = _script(settled=True)
""":data:`INSERT_GRANTED` of a request the grant settles as it is made."""


async def insert_granted(
    store: Any, request: PendingInput, grant_id: str, history: GrantedHistory
) -> GrantedInsert | None:
    """:meth:`~roomkit.stores.grants.InsertsGranted.insert_granted` on the Redis ``store``.

    Raises:
        ValueError, TypeError, InvalidTextError, StoreError: as the store's ``insert``;
            the use is not counted.
        StoreUnavailableError: the server cannot be reached.
    """
    settled = request.status is not PendingInputStatus.PENDING
    check_insertable(request, settled=settled)
    check_grant_id(grant_id)
    await store._ensure_open()
    grants = store.grants
    pending_id = request.pending_id
    heads = store._heads
    head = heads.guess(pending_id)
    for _ in range(_USE_RACES):
        async with guard(store._where, within=store.timeout):
            read = await grants._read(grant_id)
        now = store.clock()
        if read is None or not read.live(now):
            return None
        grant = replace(read, uses=read.uses + 1)
        entries = check_history(history(grant))
        while True:
            lines, after, signed = heads.link(pending_id, entries, head)
            keys, args, fields = inserts.insert_call(
                store._layout,
                request,
                store._cutoff(),
                (head[0], lines, signed),
                store._settling_at(now) if settled else None,
            )
            # The grant's hash goes where the key index is, and the index (if any) after it.
            keys.insert(7, grants._item + grant_id)
            script = store._insert_granted_settled if settled else store._insert_granted
            async with guard(store._where, within=store.timeout):
                reply = await script(keys=keys, args=[*args, repr(now), read.uses])
            if not (isinstance(reply, list) and text(reply[0]) == inserts.HEAD):
                break
            head = _history.Heads.moved(pending_id, reply[1])
        if isinstance(reply, list) and text(reply[0]) == USES:
            continue  # another process used the grant since it was read: read it again
        if isinstance(reply, bytes | str):
            if text(reply) == SPENT:
                return None
            raise StoreError(f"pending record {pending_id!r} is already stored at {store._where}")
        created = bool(int(reply[0]))
        record = decode(scripts.unpack(reply[1]) if len(reply) > 1 else fields, hashed=True)
        if not created:
            return GrantedInsert(record, False, None)
        if lines:
            heads.wrote(pending_id, head[0] + len(lines), after)
        store._created(record)
        return GrantedInsert(record, True, grant)
    # A grant in such demand only spares a question: the person is asked instead.
    logger.warning("grant %r kept being used by others: asking a person instead", grant_id)
    return None
