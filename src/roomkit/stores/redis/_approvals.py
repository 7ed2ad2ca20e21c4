"""The Redis store's approvals part: approvers, votes and the requests' history chains.

A vote is one script with its history entries and, when it decides, the settle
(:mod:`._votes`); an append is a check-and-set on the chain's head, guessed from the last
append made here and linked again to the head the script hands back when another process
moved it (:mod:`._history`).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from redis.asyncio import Redis

from roomkit.models.pending_input import PendingInput
from roomkit.stores._history import entry_text
from roomkit.stores._quorum import Ballot, Judgement
from roomkit.stores.redis import _history
from roomkit.stores.redis._batch import ScriptBatcher
from roomkit.stores.redis._layout import Layout
from roomkit.stores.redis._link import guard, text
from roomkit.stores.redis._votes import Voting

__all__ = ["Approvals"]


class Approvals:
    """Approvers, votes and history on one store's client.

    Args:
        client: the store's client.
        layout: the store's key layout.
        where: the server, for error messages.
        heads: this process's last head of each chain.
        audit_ms: the store's audit retention as the scripts take it.
        fetch: the store's read of one record.
    """

    def __init__(
        self,
        client: Redis,
        layout: Layout,
        where: str,
        heads: _history.Heads,
        audit_ms: int | str,
        fetch: Callable[[str], Awaitable[PendingInput | None]],
    ) -> None:
        self._client = client
        self._layout = layout
        self._where = where
        self._heads = heads
        self._audit_ms = audit_ms
        self._fetch = fetch
        self._set_approvers = client.register_script(_history.SET_APPROVERS)
        self._append = ScriptBatcher(client, client.register_script(_history.APPEND))
        self.voting = Voting(client, layout, where, heads, audit_ms)
        """The votes' script."""

    async def add_approvers(self, pending_id: str, actors: tuple[str, ...]) -> PendingInput | None:
        """Add ``actors`` to the pending request's approvers; ``None`` when not pending."""
        key = self._layout.record(pending_id)
        while True:
            with guard(self._where, pending_id):
                raw = await self._client.hmget(key, ["approvers", "voters", "quorum"])
            written = _history.set_approvers_args([text(v) if v else "" for v in raw], actors)
            with guard(self._where, pending_id):
                done = await self._set_approvers(keys=[key], args=written)
            if isinstance(done, bytes | str):  # another escalation came first: read again
                continue
            return await self._fetch(pending_id) if int(done) else None

    async def vote(
        self,
        pending_id: str,
        ballot: Ballot,
        clock: Callable[[], float],
        keep: float,
        expire: Callable[[Judgement], Awaitable[object]],
    ) -> Judgement:
        """One attempt at recording ``ballot``, as :meth:`Voting.cast <._votes.Voting.cast>`."""
        return await self.voting.cast(pending_id, ballot, clock, keep, expire)

    async def append_history(self, pending_id: str, entry: dict[str, Any]) -> int:
        """Append ``entry`` to the request's chain, linked again when the head moved; its seq."""
        entry_text(entry)  # not JSON-serialisable: the TypeError comes before the write
        keys = [self._layout.record(pending_id), *self._layout.chain(pending_id)]
        length, head = self._heads.guess(pending_id)
        while True:
            lines, after, signed = self._heads.link(pending_id, (entry,), (length, head))
            with guard(self._where, pending_id):
                done = await self._append(keys, [length, self._audit_ms, signed, *lines])
            if not isinstance(done, list):
                break
            length, head = _history.Heads.moved(pending_id, done)
        self._heads.wrote(pending_id, length + 1, after)
        return length

    async def read_history(self, pending_id: str) -> list[dict[str, Any]]:
        """The request's history, oldest first."""
        with guard(self._where, pending_id):
            return await _history.read_chain(self._client, self._layout.prefix, pending_id)
