"""One behaviour, every store: the handler's contract on memory, SQLite and Redis."""

from __future__ import annotations

import asyncio
import json

import pytest
from tests.tools.human_input.durable.store_fixtures import HandlerFactory

from roomkit.core.exceptions import (
    AsyncSettleRequiredError,
    HumanInputRejectedError,
    HumanInputTimeoutError,
    InvalidAnswerError,
    RequestWithdrawnError,
    UnknownRequestError,
)
from roomkit.models.pending_input import PendingInputStatus
from roomkit.stores import PendingChange, PendingChangeKind
from roomkit.tools.human_input import HumanInputHandler


async def test_an_answer_ends_the_wait_and_a_second_answer_loses(
    make_handler: HandlerFactory,
) -> None:
    handler = make_handler()
    request = await handler.create("AskUserQuestion", {"question": "Which city?"}, room_id="r1")
    waiting = asyncio.create_task(handler.wait(request.pending_id, timeout=30))

    assert await handler.aresolve(request.pending_id, "Paris", by="alice") is True
    assert await waiting == "Paris"
    assert await handler.aresolve(request.pending_id, "Rome") is False
    settled = await handler.get_request(request.pending_id)
    assert settled is not None
    assert (settled.status, settled.result, settled.settled_by) == (
        PendingInputStatus.RESOLVED,
        "Paris",
        "alice",
    )


async def test_an_answer_from_another_handler_on_the_store_wakes_the_waiter(
    make_handler: HandlerFactory,
) -> None:
    asker, desk = make_handler(), make_handler()
    request = await asker.create("AskUserQuestion", {"question": "Ship it?"}, room_id="r1")
    waiting = asyncio.create_task(asker.wait(request.pending_id, timeout=30))

    assert await desk.aresolve(request.pending_id, "yes") is True

    assert await waiting == "yes"


async def test_without_retention_an_answer_elsewhere_still_ends_the_wait(
    make_handler: HandlerFactory,
) -> None:
    """No retention switches replay off, never the delivery of an answer to its waiter."""
    asker, desk = make_handler(no_retention=True), make_handler(no_retention=True)
    request = await asker.create("AskUserQuestion", {"question": "Ship it?"}, room_id="r1")
    waiting = asyncio.create_task(asker.wait(request.pending_id, timeout=30))

    assert await desk.aresolve(request.pending_id, "yes") is True

    assert await waiting == "yes"


async def test_a_rejection_raises_with_its_reason(make_handler: HandlerFactory) -> None:
    handler = make_handler()
    request = await handler.create("ConfirmAction", {"action": "deploy"})
    waiting = asyncio.create_task(handler.wait(request.pending_id, timeout=30))

    assert await handler.areject(request.pending_id, "not today", by="bob") is True

    with pytest.raises(HumanInputRejectedError, match="not today"):
        await waiting


async def test_the_deadline_times_the_request_out_and_a_late_answer_loses(
    make_handler: HandlerFactory,
) -> None:
    handler = make_handler()
    request = await handler.create("AskUserQuestion", {"question": "Anyone?"})

    with pytest.raises(HumanInputTimeoutError):
        await handler.wait(request.pending_id, timeout=0.05)

    assert await handler.aresolve(request.pending_id, "too late") is False
    settled = await handler.get_request(request.pending_id)
    assert settled is not None
    assert settled.status is PendingInputStatus.TIMED_OUT


async def test_a_deadline_set_at_creation_holds_without_a_wait_timeout(
    make_handler: HandlerFactory,
) -> None:
    handler = make_handler()
    request = await handler.create("AskUserQuestion", {"question": "Quick?"}, timeout=0.05)
    assert request.deadline is not None

    with pytest.raises(HumanInputTimeoutError):
        await make_handler().wait(request.pending_id, timeout=None)


async def test_a_later_wait_brings_a_deadline_forward_but_never_back(
    make_handler: HandlerFactory,
) -> None:
    handler = make_handler()
    request = await handler.create("AskUserQuestion", {"question": "Soon?"}, timeout=3600)

    with pytest.raises(HumanInputTimeoutError):
        await handler.wait(request.pending_id, timeout=0.05)


async def test_a_settled_request_replays_its_outcome(make_handler: HandlerFactory) -> None:
    handler = make_handler()
    request = await handler.create("AskUserQuestion", {"question": "Which?"})
    waiting = asyncio.create_task(handler.wait(request.pending_id, timeout=30))
    await handler.aresolve(request.pending_id, "B")
    assert await waiting == "B"

    assert await handler.wait(request.pending_id, timeout=30) == "B"


async def test_an_unknown_id_is_reported(make_handler: HandlerFactory) -> None:
    handler = make_handler()

    with pytest.raises(UnknownRequestError):
        await handler.wait("no-such-request", timeout=1)
    assert await handler.aresolve("no-such-request", "x") is False
    assert await handler.get_request("no-such-request") is None


async def test_listing_filters_by_room_and_actor_and_hides_settled_requests(
    make_handler: HandlerFactory,
) -> None:
    asker, desk = make_handler(), make_handler()
    a = await asker.create("AskUserQuestion", {"question": "a"}, room_id="r1", actor_id="ann")
    b = await asker.create("AskUserQuestion", {"question": "b"}, room_id="r1", actor_id="ben")
    c = await asker.create("AskUserQuestion", {"question": "c"}, room_id="r2", actor_id="ann")
    settled = await asker.create("AskUserQuestion", {"question": "d"}, room_id="r1")
    await desk.areject(settled.pending_id, "no")

    everything = [r.pending_id for r in await desk.list_pending()]
    assert everything == [a.pending_id, b.pending_id, c.pending_id]
    assert [r.pending_id for r in await desk.list_pending(room_id="r1")] == [
        a.pending_id,
        b.pending_id,
    ]
    assert [r.pending_id for r in await desk.list_pending(actor_id="ann")] == [
        a.pending_id,
        c.pending_id,
    ]
    listed = (await desk.list_pending(room_id="r2"))[0]
    assert listed.arguments == {"question": "c"}


async def test_a_create_with_a_known_key_reattaches_instead_of_asking_again(
    make_handler: HandlerFactory,
) -> None:
    handler = make_handler()
    announced: list[str] = []

    async def announce(event: object) -> None:
        announced.append(getattr(event, "pending_id", ""))

    handler.on_input_required = announce
    first = await handler.create("AskUserQuestion", {"question": "q"}, key="room:ai:call-1")
    again = await make_handler().create("AskUserQuestion", {"question": "q"}, key="room:ai:call-1")

    assert again.pending_id == first.pending_id
    waiting = asyncio.create_task(handler.wait(again.pending_id, timeout=30))
    await handler.aresolve(first.pending_id, "once")
    assert await waiting == "once"
    assert announced == [first.pending_id]


async def test_a_create_whose_key_was_answered_gets_the_outcome_at_once(
    make_handler: HandlerFactory,
) -> None:
    handler = make_handler()
    first = await handler.create("AskUserQuestion", {"question": "q"}, key="k-answered")
    await handler.aresolve(first.pending_id, "kept")

    again = await make_handler().create("AskUserQuestion", {"question": "q"}, key="k-answered")

    assert again.pending_id == first.pending_id
    assert await make_handler().wait(again.pending_id, timeout=30) == "kept"


async def test_an_answer_breaking_the_schema_is_refused_and_the_request_stays_open(
    make_handler: HandlerFactory,
) -> None:
    handler = make_handler()
    schema = {"type": "object", "properties": {"confirmed": {"type": "boolean"}}}
    schema["required"] = ["confirmed"]
    request = await handler.create("ConfirmAction", {"action": "x"}, answer_schema=schema)

    with pytest.raises(InvalidAnswerError, match="confirmed"):
        await make_handler().aresolve(request.pending_id, json.dumps({"confirmed": "yes"}))
    assert [r.pending_id for r in await handler.list_pending()] == [request.pending_id]

    assert await make_handler().aresolve(request.pending_id, '{"confirmed": true}') is True
    stored = await handler.get_request(request.pending_id)
    assert stored is not None
    assert stored.answer_schema == schema


async def test_a_handler_that_read_the_request_checks_the_answer_against_it(
    make_handler: HandlerFactory,
) -> None:
    """A surface reads the request, then answers it: a bad answer is refused, a good one
    settles, and a bad one to the settled request is no error."""
    handler, desk = make_handler(), make_handler()
    schema = {"type": "object", "properties": {"confirmed": {"type": "boolean"}}}
    schema["required"] = ["confirmed"]
    request = await handler.create("ConfirmAction", {"action": "x"}, answer_schema=schema)
    assert await desk.get_request(request.pending_id) is not None

    with pytest.raises(InvalidAnswerError, match="confirmed"):
        await desk.aresolve(request.pending_id, json.dumps({"confirmed": "yes"}), by="bob")
    assert [r.pending_id for r in await handler.list_pending()] == [request.pending_id]

    assert await desk.aresolve(request.pending_id, '{"confirmed": true}', by="bob") is True
    assert await desk.aresolve(request.pending_id, '{"confirmed": true}', by="bob") is True
    assert await desk.aresolve(request.pending_id, '{"confirmed": "no"}', by="bob") is False
    assert await handler.wait(request.pending_id, timeout=30) == '{"confirmed": true}'


async def test_listeners_hear_of_creates_and_settles(make_handler: HandlerFactory) -> None:
    listener_side, asker = make_handler(), make_handler()
    seen: list[PendingChange] = []
    settled = asyncio.Event()

    def listen(change: PendingChange) -> None:
        seen.append(change)
        if change.kind in (PendingChangeKind.SETTLED, PendingChangeKind.RESYNC):
            settled.set()

    unsubscribe = listener_side.subscribe(listen)
    before = len(seen)  # what the feed said before anything changed does not count
    request = await asker.create("AskUserQuestion", {"question": "q"})
    await asker.aresolve(request.pending_id, "a")
    heard = (PendingChangeKind.SETTLED, request.pending_id)
    async with asyncio.timeout(10):
        while True:
            await settled.wait()
            settled.clear()
            later = seen[before:]
            if heard in {(change.kind, change.pending_id) for change in later}:
                break
            if any(change.kind is PendingChangeKind.RESYNC for change in later):
                # The feed began listening once the changes were under way, and says so:
                # its listeners re-read, and the record tells.
                record = await listener_side.get_request(request.pending_id)
                assert record is not None
                assert record.status.value == "resolved"
                break
    unsubscribe()


async def test_a_cut_wait_withdraws_a_request_without_a_key(
    make_handler: HandlerFactory,
) -> None:
    handler = make_handler()
    request = await handler.create("AskUserQuestion", {"question": "q"})
    waiting = asyncio.create_task(handler.wait(request.pending_id, timeout=30))
    await asyncio.sleep(0)  # let the wait start

    waiting.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiting

    stored = await handler.get_request(request.pending_id)
    assert stored is not None
    assert (stored.status, stored.withdrawn) == (PendingInputStatus.REJECTED, True)
    assert await handler.aresolve(request.pending_id, "late") is False


async def test_close_withdraws_requests_and_their_waiters_raise(
    make_handler: HandlerFactory,
) -> None:
    handler = make_handler()
    request = await handler.create("AskUserQuestion", {"question": "q"}, channel_id="ai")
    waiting = asyncio.create_task(handler.wait(request.pending_id, timeout=30))
    await asyncio.sleep(0)

    await handler.close(channel_id="ai")

    with pytest.raises(RequestWithdrawnError):
        await waiting


async def test_only_one_of_many_concurrent_answers_wins(make_handler: HandlerFactory) -> None:
    handlers = [make_handler() for _ in range(3)]
    requests = [
        await handlers[0].create("AskUserQuestion", {"question": str(n)}) for n in range(20)
    ]

    results = await asyncio.gather(
        *(h.aresolve(r.pending_id, f"from-{i}") for r in requests for i, h in enumerate(handlers))
    )

    for n, request in enumerate(requests):
        wins = results[n * 3 : n * 3 + 3]
        assert wins.count(True) == 1
        stored = await handlers[1].get_request(request.pending_id)
        assert stored is not None
        assert stored.result == f"from-{wins.index(True)}"


async def test_an_answer_and_the_deadline_never_both_win(make_handler: HandlerFactory) -> None:
    """Answers land around the deadline: whoever was told True decides what wait() says."""
    asker, answerer = make_handler(), make_handler()
    trials = []
    for _ in range(30):
        request = await asker.create("AskUserQuestion", {"question": "race"})
        trials.append(
            (
                request.pending_id,
                asyncio.create_task(asker.wait(request.pending_id, timeout=0.03)),
            )
        )
    answered = await asyncio.gather(
        *(answerer.aresolve(pending_id, "in time") for pending_id, _ in trials[::2])
    )
    await asyncio.gather(*(task for _, task in trials), return_exceptions=True)

    told = dict(zip([pending_id for pending_id, _ in trials[::2]], answered, strict=True))
    for pending_id, task in trials:
        error = task.exception()
        if told.get(pending_id):
            assert error is None
            assert task.result() == "in time"
        else:
            assert isinstance(error, HumanInputTimeoutError)


async def test_synchronous_settles_work_in_memory_and_name_the_async_method_elsewhere(
    make_handler: HandlerFactory, store_kind: str
) -> None:
    handler = make_handler()
    request = await handler.create("AskUserQuestion", {"question": "q"})

    if store_kind == "memory":
        assert handler.resolve(request.pending_id, "sync") is True
        return
    with pytest.raises(AsyncSettleRequiredError, match="aresolve"):
        handler.resolve(request.pending_id, "sync")
    with pytest.raises(AsyncSettleRequiredError, match="areject"):
        handler.reject(request.pending_id, "no")
    with pytest.raises(AsyncSettleRequiredError, match="arelease"):
        handler.release(request.pending_id)
    assert [r.pending_id for r in await handler.list_pending()] == [request.pending_id]


async def test_a_keyed_request_outlives_a_cut_wait_only_on_a_durable_store(
    make_handler: HandlerFactory, store_kind: str
) -> None:
    handler = make_handler()
    request = await handler.create("AskUserQuestion", {"question": "q"}, key="room:ai:call-9")
    waiting = asyncio.create_task(handler.wait(request.pending_id, timeout=30))
    await asyncio.sleep(0)
    waiting.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiting

    if store_kind == "memory":
        # Nothing outlives the process here: the cut wait withdrew the request.
        stored = await handler.get_request(request.pending_id)
        assert stored is not None
        assert stored.withdrawn is True
        return

    later = make_handler()
    again = await later.create("AskUserQuestion", {"question": "q"}, key="room:ai:call-9")
    resumed = asyncio.create_task(later.wait(again.pending_id, timeout=30))
    assert await make_handler().aresolve(request.pending_id, "kept for you") is True
    assert await resumed == "kept for you"


def test_a_handler_refuses_a_schema_that_is_not_json_schema() -> None:
    handler = HumanInputHandler()

    with pytest.raises(ValueError, match="answer_schema is no valid JSON Schema"):
        asyncio.run(handler.create("T", {}, answer_schema={"type": 12}))
