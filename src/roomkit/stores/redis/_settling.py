"""The Redis store's settle: one Lua script, as durable as the server's ``appendfsync``.

The script writes the outcome with its settle token and its history entries, linked to the
head this process believes in; when that head moved, or the deadline came first and its
entry is needed, the script writes nothing and says so, and the settle is linked again and
run again. A reply lost to a fault runs the script again with the token, which finds the
record it settled before.

The settle of an approval that makes a standing grant runs :data:`SETTLE_GRANTING`: the
settle's script, which records the grant (:data:`~._grants.WRITE_GRANT`) with an outcome
that wins, so that the approval and its grant land on the server together or not at all.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from roomkit.core.exceptions import CorruptRecordError
from roomkit.models.pending_input import PendingInput, PendingInputStatus
from roomkit.stores._checks import Outcome
from roomkit.stores._records import FORMAT, decode
from roomkit.stores.base import PendingChange, PendingChangeKind
from roomkit.stores.redis import _history
from roomkit.stores.redis import _scripts as scripts
from roomkit.stores.redis._batch import ScriptBatcher
from roomkit.stores.redis._feed import ChangeFeed
from roomkit.stores.redis._grants import WRITE_GRANT, grant_args
from roomkit.stores.redis._link import guard, text
from roomkit.stores.redis._part import ChainPart

__all__ = ["SETTLE_GRANTING", "Knowing", "Settling", "unreadable"]

SETTLE_GRANTING = scripts.settle_script(
    WRITE_GRANT
    + """
-- KEYS: the settle's, then the grant's hash and the grants' index
-- ARGV: the settle's, then the grant's (grant_args)
local grant_keys, grant = {KEYS[#KEYS - 1], KEYS[#KEYS]}, {unpack(ARGV, #ARGV - 5, #ARGV)}
local KEYS, ARGV = {unpack(KEYS, 1, #KEYS - 2)}, {unpack(ARGV, 1, #ARGV - 6)}
""",
    "  write_grant(grant_keys[1], grant_keys[2], grant, ARGV[7])\n",
)
""":data:`~._scripts.SETTLE`, recording the grant its keys and arguments end with, made at
the settle's now, when the outcome wins (a grant with its id recorded already is left as
it is)."""

Knowing = Callable[[Callable[[], Awaitable[Any]], str, str], Awaitable[Any]]
"""Runs an attempt (with the request's id and the server) until the store answers."""


@dataclass(slots=True, eq=False)
class Settling(ChainPart):
    """The settles of one store, on its client."""

    feed: ChangeFeed
    """The store's change feed, told of each settle."""
    knowing: Knowing
    """Runs an attempt again after a fault hid its reply."""
    _settle: ScriptBatcher = field(init=False)
    _granting: ScriptBatcher = field(init=False)

    def __post_init__(self) -> None:
        # Pipelines of at most 128, 8 at once: the client encodes one while the server runs
        # another (bench/bench_stores.py: settles/s up by a third to a half over one of 256).
        script = self.client.register_script(scripts.SETTLE)
        self._settle = ScriptBatcher(self.client, script, max_batch=128, max_in_flight=8)
        self._granting = ScriptBatcher(self.client, self.client.register_script(SETTLE_GRANTING))

    async def settle(
        self,
        pending_id: str,
        status: PendingInputStatus,
        token: str,
        outcome: Outcome,
        *,
        now: float,
        keep: float,
    ) -> PendingInput | None:
        """Settle the request at ``now``, kept ``keep`` seconds; the record if this call won.
        A win records ``outcome.grant`` (when there is one) in the same script."""
        entries = outcome.history
        head = self.heads.guess(pending_id)
        wins, after, signed = self.heads.link(pending_id, entries, head)
        late: tuple[list[str], str, str] | None = None  # the deadline's entry, once needed
        keys = self.layout.settle_keys(pending_id)
        script, granted = self._settle, []
        if outcome.grant is not None:
            keys += self.layout.grant_keys(outcome.grant.grant_id)
            script, granted = self._granting, grant_args(outcome.grant)

        async def attempt() -> Any:
            nonlocal head, wins, after, signed, late
            while True:
                args = scripts.settle_args(
                    self.layout,
                    pending_id,
                    status,
                    outcome,
                    now=now,
                    retention_seconds=keep,
                    token=token,
                    history=(head[0], wins, None if late is None else late[0][0]),
                    audit_ms=self.audit_ms,
                    heads=(signed, "" if late is None else late[2]),
                )
                async with guard(self.where, pending_id, within=self.within):
                    reply = await script(keys, [*args, *granted])
                if isinstance(reply, list):
                    head = _history.Heads.moved(pending_id, reply)
                    wins, after, signed = self.heads.link(pending_id, entries, head)
                    late = None if late is None else self.heads.late(pending_id, head)
                elif isinstance(reply, bytes | str) and text(reply) == scripts.LATE:
                    late = self.heads.late(pending_id, head)
                else:
                    return reply

        reply = await self.knowing(attempt, pending_id, self.where)
        if reply is None:
            return None
        answer = text(reply)
        if answer == scripts.CORRUPT:
            raise unreadable(pending_id, self.where)
        self.feed.emit(PendingChange(PendingChangeKind.SETTLED, pending_id))
        if answer == scripts.LOST_TO_DEADLINE:
            if late is not None:
                self.heads.wrote(pending_id, head[0] + 1, late[1])
            return None
        if wins:
            self.heads.wrote(pending_id, head[0] + len(wins), after)
        return decode(scripts.unpack(reply), hashed=True)


def unreadable(pending_id: str, where: str) -> CorruptRecordError:
    """The error for a record the scripts found unreadable."""
    return CorruptRecordError(
        f"pending record {pending_id!r} at {where} is not a readable {FORMAT} record"
    )
