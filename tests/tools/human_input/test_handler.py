"""HumanInputHandler: create, wait, resolve, reject, release and the pending snapshot."""

from __future__ import annotations

import asyncio
import math
from datetime import timedelta
from typing import Any

import pytest

from roomkit.core.exceptions import (
    HumanInputRejectedError,
    HumanInputTimeoutError,
    RequestWithdrawnError,
    UnknownRequestError,
)
from roomkit.models.clock import LONGEST_TIMEOUT
from roomkit.models.enums import ChannelType
from roomkit.models.pending_input import PendingInput, PendingInputStatus
from roomkit.testing import advance
from roomkit.tools.human_input import HumanInputHandler

RELEASED = "Released before an answer arrived"


async def test_create_records_the_request_with_its_fields(handler: HumanInputHandler) -> None:
    pending = await handler.create(
        "AskUserQuestion",
        {"question": "Color?"},
        room_id="r1",
        tool_call_id="tc1",
        channel_id="agent",
        channel_type=ChannelType.REALTIME_VOICE,
        actor_id="alice",
    )

    assert isinstance(pending, PendingInput)
    assert (pending.tool_name, pending.arguments) == ("AskUserQuestion", {"question": "Color?"})
    assert (pending.room_id, pending.tool_call_id, pending.channel_id) == ("r1", "tc1", "agent")
    assert pending.channel_type is ChannelType.REALTIME_VOICE
    assert pending.actor_id == "alice"
    assert pending.status is PendingInputStatus.PENDING
    assert (pending.result, pending.reject_reason, pending.detached) == (None, None, False)
    assert pending.created_at.utcoffset() == timedelta(0)
    assert handler.pending == {pending.pending_id: pending}


async def test_create_defaults_every_keyword(handler: HumanInputHandler) -> None:
    pending = await handler.create("Ask", {})

    assert (pending.room_id, pending.tool_call_id, pending.channel_id) == ("", "", "")
    assert pending.channel_type is ChannelType.AI
    assert pending.actor_id is None


async def test_every_request_gets_its_own_id(handler: HumanInputHandler) -> None:
    ids = {(await handler.create("Ask", {})).pending_id for _ in range(200)}

    assert len(ids) == 200
    assert all(isinstance(pending_id, str) and pending_id for pending_id in ids)


async def test_create_returns_without_suspending(handler: HumanInputHandler) -> None:
    """create() never yields to the loop, even with a notification to schedule."""

    async def notify(event: object) -> bool:
        return True

    handler.on_input_required = notify
    for make in (handler.create, handler.create_detached):
        call = make("Ask", {})
        with pytest.raises(StopIteration) as finished:
            call.send(None)
        assert isinstance(finished.value.value, PendingInput)
    assert len(handler.pending) == 2


@pytest.mark.parametrize(
    ("tool_name", "arguments"), [("Ask", ["q"]), ("Ask", '{"q": 1}'), (None, {})]
)
async def test_create_refuses_malformed_calls(
    handler: HumanInputHandler, tool_name: object, arguments: object
) -> None:
    with pytest.raises(TypeError):
        await handler.create(tool_name, arguments)  # type: ignore[arg-type]
    assert handler.pending == {}


@pytest.mark.parametrize(
    ("field", "value", "error", "says"),
    [
        ("room_id", None, TypeError, 'room_id must be a str \\(""'),
        ("channel_id", 7, TypeError, "channel_id must be a str"),
        ("tool_call_id", b"tc", TypeError, "tool_call_id must be a str"),
        ("actor_id", 5, TypeError, "actor_id must be a str or None"),
        ("channel_type", "voice", ValueError, "'voice' is not a valid ChannelType"),
    ],
)
async def test_create_refuses_a_field_of_the_wrong_kind(
    handler: HumanInputHandler, field: str, value: object, error: type[Exception], says: str
) -> None:
    """A field the hooks, the routing and the stores read is refused, not stored as given."""
    with pytest.raises(error, match=says):
        await handler.create("Ask", {}, **{field: value})  # type: ignore[arg-type]
    assert handler.pending == {}


async def test_a_channel_type_given_as_its_value_is_stored_as_the_member(
    handler: HumanInputHandler,
) -> None:
    pending = await handler.create("Ask", {}, channel_type="conference")  # type: ignore[arg-type]
    assert pending.channel_type is ChannelType.CONFERENCE


def _holding_itself() -> dict[str, object]:
    loop: dict[str, object] = {"question": "Again?"}
    loop["nested"] = [{"back": loop}]
    return loop


async def test_create_refuses_arguments_that_hold_themselves(handler: HumanInputHandler) -> None:
    """A dict inside itself is refused at once, naming where, instead of walked forever."""
    with pytest.raises(ValueError, match=r"hold themselves at 'nested\[0\]\.back'"):
        await handler.create("Ask", _holding_itself())
    assert handler.pending == {}


async def test_create_takes_a_value_reached_twice_by_different_paths(
    handler: HumanInputHandler,
) -> None:
    shared = {"city": "Lyon"}
    pending = await handler.create("Ask", {"from": shared, "to": [shared, shared]})
    assert pending.arguments["to"] == [shared, shared]


async def test_create_detached_marks_the_request_detached(handler: HumanInputHandler) -> None:
    pending = await handler.create_detached("Ask", {"q": 1}, room_id="r", channel_id="c")

    assert pending.detached is True
    assert (pending.room_id, pending.channel_id) == ("r", "c")
    assert handler.pending == {pending.pending_id: pending}


async def test_a_request_is_answerable_as_soon_as_create_returns(
    handler: HumanInputHandler,
) -> None:
    pending = await handler.create("Ask", {})

    assert handler.resolve(pending.pending_id, "blue") is True
    assert await handler.wait(pending.pending_id) == "blue"


async def test_wait_returns_the_answer_and_retires_the_request(handler: HumanInputHandler) -> None:
    pending = await handler.create("Ask", {})
    waiter = asyncio.create_task(handler.wait(pending.pending_id))
    await asyncio.sleep(0)
    assert not waiter.done()

    assert handler.resolve(pending.pending_id, '{"answer": "blue"}') is True

    assert await waiter == '{"answer": "blue"}'
    assert pending.status is PendingInputStatus.RESOLVED
    assert pending.result == '{"answer": "blue"}'
    assert handler.pending == {}


async def test_resolve_leaves_the_request_listed_until_wait_collects_it(
    handler: HumanInputHandler,
) -> None:
    pending = await handler.create("Ask", {})
    handler.resolve(pending.pending_id, "yes")

    assert handler.pending[pending.pending_id].status is PendingInputStatus.RESOLVED
    assert await handler.wait(pending.pending_id) == "yes"
    assert handler.pending == {}


async def test_an_empty_answer_is_returned_as_is(handler: HumanInputHandler) -> None:
    pending = await handler.create("Ask", {})
    handler.resolve(pending.pending_id, "")

    assert await handler.wait(pending.pending_id) == ""


async def test_resolve_and_reject_return_false_for_an_unknown_id(
    handler: HumanInputHandler,
) -> None:
    assert handler.resolve("nope", "x") is False
    assert handler.reject("nope", "x") is False


async def test_a_second_settle_is_refused_and_keeps_the_first_outcome(
    handler: HumanInputHandler,
) -> None:
    pending = await handler.create("Ask", {})
    assert handler.resolve(pending.pending_id, "first") is True

    assert handler.resolve(pending.pending_id, "second") is False
    assert handler.reject(pending.pending_id, "too late") is False
    assert handler.release(pending.pending_id) is True
    assert await handler.wait(pending.pending_id) == "first"


async def test_resolve_after_reject_is_refused(handler: HumanInputHandler) -> None:
    pending = await handler.create("Ask", {})
    assert handler.reject(pending.pending_id, "no") is True

    assert handler.resolve(pending.pending_id, "yes") is False
    with pytest.raises(HumanInputRejectedError, match=r"^no$"):
        await handler.wait(pending.pending_id)


async def test_wait_raises_the_rejection_with_its_reason(handler: HumanInputHandler) -> None:
    pending = await handler.create("Ask", {})
    waiter = asyncio.create_task(handler.wait(pending.pending_id))
    await asyncio.sleep(0)

    assert handler.reject(pending.pending_id, "user declined") is True

    with pytest.raises(HumanInputRejectedError) as caught:
        await waiter
    assert str(caught.value) == "user declined"
    assert isinstance(caught.value, RuntimeError)
    assert pending.status is PendingInputStatus.REJECTED
    assert pending.reject_reason == "user declined"
    assert handler.pending == {}


async def test_an_empty_rejection_reason_reads_request_rejected(
    handler: HumanInputHandler,
) -> None:
    pending = await handler.create("Ask", {})
    handler.reject(pending.pending_id)

    with pytest.raises(HumanInputRejectedError) as caught:
        await handler.wait(pending.pending_id)
    assert str(caught.value) == "Request rejected"


@pytest.mark.parametrize("answer", [None, 42, {"answer": "blue"}, b"blue"])
async def test_a_non_text_answer_raises_type_error(
    handler: HumanInputHandler, answer: object
) -> None:
    pending = await handler.create("Ask", {})

    with pytest.raises(TypeError, match="result must be a str"):
        handler.resolve(pending.pending_id, answer)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="reason must be a str"):
        handler.reject(pending.pending_id, answer)  # type: ignore[arg-type]
    assert pending.status is PendingInputStatus.PENDING


@pytest.mark.parametrize(
    ("settle", "expected"),
    [
        (
            lambda h, i: h.aresolve(i, 42),
            "result must be a str (send structured answers as JSON text), got int",
        ),
        (lambda h, i: h.aresolve(i, "yes", by=42), "by must be a str, got int"),
        (lambda h, i: h.areject(i, 42), "reason must be a str, got int"),
        (lambda h, i: h.areject(i, "no", by=42), "by must be a str, got int"),
    ],
    ids=["an answer", "the answerer", "a reason", "the rejecter"],
)
async def test_a_non_text_field_is_told_what_to_send_only_where_it_applies(
    handler: HumanInputHandler, settle: Any, expected: str
) -> None:
    """Only an answer can be structured: a reason or an actor id is told no JSON hint."""
    pending = await handler.create("Ask", {})

    with pytest.raises(TypeError) as caught:
        await settle(handler, pending.pending_id)

    assert str(caught.value) == expected
    assert pending.status is PendingInputStatus.PENDING


async def test_a_key_that_is_no_text_gets_no_answer_hint(handler: HumanInputHandler) -> None:
    with pytest.raises(TypeError) as caught:
        await handler.create("Ask", {}, key=7)  # type: ignore[arg-type]

    assert str(caught.value) == "key must be a str, got int"


async def test_wait_on_an_unknown_id_raises_value_error(handler: HumanInputHandler) -> None:
    with pytest.raises(UnknownRequestError) as caught:
        await handler.wait("nope")

    assert str(caught.value) == "No pending request with id nope"
    assert isinstance(caught.value, ValueError)


async def test_wait_times_out_after_its_default_timeout(handler: HumanInputHandler) -> None:
    loop = asyncio.get_running_loop()
    pending = await handler.create("Ask", {})
    start = loop.time()

    with pytest.raises(HumanInputTimeoutError) as caught:
        await handler.wait(pending.pending_id)

    assert isinstance(caught.value, TimeoutError)
    assert not isinstance(caught.value, RuntimeError)
    assert loop.time() - start == 300
    assert pending.status is PendingInputStatus.TIMED_OUT
    assert handler.pending == {}
    assert handler.resolve(pending.pending_id, "late") is False


async def test_wait_honours_its_timeout_argument(handler: HumanInputHandler) -> None:
    loop = asyncio.get_running_loop()
    pending = await handler.create("Ask", {})
    start = loop.time()

    with pytest.raises(TimeoutError):
        await handler.wait(pending.pending_id, timeout=0.2)

    assert loop.time() - start == pytest.approx(0.2)


async def test_an_answer_before_the_deadline_wins(handler: HumanInputHandler) -> None:
    loop = asyncio.get_running_loop()
    pending = await handler.create("Ask", {})
    loop.call_later(9.5, handler.resolve, pending.pending_id, "just in time")

    assert await handler.wait(pending.pending_id, timeout=10) == "just in time"

    await advance(60)
    assert pending.status is PendingInputStatus.RESOLVED
    assert await handler.wait(pending.pending_id) == "just in time"


async def test_timeout_zero_times_out_an_unanswered_request(handler: HumanInputHandler) -> None:
    pending = await handler.create("Ask", {})

    with pytest.raises(TimeoutError):
        await handler.wait(pending.pending_id, timeout=0)


async def test_timeout_zero_returns_an_answer_already_given(handler: HumanInputHandler) -> None:
    pending = await handler.create("Ask", {})
    handler.resolve(pending.pending_id, "ready")

    assert await handler.wait(pending.pending_id, timeout=0) == "ready"


async def test_wait_without_timeout_waits_until_answered(handler: HumanInputHandler) -> None:
    pending = await handler.create("Ask", {})
    waiter = asyncio.create_task(handler.wait(pending.pending_id, timeout=None))

    await advance(10**7)
    assert not waiter.done()

    handler.resolve(pending.pending_id, "finally")
    assert await waiter == "finally"


@pytest.mark.parametrize(
    ("timeout", "error"),
    [
        (-1, ValueError),
        (math.nan, ValueError),
        (math.inf, ValueError),
        (10**12, ValueError),
        (1e12, ValueError),
        ("5", TypeError),
    ],
)
async def test_wait_rejects_a_bad_timeout(
    handler: HumanInputHandler, timeout: object, error: type[Exception]
) -> None:
    pending = await handler.create("Ask", {})

    with pytest.raises(error, match="timeout"):
        await handler.wait(pending.pending_id, timeout=timeout)  # type: ignore[arg-type]
    assert pending.status is PendingInputStatus.PENDING


@pytest.mark.parametrize("timeout", [10**12, 1e12, LONGEST_TIMEOUT + 1])
async def test_a_deadline_past_a_century_is_refused_naming_the_limit(
    handler: HumanInputHandler, timeout: float
) -> None:
    """A deadline no date can hold is a mistake: refused at once, nothing created."""
    with pytest.raises(ValueError, match="a century; None waits forever"):
        await handler.create("Ask", {}, timeout=timeout)
    with pytest.raises(ValueError, match="a century"):
        await handler.create_approval("pay", {}, timeout=timeout)
    assert await handler.list_pending() == []


@pytest.mark.parametrize(
    ("schema", "problem"),
    [
        ({"type": "object", "properties": {"n": {"type": 5}}}, "invalid parameters schema"),
        ({"type": "string"}, "must describe an object"),
        ({"type": "object", "properties": {"n": {"$ref": "#/$defs/gone"}}}, "unresolvable"),
    ],
)
async def test_an_approval_whose_tool_schema_no_edit_could_match_is_refused(
    handler: HumanInputHandler, schema: dict[str, object], problem: str
) -> None:
    """The schema an edit is checked against is checked itself, when the approval is made:
    not later, in front of the person editing."""
    with pytest.raises(ValueError, match=problem):
        await handler.create_approval("pay", {"n": 1}, tool_schema=schema)
    assert await handler.list_pending() == []


async def test_a_deadline_of_a_century_is_kept(handler: HumanInputHandler) -> None:
    pending = await handler.create("Ask", {}, timeout=LONGEST_TIMEOUT)
    waiting = asyncio.create_task(handler.wait(pending.pending_id, timeout=LONGEST_TIMEOUT))
    await asyncio.sleep(0)
    assert handler.resolve(pending.pending_id, "yes")
    assert await waiting == "yes"


async def test_a_later_waiter_does_not_extend_the_deadline(handler: HumanInputHandler) -> None:
    loop = asyncio.get_running_loop()
    pending = await handler.create("Ask", {})
    start = loop.time()
    first = asyncio.create_task(handler.wait(pending.pending_id, timeout=10))
    await advance(5)
    second = asyncio.create_task(handler.wait(pending.pending_id, timeout=100))

    outcomes = await asyncio.gather(first, second, return_exceptions=True)

    assert all(isinstance(outcome, HumanInputTimeoutError) for outcome in outcomes)
    assert loop.time() - start == 10


async def test_two_waiters_on_one_request_both_get_the_answer(
    handler: HumanInputHandler,
) -> None:
    pending = await handler.create("Ask", {})
    waiters = [asyncio.create_task(handler.wait(pending.pending_id)) for _ in range(2)]
    await asyncio.sleep(0)

    handler.resolve(pending.pending_id, "both")

    assert await asyncio.gather(*waiters) == ["both", "both"]
    assert handler.pending == {}


async def test_two_waiters_on_one_request_both_get_the_rejection(
    handler: HumanInputHandler,
) -> None:
    pending = await handler.create("Ask", {})
    waiters = [asyncio.create_task(handler.wait(pending.pending_id)) for _ in range(2)]
    await asyncio.sleep(0)

    handler.reject(pending.pending_id, "no")

    outcomes = await asyncio.gather(*waiters, return_exceptions=True)
    assert [type(outcome) for outcome in outcomes] == [HumanInputRejectedError] * 2
    assert [str(outcome) for outcome in outcomes] == ["no", "no"]


async def test_a_cancelled_wait_withdraws_the_request(handler: HumanInputHandler) -> None:
    pending = await handler.create("Ask", {})
    waiter = asyncio.create_task(handler.wait(pending.pending_id))
    await asyncio.sleep(0)

    waiter.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiter

    assert handler.resolve(pending.pending_id, "late") is False
    assert pending.status is PendingInputStatus.REJECTED
    assert (pending.reject_reason, pending.withdrawn) == (RELEASED, True)
    assert handler.pending == {}
    with pytest.raises(RequestWithdrawnError, match=f"^{RELEASED}$"):
        await handler.wait(pending.pending_id)


async def test_cancelling_one_of_two_waiters_ends_the_other_with_the_withdrawal(
    handler: HumanInputHandler,
) -> None:
    """The other waiter is told the request was withdrawn; it neither hangs nor is cancelled."""
    pending = await handler.create("Ask", {})
    cut = asyncio.create_task(handler.wait(pending.pending_id))
    other = asyncio.create_task(handler.wait(pending.pending_id))
    await asyncio.sleep(0)

    cut.cancel()
    outcomes = await asyncio.gather(cut, other, return_exceptions=True)

    assert isinstance(outcomes[0], asyncio.CancelledError)
    assert isinstance(outcomes[1], RequestWithdrawnError)
    assert str(outcomes[1]) == RELEASED
    assert handler.resolve(pending.pending_id, "late") is False


async def test_release_withdraws_an_unanswered_request(handler: HumanInputHandler) -> None:
    pending = await handler.create("Ask", {})
    waiter = asyncio.create_task(handler.wait(pending.pending_id))
    await asyncio.sleep(0)

    assert handler.release(pending.pending_id) is True

    with pytest.raises(RequestWithdrawnError) as caught:
        await waiter
    assert str(caught.value) == RELEASED
    assert isinstance(caught.value, RuntimeError)
    assert not isinstance(caught.value, HumanInputRejectedError)
    assert handler.pending == {}
    assert handler.resolve(pending.pending_id, "late") is False


async def test_release_returns_false_when_nothing_is_dropped(handler: HumanInputHandler) -> None:
    pending = await handler.create_detached("Ask", {})

    assert handler.release(pending.pending_id) is True
    assert handler.release(pending.pending_id) is False
    assert handler.release("nope") is False


async def test_a_released_detached_request_replays_its_answer(
    handler: HumanInputHandler,
) -> None:
    pending = await handler.create_detached("Ask", {}, room_id="r")
    assert handler.resolve(pending.pending_id, "carried back") is True

    assert handler.release(pending.pending_id) is True

    assert handler.pending == {}
    assert await handler.wait(pending.pending_id) == "carried back"


async def test_pending_is_a_copy(handler: HumanInputHandler) -> None:
    pending = await handler.create("Ask", {})
    snapshot = handler.pending

    snapshot.clear()
    snapshot["forged"] = pending

    assert handler.pending == {pending.pending_id: pending}


async def test_pending_lists_only_the_active_requests(handler: HumanInputHandler) -> None:
    done = await handler.create("Ask", {})
    waiting = await handler.create("Ask", {})
    handler.resolve(done.pending_id, "x")
    await handler.wait(done.pending_id)

    assert list(handler.pending) == [waiting.pending_id]


@pytest.mark.parametrize("retention", [-1, -128])
def test_a_negative_retention_raises_value_error(retention: int) -> None:
    with pytest.raises(ValueError, match="retention"):
        HumanInputHandler(retention=retention)
