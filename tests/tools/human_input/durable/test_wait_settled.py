"""``wait_settled``: a wait for the settled request itself, on every store.

An answer, a person's refusal and an expiry each come back as the request, with who settled
it; a request the handler gave up raises as ``wait`` does, and so does an unknown id.
"""

from __future__ import annotations

import asyncio

import pytest
from tests.servers.plugin import HandlerFactory

from roomkit.core.exceptions import RequestWithdrawnError, UnknownRequestError
from roomkit.models.pending_input import PendingInputStatus

QUESTION = {"question": "Ship it?"}


async def test_an_answer_comes_back_as_the_request_with_who_gave_it(
    make_handler: HandlerFactory,
) -> None:
    handler = make_handler()
    request = await handler.create("AskUserQuestion", QUESTION)
    waiting = asyncio.create_task(handler.wait_settled(request.pending_id, timeout=None))

    assert await handler.aresolve(request.pending_id, "yes", by="ann")

    settled = await waiting
    assert (settled.status, settled.result, settled.settled_by) == (
        PendingInputStatus.RESOLVED,
        "yes",
        "ann",
    )
    await handler.close()


async def test_a_refusal_comes_back_as_the_request_with_its_reason(
    make_handler: HandlerFactory,
) -> None:
    handler = make_handler()
    request = await handler.create("AskUserQuestion", QUESTION)
    assert await handler.areject(request.pending_id, "not today", by="bob")

    settled = await handler.wait_settled(request.pending_id, timeout=None)

    assert (settled.status, settled.reject_reason, settled.settled_by) == (
        PendingInputStatus.REJECTED,
        "not today",
        "bob",
    )
    await handler.close()


async def test_an_expiry_comes_back_as_the_request(make_handler: HandlerFactory) -> None:
    handler = make_handler()
    request = await handler.create("AskUserQuestion", QUESTION, timeout=0.01)

    settled = await handler.wait_settled(request.pending_id, timeout=None)

    assert settled.status is PendingInputStatus.TIMED_OUT
    assert settled.settled_by is None
    await handler.close()


async def test_a_request_given_up_raises_as_wait_does(make_handler: HandlerFactory) -> None:
    handler = make_handler()
    request = await handler.create("AskUserQuestion", QUESTION)
    assert await handler.arelease(request.pending_id)

    with pytest.raises(RequestWithdrawnError):
        await handler.wait_settled(request.pending_id, timeout=None)
    with pytest.raises(UnknownRequestError):
        await handler.wait_settled("never-made", timeout=None)
    with pytest.raises(ValueError, match="timeout"):
        await handler.wait_settled(request.pending_id, timeout=-1)
    await handler.close()
