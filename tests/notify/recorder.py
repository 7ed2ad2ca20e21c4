"""A surface that keeps what it is sent: a real implementation of the Surface protocol that
tests read, for ladders on the virtual clock (where loopback timeouts would fire at once)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from typing import Any

from roomkit.notify import Notice, Person


class Recorder:
    """Reaches every named recipient; keeps ``(type, recipient)`` of each notice."""

    def __init__(self, name: str = "recorder") -> None:
        self.name = name
        self.notices: list[Notice] = []
        self._changed = asyncio.Condition()

    def reaches(self, recipient: str | None, person: Person | None) -> bool:
        return recipient is not None

    async def send(self, notice: Notice) -> Mapping[str, Any] | None:
        async with self._changed:
            self.notices.append(notice)
            self._changed.notify_all()
        return {"n": len(self.notices)}

    async def aclose(self) -> None:
        return None

    def seen(self) -> list[tuple[str, str | None]]:
        return [(n.type, n.recipient) for n in self.notices]

    async def wait_until(self, check: Callable[[list[tuple[str, str | None]]], bool]) -> None:
        async with self._changed:
            await self._changed.wait_for(lambda: check(self.seen()))


class Holding(Recorder):
    """A recorder whose notices of one ``kind`` stay on their way until ``release`` is set,
    as a slow post does; ``holding`` is set once one is."""

    def __init__(self, kind: str, name: str = "recorder") -> None:
        super().__init__(name)
        self.kind = kind
        self.holding = asyncio.Event()
        self.release = asyncio.Event()

    async def send(self, notice: Notice) -> Mapping[str, Any] | None:
        if notice.type == self.kind:
            self.holding.set()
            await self.release.wait()
        return await super().send(notice)
