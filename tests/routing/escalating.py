"""What the notifier tells, and to whom, when a request's ladder escalates it."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

from roomkit.models.pending_input import PendingInput
from roomkit.notify import Notifier
from roomkit.notify.surface import Notice
from roomkit.stores.outbox import OutboxItem, now_of
from roomkit.tools.human_input import HumanInputHandler


class Recorder:
    """A surface that reaches every person and keeps what it is asked to send."""

    name = "recorder"

    def __init__(self) -> None:
        self.told: list[Notice] = []
        self._changed = asyncio.Condition()

    def reaches(self, recipient: str | None, person: object) -> bool:
        return recipient is not None

    async def send(self, notice: Notice) -> None:
        async with self._changed:
            self.told.append(notice)
            self._changed.notify_all()

    async def wait_for(self, kind: str, recipient: str) -> None:
        """Return once a notice of ``kind`` to ``recipient`` was sent."""
        async with self._changed:
            await self._changed.wait_for(
                lambda: any((n.type, n.recipient) == (kind, recipient) for n in self.told)
            )

    async def aclose(self) -> None:
        return None


def announcement(handler: HumanInputHandler, pending_id: str) -> OutboxItem:
    """The request's announcement step, due now."""
    now = now_of(handler)
    return OutboxItem(f"{pending_id}.announce", pending_id, now, {"job": "announce"}, created=now)


def escalation(handler: HumanInputHandler, pending_id: str, to: str = "manager") -> OutboxItem:
    """The ladder's first escalation step of the request, due now."""
    now = now_of(handler)
    body = {"job": "escalate", "to": to}
    return OutboxItem(f"{pending_id}.escalate0", pending_id, now, body, created=now)


async def told_on_escalation(
    handler: HumanInputHandler, ask: Callable[[], Awaitable[PendingInput]]
) -> tuple[PendingInput, list[tuple[str, str | None]]]:
    """Ask (``await ask()`` makes the request), escalate to the manager, and return the
    request and every notice sent, as ``(type, recipient)``."""
    recorder = Recorder()
    async with Notifier(handler, [recorder]) as notifier:
        assert notifier.directory is handler.directory, "the notifier routes as the handler"
        request = await ask()
        await notifier.wait_idle()
        await handler.outbox.add([escalation(handler, request.pending_id)])
        await notifier.wait_idle()
    return request, [(notice.type, notice.recipient) for notice in recorder.told]


def step(handler: HumanInputHandler, pending_id: str, job: str, n: int) -> OutboxItem:
    """A ladder step of the request (``remind``, ``escalate``), its ``n``-th, due now."""
    now = now_of(handler)
    return OutboxItem(f"{pending_id}.{job}{n}", pending_id, now, {"job": job}, created=now)
