"""The hub: re-reading on hints and RESYNC, de-duplicating, dropping clients that lag."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from typing import Any

from roomkit import PendingInput, PendingInputStatus, RoomKit
from roomkit.desk import Access, DeskHub, Principal
from roomkit.desk.hub import Watcher
from roomkit.stores import PendingChange, PendingChangeKind


class ShadowHandler:
    """A handler whose records change silently; hints are sent by hand (lost or repeated)."""

    def __init__(self) -> None:
        self.records: dict[str, PendingInput] = {}
        self.listener: Callable[[PendingChange], None] | None = None

    def subscribe(self, listener: Callable[[PendingChange], None]) -> Callable[[], None]:
        self.listener = listener
        return lambda: None

    async def list_pending(self, **_: Any) -> list[PendingInput]:
        return [r for r in self.records.values() if r.status is PendingInputStatus.PENDING]

    async def get_request(self, pending_id: str) -> PendingInput | None:
        return self.records.get(pending_id)

    async def expire_overdue(self, requests: list[PendingInput]) -> list[PendingInput]:
        return list(requests)

    def time_left(self, request: PendingInput) -> float | None:
        return None

    def open(self, pending_id: str, actor_id: str | None = "alice") -> None:
        self.records[pending_id] = PendingInput(
            pending_id, "AskUserQuestion", {"question": "?"}, "room", "", "", actor_id=actor_id
        )

    def hint(self, kind: PendingChangeKind, pending_id: str = "") -> None:
        assert self.listener is not None
        self.listener(PendingChange(kind, pending_id))


async def hub_with(handler: ShadowHandler) -> tuple[DeskHub, Watcher]:
    kit = RoomKit()
    hub = DeskHub(handler, Access(kit), gate=None)  # type: ignore[arg-type]
    return hub, await hub.join(Principal("alice"))


async def frames(watcher: Watcher, count: int) -> list[tuple[str, str, str]]:
    seen: list[tuple[str, str, str]] = []
    while len(seen) < count:
        for frame in await watcher.pull():
            data = json.loads(frame)
            seen.append((data["type"], data["request"]["id"], data["request"]["status"]))
    return seen


async def test_a_resync_announces_what_changed_while_hints_were_lost() -> None:
    handler = ShadowHandler()
    handler.open("kept")
    handler.open("answered")
    hub, watcher = await hub_with(handler)
    handler.records["answered"].status = PendingInputStatus.RESOLVED
    handler.open("new")
    handler.hint(PendingChangeKind.RESYNC)
    seen = await frames(watcher, 2)
    await hub.aclose()
    assert sorted(seen) == [
        ("question_pending", "new", "pending"),
        ("question_settled", "answered", "resolved"),
    ]


async def test_repeated_hints_announce_once() -> None:
    handler = ShadowHandler()
    hub, watcher = await hub_with(handler)
    handler.open("a")
    for _ in range(3):
        handler.hint(PendingChangeKind.CREATED, "a")
    seen = await frames(watcher, 1)
    handler.records["a"].status = PendingInputStatus.REJECTED
    for _ in range(3):
        handler.hint(PendingChangeKind.SETTLED, "a")
    seen += await frames(watcher, 1)
    # A later question comes next: no repeat of "a" was queued in between.
    handler.open("b")
    handler.hint(PendingChangeKind.CREATED, "b")
    seen += await frames(watcher, 1)
    await hub.aclose()
    assert seen == [
        ("question_pending", "a", "pending"),
        ("question_settled", "a", "rejected"),
        ("question_pending", "b", "pending"),
    ]


async def test_a_request_that_vanished_is_announced_withdrawn() -> None:
    handler = ShadowHandler()
    handler.open("gone")
    hub, watcher = await hub_with(handler)
    del handler.records["gone"]
    handler.hint(PendingChangeKind.SETTLED, "gone")
    [frame] = await watcher.pull()
    await hub.aclose()
    request = json.loads(frame)["request"]
    assert (request["id"], request["status"], request["withdrawn"]) == ("gone", "rejected", True)


async def test_a_hint_from_another_thread_reaches_the_loop() -> None:
    handler = ShadowHandler()
    hub, watcher = await hub_with(handler)
    handler.open("threaded")
    await asyncio.to_thread(handler.hint, PendingChangeKind.CREATED, "threaded")
    seen = await frames(watcher, 1)
    await hub.aclose()
    assert seen == [("question_pending", "threaded", "pending")]


async def test_a_client_too_far_behind_is_dropped() -> None:
    watcher = Watcher(Principal("alice"), limit=3)
    for index in range(4):
        watcher.push(f"frame {index}")
    assert watcher.dropped
    assert await watcher.pull() == []
