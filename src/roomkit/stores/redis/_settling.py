"""The Redis store's settle: one Lua script, as durable as the server's ``appendfsync``.

The script writes the outcome with its settle token and its history entries, linked to the
head this process believes in; when that head moved, or the deadline came first and its
entry is needed, the script writes nothing and says so, and the settle is linked again and
run again. A reply lost to a fault runs the script again with the token, which finds the
record it settled before.
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
from roomkit.stores.redis._link import guard, text
from roomkit.stores.redis._part import ChainPart

__all__ = ["Knowing", "Settling", "unreadable"]

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

    def __post_init__(self) -> None:
        # Pipelines of at most 128, 8 at once: the client encodes one while the server runs
        # another (bench/bench_stores.py: settles/s up by a third to a half over one of 256).
        script = self.client.register_script(scripts.SETTLE)
        self._settle = ScriptBatcher(self.client, script, max_batch=128, max_in_flight=8)

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
        """Settle the request at ``now``, kept ``keep`` seconds; the record if this call won."""
        entries = outcome.history
        head = self.heads.guess(pending_id)
        wins, after, signed = self.heads.link(pending_id, entries, head)
        late: tuple[list[str], str, str] | None = None  # the deadline's entry, once needed
        keys = self.layout.settle_keys(pending_id)

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
                    reply = await self._settle(keys, args)
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
