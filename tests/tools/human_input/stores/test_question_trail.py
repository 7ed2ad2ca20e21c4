"""A question's trail, on the memory store and every durable one: ``created``, then one
``settled`` entry however it ends (answered, rejected, timed out, withdrawn), written with
the outcome, so that a wait that wakes finds it in the history already."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

import pytest
from tests.tools.human_input.stores.store_kit import Backend, FakeClock

from roomkit import HumanInputHandler
from roomkit.core.exceptions import (
    HumanInputRejectedError,
    HumanInputTimeoutError,
    RequestWithdrawnError,
)
from roomkit.stores import broken_link, entry_text

Scenario = Callable[[HumanInputHandler, Callable[[], None]], Awaitable[tuple[str, Any]]]
"""Ends a question one way (given the handler and a way to pass its deadline); returns its
id and what its settled entry must say: (status, actor, surface, withdrawn)."""


def stored(history: list[dict[str, Any]]) -> list[str]:
    return [entry_text({k: v for k, v in entry.items() if k != "seq"}) for entry in history]


async def answered(handler: HumanInputHandler, expire: Callable[[], None]) -> tuple[str, Any]:
    asked = await handler.create("Ask", {"question": "?"}, actor_id="ann")
    waiting = asyncio.ensure_future(handler.wait(asked.pending_id, timeout=None))
    assert await handler.aresolve(asked.pending_id, "yes", by="ann", surface="slack")
    assert await waiting == "yes"
    # Read as the wait returns: the entry came with the outcome, not after it.
    history = await handler.history(asked.pending_id)
    assert history[-1]["type"] == "settled"
    return asked.pending_id, ("resolved", "ann", "slack", None)


async def rejected(handler: HumanInputHandler, expire: Callable[[], None]) -> tuple[str, Any]:
    asked = await handler.create("Ask", {"question": "?"}, actor_id="ann")
    waiting = asyncio.ensure_future(handler.wait(asked.pending_id, timeout=None))
    assert await handler.areject(asked.pending_id, "not now", by="bob", surface="desk")
    with pytest.raises(HumanInputRejectedError):
        await waiting
    return asked.pending_id, ("rejected", "bob", "desk", None)


async def timed_out(handler: HumanInputHandler, expire: Callable[[], None]) -> tuple[str, Any]:
    asked = await handler.create("Ask", {"question": "?"}, timeout=5)
    expire()
    with pytest.raises(HumanInputTimeoutError):
        await handler.wait(asked.pending_id, timeout=0.001 if not handler.durable else None)
    return asked.pending_id, ("timed_out", None, None, None)


async def withdrawn(handler: HumanInputHandler, expire: Callable[[], None]) -> tuple[str, Any]:
    asked = await handler.create("Ask", {"question": "?"})
    waiting = asyncio.ensure_future(handler.wait(asked.pending_id, timeout=None))
    assert await handler.arelease(asked.pending_id)
    with pytest.raises(RequestWithdrawnError):
        await waiting
    return asked.pending_id, ("rejected", None, None, True)


async def withdrawn_saying_why(
    handler: HumanInputHandler, expire: Callable[[], None]
) -> tuple[str, Any]:
    """``arelease(reason=...)``: the request, its waiter's error and its settled entry say
    why."""
    asked = await handler.create("Ask", {"question": "?"})
    waiting = asyncio.ensure_future(handler.wait(asked.pending_id, timeout=None))
    assert await handler.arelease(asked.pending_id, reason="the run ended")
    with pytest.raises(RequestWithdrawnError, match="the run ended"):
        await waiting
    request = await handler.get_request(asked.pending_id)
    assert request is not None
    assert request.reject_reason == "the run ended"
    assert (await handler.history(asked.pending_id))[-1]["reason"] == "the run ended"
    return asked.pending_id, ("rejected", None, None, True)


SCENARIOS = [answered, rejected, timed_out, withdrawn, withdrawn_saying_why]


async def check(handler: HumanInputHandler, scenario: Scenario, expire: Callable[[], None]) -> None:
    pending_id, (status, actor, surface, was_withdrawn) = await scenario(handler, expire)
    history = await handler.history(pending_id)
    assert [entry["type"] for entry in history] == ["created", "settled"]
    settled = history[1]
    assert (settled["status"], settled["actor"], settled["surface"]) == (status, actor, surface)
    assert settled.get("withdrawn") == was_withdrawn
    assert broken_link(pending_id, stored(history)) is None


@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda s: s.__name__)
async def test_a_question_on_the_memory_store_ends_with_a_settled_entry(
    scenario: Scenario,
) -> None:
    await check(HumanInputHandler(), scenario, lambda: None)


@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda s: s.__name__)
async def test_a_question_on_a_durable_store_ends_with_a_settled_entry(
    backend: Backend, clock: FakeClock, scenario: Scenario
) -> None:
    async with backend.make(clock=clock) as store:
        await check(HumanInputHandler(store=store), scenario, lambda: clock.advance(10))


async def test_a_memory_questions_synchronous_answer_is_settled_too() -> None:
    handler = HumanInputHandler()
    asked = await handler.create("Ask", {"question": "?"})
    assert handler.resolve(asked.pending_id, "yes")
    refused = await handler.create("Ask", {"question": "?"})
    assert handler.reject(refused.pending_id, "no")
    closed = await handler.create("Ask", {"question": "?"})
    await handler.close()
    ends = [
        [(entry["type"], entry.get("status")) for entry in await handler.history(request)]
        for request in (asked.pending_id, refused.pending_id, closed.pending_id)
    ]
    assert ends == [
        [("created", None), ("settled", "resolved")],
        [("created", None), ("settled", "rejected")],
        [("created", None), ("settled", "rejected")],
    ]


async def test_a_handler_closing_on_a_durable_store_records_each_withdrawal(
    backend: Backend,
) -> None:
    async with backend.make() as store:
        handler = HumanInputHandler(store=store)
        asked = await handler.create("Ask", {"question": "?"})
        await handler.close()
        history = await handler.history(asked.pending_id)
    assert [(entry["type"], entry.get("withdrawn")) for entry in history] == [
        ("created", None),
        ("settled", True),
    ]
