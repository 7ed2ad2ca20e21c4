"""The Redis store's approvals part: approvers, votes and the requests' history chains.

A vote is one script with its history entries and, when it decides, the settle
(:mod:`._votes`); an append is a check-and-set on the chain's head, guessed from the last
append made here and linked again to the head the script hands back when another process
moved it (:mod:`._history`); an append at a given seq checks that seq and the request's
status in its script, and writes only while both stand (with the outbox items it owes
people, when it owes some: the outbox's keys are on the same server).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from redis.commands.core import AsyncScript

from roomkit.models.pending_input import PendingInput
from roomkit.stores._approvals import ApprovalsPart
from roomkit.stores._records import FORMAT
from roomkit.stores.outbox import ENDING, OutboxItem
from roomkit.stores.redis import _history
from roomkit.stores.redis._batch import ScriptBatcher
from roomkit.stores.redis._link import guard, text
from roomkit.stores.redis._once import with_token
from roomkit.stores.redis._outbox import item_args, outbox_keys
from roomkit.stores.redis._part import ChainPart
from roomkit.stores.redis._votes import Voting

__all__ = ["Approvals"]


@dataclass(slots=True, eq=False)
class Approvals(ChainPart, ApprovalsPart):
    """Approvers, votes and history on one store's client."""

    fetch: Callable[[str], Awaitable[PendingInput | None]]
    """The store's read of one record."""
    voting: Voting = field(init=False)
    """The votes' script."""
    _set_approvers: AsyncScript = field(init=False)
    _set_approvers_logged: AsyncScript = field(init=False)
    _append: ScriptBatcher = field(init=False)
    _append_at: AsyncScript = field(init=False)
    _append_at_noticed: AsyncScript = field(init=False)

    def __post_init__(self) -> None:
        client = self.client
        self.voting = Voting(
            client, self.layout, self.where, self.within, self.heads, self.audit_ms
        )
        self._set_approvers = client.register_script(_history.SET_APPROVERS)
        self._set_approvers_logged = client.register_script(_history.SET_APPROVERS_LOGGED)
        self._append = ScriptBatcher(client, client.register_script(_history.APPEND))
        self._append_at = client.register_script(_history.APPEND_AT)
        self._append_at_noticed = client.register_script(_history.APPEND_AT_NOTICED)

    async def add_approvers(
        self, pending_id: str, actors: tuple[str, ...], entry: dict[str, Any] | None = None
    ) -> PendingInput | None:
        """Add ``actors`` to the pending request's approvers, and append ``entry`` to its
        history in the same script; ``None`` when not pending."""
        if entry is not None:
            return await self._add_approvers_logged(pending_id, actors, entry)
        key = self.layout.record(pending_id)
        while True:
            async with guard(self.where, pending_id, within=self.within):
                raw = await self.client.hmget(key, ["approvers", "voters", "quorum"])
            written = _history.set_approvers_args([text(v) if v else "" for v in raw], actors)
            async with guard(self.where, pending_id, within=self.within):
                done = await self._set_approvers(keys=[key], args=written)
            if isinstance(done, bytes | str):  # another escalation came first: read again
                continue
            return await self.fetch(pending_id) if int(done) else None

    async def _add_approvers_logged(
        self, pending_id: str, actors: tuple[str, ...], entry: dict[str, Any]
    ) -> PendingInput | None:
        """:meth:`add_approvers` with its entry: read again while another escalation or
        append moved the approvers or the chain first."""
        key = self.layout.record(pending_id)
        keys = [key, *self.layout.chain(pending_id)]
        length, head = self.heads.guess(pending_id)
        while True:
            async with guard(self.where, pending_id, within=self.within):
                raw = await self.client.hmget(key, ["approvers", "voters", "quorum"])
            written = _history.set_approvers_args([text(v) if v else "" for v in raw], actors)
            lines, after, signed = self.heads.link(pending_id, (entry,), (length, head))
            args = [*written, length, self.audit_ms, signed, *lines]
            # A token per attempt: the client's re-send of this one appends nothing more.
            sent_keys, sent_args = with_token(self.layout.prefix, keys, args, within=self.within)
            async with guard(self.where, pending_id, within=self.within):
                done = await self._set_approvers_logged(keys=sent_keys, args=sent_args)
            if isinstance(done, list):  # another append moved the chain: link again
                length, head = _history.Heads.moved(pending_id, done)
                continue
            if isinstance(done, bytes | str):  # another escalation came first: read again
                continue
            if not int(done):
                return None
            self.heads.wrote(pending_id, length + 1, after)
            return await self.fetch(pending_id)

    async def append_history(self, pending_id: str, entry: dict[str, Any]) -> int:
        """Append ``entry`` to the request's chain, linked again when the head moved; its seq."""
        return await self._appended(pending_id, entry, None)

    async def append_history_at(
        self, pending_id: str, entry: dict[str, Any], seq: int, notices: Sequence[OutboxItem]
    ) -> bool:
        """Append ``entry`` as entry ``seq`` of the pending request's chain, and add
        ``notices`` to the outbox, in one script that checks both; ``False``, with neither
        written, when the request is not pending or the chain is not ``seq`` long."""
        keys = [self.layout.record(pending_id), *self.layout.chain(pending_id)]
        script, told = self._append_at, []
        if notices:
            script = self._append_at_noticed
            keys += outbox_keys(self.layout.prefix)
            told = [f".{ENDING}", *item_args(notices)]
        length, head = self.heads.guess(pending_id)
        if length != seq:
            length = -1  # no chain is that long: the script hands back the head to link to
        while True:
            lines, after, signed = self.heads.link(pending_id, (entry,), (length, head))
            args = [FORMAT, length, signed, *lines, *told]
            # A token per attempt: the client's re-send of this one appends nothing more.
            sent_keys, sent_args = with_token(self.layout.prefix, keys, args, within=self.within)
            async with guard(self.where, pending_id, within=self.within):
                done = await script(keys=sent_keys, args=sent_args)
            if not isinstance(done, list):
                break
            length, head = _history.Heads.moved(pending_id, done)
            if length != seq:  # another entry came first: the caller reads again
                return False
        if not int(done):
            return False
        self.heads.wrote(pending_id, length + 1, after)
        return True

    async def append_history_after(self, pending_id: str, entry: dict[str, Any], seq: int) -> bool:
        """Append ``entry`` as entry ``seq`` of the request's chain, open or settled, in the
        script of :meth:`append_history` (a closed request's history expiring a retention
        after it); ``False``, with nothing written, when the chain is not ``seq`` long."""
        return await self._appended(pending_id, entry, seq) >= 0

    async def _appended(self, pending_id: str, entry: dict[str, Any], seq: int | None) -> int:
        """Run :data:`~._history.APPEND` for ``entry`` until it lands, linked again when the
        head moved; its seq. Given ``seq``, only as that entry: ``-1``, with nothing
        written, once the chain is not ``seq`` long."""
        keys = [self.layout.record(pending_id), *self.layout.chain(pending_id)]
        length, head = self.heads.guess(pending_id)
        if seq is not None and length != seq:
            length = -1  # no chain is that long: the script hands back the head to link to
        while True:
            lines, after, signed = self.heads.link(pending_id, (entry,), (length, head))
            args = [length, self.audit_ms, signed, *lines]
            # A token per attempt: the client's re-send of this one appends nothing more.
            sent = with_token(self.layout.prefix, keys, args, within=self.within)
            async with guard(self.where, pending_id, within=self.within):
                done = await self._append(*sent)
            if not isinstance(done, list):
                break
            length, head = _history.Heads.moved(pending_id, done)
            if seq is not None and length != seq:  # another entry came first
                return -1
        self.heads.wrote(pending_id, length + 1, after)
        return length

    async def read_history(self, pending_id: str) -> list[dict[str, Any]]:
        """The request's history, oldest first."""
        async with guard(self.where, pending_id, within=self.within):
            return await _history.read_chain(self.client, self.layout.prefix, pending_id)
