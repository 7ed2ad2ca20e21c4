"""The hub: who is connected, and which pushes reach whom.

The hub follows the handler's change hints (from every process sharing the store) while at
least one client is connected. On a hint it re-reads the request; on ``RESYNC`` it re-reads
every open request and compares with what it had. Each new question goes out once as
``question_pending``, each vote on a quorum approval still open as ``question_updated``,
each outcome once as ``question_settled``, to the people concerned: the actor the request
names (or the room's participants when it names none), an approval's approvers, the holders
of its answer link, and administrators. Room messages reach the room's participants and
administrators. A frame is encoded once, whatever the number of recipients.

What the desk shows a person is recorded in the request's history (:meth:`DeskHub.record_shown`):
an open request returned by the HTTP API is ``shown`` on the ``desk`` surface, one a snapshot or
a push delivers on the WebSocket is ``shown`` on ``websocket``, each once per request whoever
views it and however often (the first viewer is the entry's actor).

A client whose credential stops being good is closed: a link watcher as soon as the hub
sees its request settled with the link spent (through this desk process or another on the
store), and any client whose link or token the ledger says is spent or revoked (``roomkit
revoke``, written by any process) at the next periodic re-read, every :attr:`DeskHub.recheck`
seconds while clients are connected. A link is spent just before its answer settles the
request, so a link watcher whose request is still open then gets one more re-read: it sees
the outcome before the close, and a link revoked while its request is open closes at the
second re-read.

A question past its deadline is settled as timed out when the hub sees it (through the
handler's check-and-set), so that it is never shown open after its time, even when no agent
waits on it any more: the hub wakes at the nearest deadline it knows of (checking the
store's clock every :data:`_TICK` seconds meanwhile) and re-reads the open requests every
:attr:`DeskHub.recheck` seconds, in case a deadline was set after it last read one.
"""

from __future__ import annotations

import asyncio
import json
import logging
import threading
from collections import deque
from collections.abc import Callable, Collection
from typing import Any

from roomkit.core.exceptions import StoreError
from roomkit.desk.auth import Access, Principal
from roomkit.desk.gate import Gate
from roomkit.desk.metrics import DeskMetrics
from roomkit.desk.routed_views import routed_view, routed_views
from roomkit.desk.shapes import view_of
from roomkit.models.pending_input import PendingInput, PendingInputStatus
from roomkit.stores import PendingChange, PendingChangeKind
from roomkit.tools.human_input import HumanInputHandler
from roomkit.tools.human_input.shown import ShownTrail

__all__ = ["DeskHub", "Watcher"]

logger = logging.getLogger("roomkit.desk")

_RECENT = 4096
_TICK = 0.25
"""Seconds between looks at the store's clock while a known deadline is ahead."""
_RECHECK = 5.0
"""Seconds between re-reads of the open requests and the clients' credentials, by default."""


class Watcher:
    """One connected client: its principal and the frames waiting for it."""

    __slots__ = ("_frames", "_limit", "_ready", "_shows", "closed", "dropped", "principal", "shown")

    def __init__(self, principal: Principal, *, limit: int) -> None:
        self.principal = principal
        """Who the client authenticated as."""
        self.dropped = False
        """True once the client fell ``limit`` frames behind: it must reconnect."""
        self.closed: str | None = None
        """Why the client is to be closed once its queued frames are sent (its credential
        was spent or revoked), or ``None``."""
        self.shown: list[str] = []
        """The ids of the open requests the frames of the last :meth:`pull` show."""
        self._frames: deque[str] = deque()
        self._shows: list[str] = []
        self._ready = asyncio.Event()
        self._limit = limit

    def push(self, frame: str, *, shows: str | None = None) -> None:
        """Queue a frame (``shows``: the id of the open request it shows); a client too far
        behind is dropped instead."""
        if self.dropped or self.closed is not None:
            return
        if len(self._frames) >= self._limit:
            self.dropped = True
            self._frames.clear()
            self._shows.clear()
        else:
            self._frames.append(frame)
            if shows is not None:
                self._shows.append(shows)
        self._ready.set()

    def close(self, reason: str) -> None:
        """Let the client have the frames queued so far, then end its session for ``reason``."""
        if self.closed is None:
            self.closed = reason
            self._ready.set()

    async def pull(self) -> list[str]:
        """Wait for frames and take them all (none once the client is dropped)."""
        await self._ready.wait()
        self._ready.clear()
        frames = list(self._frames)
        self._frames.clear()
        self.shown, self._shows = self._shows, []
        return frames


class DeskHub:
    """Connected clients, and the pushes of questions, outcomes and room messages.

    Args:
        handler: the handler whose requests the desk shows.
        access: who may see what.
        gate: authenticates callers (chat routes take it as their dependency).
        outbox: frames a slow client may fall behind before it is dropped.
        metrics: where the desk counts its figures (store errors among them); a registry
            of the hub's own by default.
        shown: records the requests the desk shows (a trail of the hub's own by default).
    """

    def __init__(
        self,
        handler: HumanInputHandler,
        access: Access,
        gate: Gate,
        *,
        outbox: int = 1024,
        metrics: DeskMetrics | None = None,
        shown: ShownTrail | None = None,
    ) -> None:
        self.handler = handler
        self.access = access
        self.gate = gate
        self.metrics = metrics if metrics is not None else DeskMetrics()
        self.shown = shown if shown is not None else ShownTrail(handler)
        """Writes the ``shown`` entries of the requests the desk shows, once per surface."""
        self._outbox = outbox
        self.recheck = _RECHECK
        """Seconds between re-reads of the open requests and of the connected clients'
        credentials (a revocation reaches an open socket within this time)."""
        self._admins: set[Watcher] = set()
        self._actors: dict[str, set[Watcher]] = {}
        self._links: dict[str, set[Watcher]] = {}
        self._open: dict[str, dict[str, Any]] = {}
        self._due: dict[str, PendingInput] = {}
        self._recent: dict[str, None] = {}
        self._spending: set[str] = set()
        self._changes: asyncio.Queue[PendingChange] = asyncio.Queue()
        self._unsubscribe: Callable[[], None] | None = None
        self._worker: asyncio.Task[None] | None = None
        self._starting = asyncio.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread = 0

    # -- clients -----------------------------------------------------------------------------

    async def join(self, principal: Principal) -> Watcher:
        """Register a client; the first one starts following the handler's changes."""
        async with self._starting:
            if self._worker is None:
                await self._start()
        watcher = Watcher(principal, limit=self._outbox)
        if principal.request_id is not None:
            self._links.setdefault(principal.request_id, set()).add(watcher)
        elif principal.admin:
            self._admins.add(watcher)
        else:
            self._actors.setdefault(principal.actor_id, set()).add(watcher)
        return watcher

    def _watchers(self) -> list[Watcher]:
        return [
            *self._admins,
            *(w for group in self._actors.values() for w in group),
            *(w for group in self._links.values() for w in group),
        ]

    def leave(self, watcher: Watcher) -> None:
        """Forget a client; the last one to leave stops the following."""
        principal = watcher.principal
        self._admins.discard(watcher)
        for index, key in ((self._links, principal.request_id), (self._actors, principal.actor_id)):
            group = index.get(key or "")
            if group is not None:
                group.discard(watcher)
                if not group:
                    del index[key or ""]
        if not (self._admins or self._actors or self._links):
            self._stop()

    @property
    def clients(self) -> int:
        """How many clients are connected."""
        return (
            len(self._admins)
            + sum(map(len, self._actors.values()))
            + sum(map(len, self._links.values()))
        )

    async def snapshot(self, principal: Principal) -> list[dict[str, Any]]:
        """The open requests ``principal`` may answer, as views, oldest first."""
        pending = await self._pending()
        return await routed_views(self.handler, await self.access.visible(principal, pending))

    async def record_shown(
        self, principal: Principal, pending_ids: Collection[str], surface: str
    ) -> None:
        """Record that ``surface`` (``desk``, ``websocket``) showed ``principal`` the open
        requests ``pending_ids``: once per request and surface. An administrator's view is
        oversight, not the request reaching the person asked, and is not recorded. Never
        raises (see :class:`~roomkit.tools.human_input.shown.ShownTrail`)."""
        if pending_ids and not principal.admin:
            await self.shown.record(pending_ids, surface, principal.actor_id)

    async def publish_room_message(self, room_id: str, message: dict[str, Any]) -> None:
        """Push a chat message (``id, sender_id, channel_id, body, created_at``) to the room.

        It reaches the room's participants and administrators that are connected.
        """
        if not (self._admins or self._actors):
            return
        frame = json.dumps(
            {"type": "room_message", "room_id": room_id, "message": message}, default=str
        )
        for watcher in list(self._admins):
            watcher.push(frame)
        if self._actors:
            for actor_id in await self.access.participants(room_id):
                for watcher in list(self._actors.get(actor_id, ())):
                    watcher.push(frame)

    # -- following the handler ---------------------------------------------------------------

    async def _start(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._thread = threading.get_ident()
        self._unsubscribe = self.handler.subscribe(self._hint)
        try:
            # Seeding announces nothing, so it happens before any client is registered.
            for request in await self._pending():
                self._open[request.pending_id] = await routed_view(self.handler, request)
                self._track(request)
        except BaseException:
            self._stop()
            raise
        self._worker = asyncio.create_task(self._follow(), name="roomkit-desk-hub")

    async def _close_refused(self, watchers: list[Watcher]) -> None:
        """Close the clients whose credential the ledger now refuses (spent, revoked)."""
        if not watchers:
            return
        refusals = await self.gate.ledger.refusals([w.principal for w in watchers])
        for watcher, refusal in zip(watchers, refusals, strict=True):
            if refusal is not None and await self._settle_seen(watcher):
                watcher.close(refusal)

    async def _settle_seen(self, watcher: Watcher) -> bool:
        """Whether a refused client may close now: at once unless it watches, on a link,
        a request the hub still has open. Its link is spent before its answer settles the
        request, so the hub first re-reads the request (the client gets the outcome, then
        the close); one still open is left until the next look, by when the answer has
        settled it or never will."""
        pending_id = watcher.principal.request_id
        if pending_id is None or pending_id not in self._open:
            return True
        await self._observe(pending_id, await self.handler.get_request(pending_id))
        if pending_id not in self._open:
            return True
        if pending_id in self._spending:
            self._spending.discard(pending_id)
            return True
        self._spending.add(pending_id)
        return False

    def _stop(self) -> None:
        if self._unsubscribe is not None:
            self._unsubscribe()
            self._unsubscribe = None
        if self._worker is not None:
            self._worker.cancel()
            self._worker = None
        self._open.clear()
        self._due.clear()
        self._spending.clear()
        self._changes = asyncio.Queue()

    async def aclose(self) -> None:
        """Stop following the handler and forget every client."""
        worker = self._worker
        self._admins.clear()
        self._actors.clear()
        self._links.clear()
        self._stop()
        if worker is not None:
            await asyncio.gather(worker, return_exceptions=True)
        await self.shown.idle()

    def _hint(self, change: PendingChange) -> None:
        # Hints may come from a store's own thread: hand them to the loop safely.
        queue = self._changes
        if threading.get_ident() == self._thread:
            queue.put_nowait(change)
        elif self._loop is not None:
            self._loop.call_soon_threadsafe(queue.put_nowait, change)

    async def _follow(self) -> None:
        changes = self._changes
        loop = asyncio.get_running_loop()
        reread = loop.time() + self.recheck
        while True:
            change: PendingChange | None = None
            try:
                async with asyncio.timeout(self._wake_in(reread - loop.time())):
                    change = await changes.get()
            except TimeoutError:
                pass
            try:
                if change is not None and change.kind is not PendingChangeKind.RESYNC:
                    pending_id = change.pending_id
                    await self._observe(pending_id, await self.handler.get_request(pending_id))
                elif change is not None or self._overdue() or loop.time() >= reread:
                    reread = loop.time() + self.recheck
                    await self._resync()
                    await self._close_refused(self._watchers())
            except StoreError as error:
                self.metrics.store_error()
                kind = "resync" if change is None else change.kind
                # One line while the store is away: an outage is not a bug to trace.
                logger.warning(
                    "The desk could not follow a %s change: %s",
                    kind,
                    error,
                    extra={"event": "store_error"},
                )
            except Exception:
                kind = "resync" if change is None else change.kind
                about = None if change is None else change.pending_id or None
                logger.exception(
                    "The desk could not follow a %s change",
                    kind,
                    extra={"event": "follow_failed", "pending_id": about},
                )

    def _wake_in(self, reread: float) -> float:
        """Seconds until the hub should look again without a change."""
        wake = reread
        for request in self._due.values():
            left = self.handler.time_left(request)
            if left is not None:
                wake = min(wake, left, _TICK)
        return max(0.0, wake)

    def _overdue(self) -> bool:
        return any((self.handler.time_left(r) or 0.0) <= 0 for r in self._due.values())

    def _track(self, request: PendingInput) -> None:
        """Keep an open request's deadline in view while it is still ahead."""
        left = self.handler.time_left(request)
        if request.status is PendingInputStatus.PENDING and left is not None and left > 0:
            self._due[request.pending_id] = request
        else:
            # Settled, without a deadline, or past one it could not be timed out at: the
            # periodic re-read looks at it again.
            self._due.pop(request.pending_id, None)

    async def _pending(self) -> list[PendingInput]:
        """The open requests, once those past their deadline have timed out."""
        listed = await self.handler.expire_overdue(await self.handler.list_pending())
        return [request for request in listed if request.status is PendingInputStatus.PENDING]

    async def _resync(self) -> None:
        current = {request.pending_id: request for request in await self._pending()}
        for pending_id, request in current.items():
            self._track(request)
            if pending_id not in self._open:
                await self._observe(pending_id, request)
        for pending_id in [key for key in self._open if key not in current]:
            await self._observe(pending_id, await self.handler.get_request(pending_id))

    async def _observe(self, pending_id: str, request: PendingInput | None) -> None:
        """Announce what changed about one request since the hub last looked."""
        if request is not None and request.status is PendingInputStatus.PENDING:
            request = next(iter(await self.handler.expire_overdue([request])), None)
        if request is None:
            self._due.pop(pending_id, None)
            gone = self._open.pop(pending_id, None)
            if gone is not None:
                view = dict(gone, status="rejected", withdrawn=True, reason="No longer available")
                await self._announce("question_settled", view)
            return
        self._track(request)
        if request.status is PendingInputStatus.PENDING:
            seen, view = self._open.get(pending_id), await routed_view(self.handler, request)
            if seen != view:
                # A vote on a quorum approval moves it while it stays open (an edit changes
                # its arguments): every approver's card follows.
                self._open[pending_id] = view
                await self._announce(
                    "question_pending" if seen is None else "question_updated", view
                )
            return
        self._spending.discard(pending_id)
        if self._open.pop(pending_id, None) is None and pending_id in self._recent:
            return
        self._recent[pending_id] = None
        if len(self._recent) > _RECENT:
            del self._recent[next(iter(self._recent))]
        await self._announce("question_settled", view_of(request))
        # The link that settled it is spent now: its sockets, here or elsewhere, are done.
        await self._close_refused(list(self._links.get(pending_id, ())))

    async def _announce(self, kind: str, view: dict[str, Any]) -> None:
        targets = await self._targets(view)
        if targets:
            frame = json.dumps({"type": kind, "request": view}, default=str)
            shows = None if kind == "question_settled" else str(view["id"])
            for watcher in targets:
                watcher.push(frame, shows=shows)

    async def _targets(self, view: dict[str, Any]) -> list[Watcher]:
        """The clients concerned by a request: its actor (or room), its links, the admins."""
        targets = [*self._admins, *self._links.get(view["id"], ())]
        if self._actors:
            actor_id: str | None = view["actor_id"]
            if actor_id is not None:
                targets.extend(self._actors.get(actor_id, ()))
            else:
                for participant in await self.access.participants(view["room_id"]):
                    targets.extend(self._actors.get(participant, ()))
            for approver in dict.fromkeys([*view["approvers"], *view["voters"]]):
                if approver != actor_id:
                    targets.extend(self._actors.get(approver, ()))
            router = getattr(self.handler, "router", None)
            request = await self.handler.get_request(view["id"]) if router else None
            if router is not None and request is not None:
                # A delegate, a role's member, whoever is on call: routed by the directory.
                for actor in await router.recipients(request):
                    targets.extend(self._actors.get(actor, ()))
        return list(dict.fromkeys(targets))
