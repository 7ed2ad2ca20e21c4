"""What ``arelease`` returns, the same on every store: ``True`` only for the call that
withdrew the request; an unknown id, a request settled already and the loser of a race
give ``False``."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

import pytest
from tests.servers.plugin import HandlerFactory

from roomkit.core.exceptions import RequestWithdrawnError
from roomkit.models.pending_input import PendingInputStatus
from roomkit.tools.human_input import HumanInputHandler

QUESTION = {"question": "Ship it?"}


async def test_a_release_withdraws_once(make_handler: HandlerFactory) -> None:
    handler = make_handler()
    request = await handler.create("AskUserQuestion", QUESTION)

    assert await handler.arelease(request.pending_id) is True
    assert await handler.arelease(request.pending_id) is False
    assert await handler.arelease("never-made") is False

    with pytest.raises(RequestWithdrawnError):
        await handler.wait(request.pending_id, timeout=None)
    await handler.close()


async def _answered(handler: HumanInputHandler, pending_id: str) -> None:
    assert await handler.aresolve(pending_id, "yes", by="ann")


async def _refused(handler: HumanInputHandler, pending_id: str) -> None:
    assert await handler.areject(pending_id, "not today", by="bob")


async def _expired(handler: HumanInputHandler, pending_id: str) -> None:
    settled = await handler.wait_settled(pending_id, timeout=0.01)
    assert settled.status is PendingInputStatus.TIMED_OUT


Settle = Callable[[HumanInputHandler, str], Awaitable[None]]


@pytest.mark.parametrize(
    ("settle", "status"),
    [
        (_answered, PendingInputStatus.RESOLVED),
        (_refused, PendingInputStatus.REJECTED),
        (_expired, PendingInputStatus.TIMED_OUT),
    ],
    ids=["answered", "refused", "expired"],
)
async def test_a_settled_request_is_dropped_but_not_withdrawn(
    make_handler: HandlerFactory, settle: Settle, status: PendingInputStatus
) -> None:
    """Its outcome stands, and a wait still comes back with it."""
    handler = make_handler()
    request = await handler.create_detached("AskUserQuestion", QUESTION)
    await settle(handler, request.pending_id)

    assert await handler.arelease(request.pending_id) is False

    assert request.pending_id not in handler.pending
    settled = await handler.wait_settled(request.pending_id, timeout=None)
    assert (settled.status, settled.withdrawn) == (status, False)
    await handler.close()


async def test_of_two_racing_releases_one_withdraws(make_handler: HandlerFactory) -> None:
    """On a durable store the two hold their own connections, as two processes would."""
    asker, other = make_handler(), make_handler()
    request = await asker.create("AskUserQuestion", QUESTION)

    released = await asyncio.gather(
        asker.arelease(request.pending_id), other.arelease(request.pending_id)
    )

    assert sorted(released) == [False, True]
    settled = await other.get_request(request.pending_id)
    assert settled is not None
    assert (settled.status, settled.withdrawn) == (PendingInputStatus.REJECTED, True)
    await asker.close()
    await other.close()
