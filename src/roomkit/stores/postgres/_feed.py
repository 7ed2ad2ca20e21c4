"""The change feed of the Postgres store: LISTEN (on the process's shared connection).

Every create and settle sends ``NOTIFY`` in its own transaction, so a hint leaves only once
the change is committed, and the feed turns each ``created <id>`` / ``settled <id>`` into a
:class:`PendingChange`; a settle's notification carries the settled record itself
(``record <JSON>``), which the change hands to waiters, who then need no read. A
notification is only a hint: while the feed was away (a lost connection, a server
restarted) nothing is kept for it, so each time it starts listening it sends
:attr:`PendingChangeKind.RESYNC`, and waiters re-read on their own every
``backstop_interval`` too. A lost notification delays a wake-up and loses nothing.

Where LISTEN is refused (a pooler in transaction mode), the feed polls instead: every
``backstop_interval`` it asks the store what changed since its last look (one read that finds
no row while nothing moves) and sends ``RESYNC`` when anything did, after one warning.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Awaitable, Callable

from roomkit.core.exceptions import CorruptRecordError, StoreUnavailableError
from roomkit.models.pending_input import PendingInput
from roomkit.stores._listener_feed import HINTED, ListenerFeed
from roomkit.stores._records import FIELDS
from roomkit.stores.base import ChangeMark, ChangesSince, PendingChange, PendingChangeKind
from roomkit.stores.postgres._link import Link
from roomkit.stores.postgres._listen import Hub, Refused
from roomkit.stores.postgres._schema import MAX_PAYLOAD, decode_row

__all__ = ["NotifyFeed", "hint"]

logger = logging.getLogger("roomkit.tools.human_input.stores.postgres")

_RESYNC = PendingChange(PendingChangeKind.RESYNC)


def hint(kind: PendingChangeKind, pending_id: str) -> str:
    """The NOTIFY payload of a change (``resync`` when the id is too long to send)."""
    payload = f"{kind.value} {pending_id}"
    return payload if len(payload.encode()) <= MAX_PAYLOAD else "resync"


class NotifyFeed(ListenerFeed):
    """Listeners, and the task that feeds them from LISTEN (or, where refused, polling).

    Args:
        link: the store's link to the server; the listening connection is opened as it says.
        channel: the store's NOTIFY channel.
        changes_since: the store's look at what changed since a mark (for polling).
        interval: seconds between polls, when polling.
    """

    def __init__(
        self,
        link: Link,
        channel: str,
        changes_since: Callable[[ChangeMark | None], Awaitable[ChangesSince]],
        *,
        interval: float,
    ) -> None:
        super().__init__(name=f"roomkit postgres feed {channel}", where=link.where, logger=logger)
        self._link = link
        self._channel = channel
        self._changes_since = changes_since
        self._interval = interval
        self._refused = asyncio.Event()
        self._hub: Hub | None = None
        self._warned = False
        self.polling = False
        """Whether the feed polls, since LISTEN was refused."""

    async def _run(self) -> None:
        hub = self._hub = Hub.shared(self._link.dsn, self._link.connect_kwargs(), self._where)
        self._refused = asyncio.Event()
        try:
            hub.join(self._channel, self._heard)
        except Refused as error:
            await self._poll(error)
            return
        try:
            await self._refused.wait()
            await self._poll(hub.refused)
        finally:
            await hub.leave(self._channel, self._heard)

    def _heard(self, payload: str | None) -> None:
        if payload is None:
            if self._hub is not None and self._hub.refused is not None:
                self._refused.set()
            self.emit(_RESYNC)
            return
        self._dispatch(payload)

    async def _poll(self, why: BaseException | None) -> None:
        self.polling = True
        if not self._warned:
            self._warned = True
            logger.warning(
                "LISTEN does not work through %s (%s), as through PgBouncer in transaction "
                "mode: changes made elsewhere arrive by polling every %.2f s",
                self._where,
                why,
                self._interval,
            )
        mark: ChangeMark | None = None
        while True:
            try:
                changed = await self._changes_since(mark)
            except StoreUnavailableError as error:
                logger.warning("change feed from %s cannot poll (%s)", self._where, error)
                mark = None
            else:
                if changed.pending_ids is None or changed.pending_ids:
                    self.emit(_RESYNC)
                mark = changed.mark
            await asyncio.sleep(self._interval)

    def _dispatch(self, payload: str) -> None:
        verb, _, pending_id = payload.partition(" ")
        if verb == "record":
            self._settled(pending_id)
            return
        if verb == "resync":
            self.emit(_RESYNC)
            return
        kind = HINTED.get(verb)
        if kind is None or not pending_id:
            logger.debug("ignoring an unknown change notification %r", payload)
            return
        self.emit(PendingChange(kind, pending_id))

    def _settled(self, body: str) -> None:
        record = _carried(body)
        if record is None:
            # Only a hint: without the record, listeners cannot tell which request moved.
            logger.debug("unreadable record in a change notification; resyncing")
            self.emit(_RESYNC)
            return
        self.emit(PendingChange(PendingChangeKind.SETTLED, record.pending_id, record))


def _carried(body: str) -> PendingInput | None:
    """The settled record a ``record`` notification carries, or ``None`` if unreadable."""
    try:
        values = json.loads(body)
        if not isinstance(values, list) or len(values) != len(FIELDS):
            return None
        return decode_row(values)
    except (ValueError, TypeError, CorruptRecordError):
        return None
