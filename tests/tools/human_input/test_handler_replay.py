"""Late and repeated reads: a recorded outcome replays until it leaves the bounded retention."""

from __future__ import annotations

import asyncio

import pytest

from roomkit.core.exceptions import (
    HumanInputRejectedError,
    HumanInputTimeoutError,
    RequestWithdrawnError,
    UnknownRequestError,
)
from roomkit.models.pending_input import PendingInputEvent
from roomkit.tools.human_input import HumanInputHandler


async def settled(handler: HumanInputHandler, answer: str) -> str:
    """A request answered and collected by its wait(); returns its id."""
    pending = await handler.create("Ask", {})
    handler.resolve(pending.pending_id, answer)
    assert await handler.wait(pending.pending_id) == answer
    return pending.pending_id


async def test_wait_replays_an_answer(handler: HumanInputHandler) -> None:
    pending_id = await settled(handler, "blue")

    assert await handler.wait(pending_id) == "blue"
    assert await handler.wait(pending_id, timeout=0) == "blue"


async def test_wait_replays_a_rejection(handler: HumanInputHandler) -> None:
    pending = await handler.create("Ask", {})
    handler.reject(pending.pending_id, "user declined")

    for _ in range(2):
        with pytest.raises(HumanInputRejectedError) as caught:
            await handler.wait(pending.pending_id)
        assert str(caught.value) == "user declined"


async def test_wait_replays_a_hook_denial(handler: HumanInputHandler) -> None:
    denied = asyncio.Event()

    async def deny(event: PendingInputEvent) -> bool:
        denied.set()
        return False

    handler.on_input_required = deny
    pending = await handler.create("Ask", {})
    await denied.wait()
    await asyncio.sleep(0)

    for _ in range(2):
        with pytest.raises(
            HumanInputRejectedError, match=r"^Denied by ON_USER_INPUT_REQUIRED hook$"
        ):
            await handler.wait(pending.pending_id)


async def test_wait_replays_a_timeout_without_waiting_again(handler: HumanInputHandler) -> None:
    loop = asyncio.get_running_loop()
    pending = await handler.create("Ask", {})
    with pytest.raises(HumanInputTimeoutError):
        await handler.wait(pending.pending_id, timeout=5)
    timed_out_at = loop.time()

    with pytest.raises(HumanInputTimeoutError) as caught:
        await handler.wait(pending.pending_id, timeout=5)

    assert isinstance(caught.value, TimeoutError)
    assert loop.time() == timed_out_at


@pytest.mark.parametrize(
    ("give_up", "reason"),
    [("release", "Released before an answer arrived"), ("close", "Human input handler closed")],
)
async def test_wait_replays_a_withdrawal(
    handler: HumanInputHandler, give_up: str, reason: str
) -> None:
    pending = await handler.create("Ask", {})
    if give_up == "release":
        handler.release(pending.pending_id)
    else:
        await handler.close()

    for _ in range(2):
        with pytest.raises(RequestWithdrawnError) as caught:
            await handler.wait(pending.pending_id)
        assert str(caught.value) == reason
        assert not isinstance(caught.value, HumanInputRejectedError)


async def test_an_answer_the_host_drops_right_after_resolve_still_replays(
    handler: HumanInputHandler,
) -> None:
    """A host keeping its own books releases on resolve(); the waiting tool still gets it."""
    pending = await handler.create("Ask", {})
    waiter = asyncio.create_task(handler.wait(pending.pending_id))
    await asyncio.sleep(0)

    handler.resolve(pending.pending_id, "blue")
    handler.release(pending.pending_id)

    assert await waiter == "blue"
    assert await handler.wait(pending.pending_id) == "blue"


async def test_retention_fills_when_the_answer_arrives_not_when_it_is_read() -> None:
    handler = HumanInputHandler(retention=1)
    first_id = await settled(handler, "first")
    unread = await handler.create("Ask", {})

    handler.resolve(unread.pending_id, "second")

    with pytest.raises(UnknownRequestError):
        await handler.wait(first_id)
    assert await handler.wait(unread.pending_id) == "second"


async def test_retention_one_replays_only_the_newest_outcome() -> None:
    handler = HumanInputHandler(retention=1)
    older = await settled(handler, "older")
    newer = await settled(handler, "newer")

    assert await handler.wait(newer) == "newer"
    with pytest.raises(UnknownRequestError) as caught:
        await handler.wait(older)
    assert str(caught.value) == f"No pending request with id {older}"


async def test_retention_evicts_the_oldest_settled_first() -> None:
    handler = HumanInputHandler(retention=2)
    first = await handler.create("Ask", {})
    second = await handler.create("Ask", {})
    third = await handler.create("Ask", {})
    for pending, answer in ((second, "2"), (first, "1"), (third, "3")):
        handler.resolve(pending.pending_id, answer)
        await handler.wait(pending.pending_id)

    with pytest.raises(UnknownRequestError):
        await handler.wait(second.pending_id)
    assert await handler.wait(first.pending_id) == "1"
    assert await handler.wait(third.pending_id) == "3"


async def test_retention_zero_switches_replay_off() -> None:
    handler = HumanInputHandler(retention=0)
    pending = await handler.create("Ask", {})
    handler.resolve(pending.pending_id, "once")

    assert await handler.wait(pending.pending_id) == "once"
    with pytest.raises(UnknownRequestError):
        await handler.wait(pending.pending_id)


async def test_retention_zero_still_answers_an_active_request() -> None:
    handler = HumanInputHandler(retention=0)
    pending = await handler.create("Ask", {})
    waiter = asyncio.create_task(handler.wait(pending.pending_id))
    await asyncio.sleep(0)

    handler.resolve(pending.pending_id, "live")

    assert await waiter == "live"


async def test_the_default_retention_keeps_the_last_128_outcomes(
    handler: HumanInputHandler,
) -> None:
    ids = [await settled(handler, str(n)) for n in range(129)]

    with pytest.raises(UnknownRequestError):
        await handler.wait(ids[0])
    assert await handler.wait(ids[1]) == "1"
    assert await handler.wait(ids[-1]) == "128"


async def test_a_timed_out_request_enters_the_retention_when_its_wait_times_out() -> None:
    handler = HumanInputHandler(retention=1)
    pending = await handler.create("Ask", {})
    with pytest.raises(TimeoutError):
        await handler.wait(pending.pending_id, timeout=1)

    newer = await settled(handler, "newer")

    assert await handler.wait(newer) == "newer"
    with pytest.raises(UnknownRequestError):
        await handler.wait(pending.pending_id)


def test_retention_must_be_an_int() -> None:
    with pytest.raises(TypeError, match="retention"):
        HumanInputHandler(retention=1.5)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="retention"):
        HumanInputHandler(retention=True)


async def test_a_key_whose_outcome_left_the_retention_opens_a_new_request() -> None:
    handler = HumanInputHandler(retention=1)
    keyed = await handler.create("Ask", {}, key="colour")
    handler.resolve(keyed.pending_id, "blue")
    assert await handler.wait(keyed.pending_id) == "blue"
    assert (await handler.create("Ask", {}, key="colour")) is keyed

    await settled(handler, "later")  # evicts the keyed outcome

    again = await handler.create("Ask", {}, key="colour")
    assert again.pending_id != keyed.pending_id
    assert again.status == "pending"
