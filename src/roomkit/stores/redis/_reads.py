"""The Redis store's reads of its records: one, many, the pending ones and the settled ones.

A record is a hash; many are read in one pipeline. The indexes (the pending requests, a
room's, the settled ones by time and by actor) are sorted sets. Reads hide the outcomes past
the retention on the store's clock, which the server has not expired yet. A hash that
cannot be decoded is skipped and logged by the listings, and raised by :meth:`Reads.fetch`.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from roomkit.core.exceptions import CorruptRecordError
from roomkit.models.pending_input import PendingInput, PendingInputStatus
from roomkit.stores._records import decode
from roomkit.stores.redis import _scripts as scripts
from roomkit.stores.redis._link import guard, text
from roomkit.stores.redis._part import Part

__all__ = ["Reads", "Wanted"]

Wanted = tuple[str | None, ...] | None
"""The actors whose outcomes a listing wants; ``None``: everyone's."""

logger = logging.getLogger("roomkit.tools.human_input.stores.redis")

_PENDING = PendingInputStatus.PENDING


@dataclass(slots=True, eq=False)
class Reads(Part):
    """The record reads of one store, on its client."""

    retained: Callable[[Any], bool]
    """Whether an outcome settled at a time is still readable."""
    cutoff: Callable[[], float]
    """The time at or before which a settled outcome has expired."""

    async def fetch(self, pending_id: str) -> PendingInput | None:
        """The request with this id, pending or settled within retention, or ``None``."""
        key = self.layout.record(pending_id)
        async with guard(self.where, pending_id, within=self.within):
            fields: dict[Any, Any] = await self.client.hgetall(key)
        if not fields:
            return None
        try:
            record = decode(fields, hashed=True)
        except CorruptRecordError as error:
            raise CorruptRecordError(f"{key} at {self.where}: {error}") from None
        return record if self._visible(record, fields) else None

    async def fetch_many(self, pending_ids: Sequence[str]) -> list[PendingInput]:
        """The records among ``pending_ids`` that exist, in one pipeline."""
        if not pending_ids:
            return []
        keys = [self.layout.record(pending_id) for pending_id in pending_ids]
        async with self.client.pipeline(transaction=False) as pipe:
            for key in keys:
                pipe.hgetall(key)
            async with guard(self.where, within=self.within):
                replies = await pipe.execute(raise_on_error=False)
        read = scripts.decode_hashes(keys, replies, logger)
        return [record for record, fields in read if self._visible(record, fields)]

    async def pending_records(self, filters: Mapping[str, str | None]) -> list[PendingInput]:
        """The pending requests whose fields match ``filters`` (``None`` matches any)."""
        room_id = filters["room_id"]
        index = self.layout.pending if room_id is None else self.layout.room(room_id)
        async with guard(self.where, within=self.within):
            ids = await self.client.zrange(index, 0, -1)
        records = await self.fetch_many([text(pending_id) for pending_id in ids])
        return [
            record
            for record in records
            if record.status is _PENDING
            and all(
                value is None or getattr(record, name) == value for name, value in filters.items()
            )
        ]

    async def was_announced(self, pending_id: str) -> bool:
        """False while the stored request's announcement is owed, else True."""
        key = self.layout.record(pending_id)
        async with guard(self.where, pending_id, within=self.within):
            owed = await self.client.hexists(key, scripts.UNANNOUNCED)
        return not owed

    async def list_settled(self, wanted: Wanted, limit: int) -> list[PendingInput]:
        """The most recently settled requests within the retention, newest first, of the
        actors ``wanted`` (checked by :func:`~roomkit.stores.base.check_settled_listing`)."""
        layout = self.layout
        indexes = [layout.settled] if wanted is None else [layout.settled_for(a) for a in wanted]
        cutoff = f"({self.cutoff()!r}"
        async with self.client.pipeline(transaction=False) as pipe:
            for index in indexes:
                pipe.zrevrangebyscore(index, "+inf", cutoff, start=0, num=limit, withscores=True)
            async with guard(self.where, within=self.within):
                replies = await pipe.execute()
        newest = sorted(
            ((float(score), text(member)) for reply in replies for member, score in reply),
            reverse=True,
        )
        records = await self.fetch_many([pending_id for _, pending_id in newest[:limit]])
        order = {pending_id: rank for rank, (_, pending_id) in enumerate(newest)}
        records.sort(key=lambda record: order[record.pending_id])
        return [record for record in records if record.status is not _PENDING]

    def _visible(self, record: PendingInput, fields: Mapping[Any, Any]) -> bool:
        """Whether ``record`` is pending, or settled within the retention."""
        if record.status is _PENDING:
            return True
        return self.retained(fields.get(b"settled_at", fields.get("settled_at")))
