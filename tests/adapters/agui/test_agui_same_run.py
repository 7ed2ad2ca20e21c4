"""One AG-UI run received by two server processes on one store at the same moment (a retry
through a load balancer, two tabs): its message is recorded once and its turn runs once."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

import pytest
from ag_ui.core import EventType
from agui_front import Front, parse, texts
from tests.core.room_stores import DurableRoomStore, Place

from roomkit.core.exceptions import StoreUnavailableError
from roomkit.core.store import OpenTurn
from roomkit.models.room import RoomEvent
from roomkit.providers.ai.base import AIResponse
from roomkit.providers.ai.mock import MockAIProvider


def held_at_record(rooms: DurableRoomStore) -> tuple[asyncio.Event, asyncio.Event]:
    """Make ``rooms`` hold its next inbound message before writing it, as a process that
    read the thread and has not recorded the message yet: set when it holds there, and the
    event that lets it go on."""
    holding, release = asyncio.Event(), asyncio.Event()
    record = rooms.record_inbound

    async def record_later(event: RoomEvent, turns: Sequence[OpenTurn]) -> None:
        if not release.is_set():
            holding.set()
            await release.wait()
        await record(event, turns)

    rooms.record_inbound = record_later  # type: ignore[method-assign]
    return holding, release


def sent(events: list[RoomEvent], message_id: str) -> list[RoomEvent]:
    """The events recording the user message ``message_id``."""
    return [
        e for e in events if e.channel_id == "agui" and e.metadata.get("message_id") == message_id
    ]


@pytest.mark.parametrize("first_run", [True, False], ids=["new-thread", "existing-thread"])
async def test_a_run_sent_to_two_processes_at_once_runs_its_message_once(
    place: Place, first_run: bool
) -> None:
    """The first process holds between its read of the thread and its record of the
    message while the second takes the same run: the message is recorded once, the model
    called once, and both runs end without an error."""
    warm = [] if first_run else [AIResponse(content="Hello.")]
    models = [
        MockAIProvider(ai_responses=[*warm, AIResponse(content="Reply 1.")]),
        MockAIProvider(ai_responses=[AIResponse(content="Reply 2.")]),
    ]
    stores = [(place.questions(), place.rooms()) for _ in models]
    fronts = [
        Front([], questions=questions, rooms=rooms, provider=model)
        for (questions, rooms), model in zip(stores, models, strict=True)
    ]
    messages = fronts[0].messages
    try:
        if not first_run:
            await fronts[0].run("Hello", thread="t1")
        messages.append({"id": "m-new", "role": "user", "content": "Paint it"})
        body = {"threadId": "t1", "runId": "r-same", "messages": messages}
        holding, release = held_at_record(stores[0][1])
        first = asyncio.ensure_future(fronts[0].post(body))
        await holding.wait()
        second = await fronts[1].post(body)
        release.set()
        responses = [await first, second]

        assert sum(len(model.calls) for model in models) == len(warm) + 1
        history = await fronts[0].kit.store.list_events("t1", 0, 50)
        assert len(sent(history, "m-new")) == 1
        runs = [parse(response.text) for response in responses]
        assert [run[-1].type for run in runs] == [EventType.RUN_FINISHED] * 2
        # The second ends before the first recorded the message: without the reply.
        assert (texts(runs[0]), texts(runs[1])) == (["Reply 1."], [])
        # The next run shows the reply to a client whose run ended without it.
        later = await fronts[1].post({**body, "runId": "r-next"})
        assert "Reply 1." in texts(parse(later.text))
    finally:
        for front, (questions, rooms) in zip(fronts, stores, strict=True):
            await front.close()
            await questions.close()
            await rooms.close()


async def test_a_message_whose_record_failed_runs_when_sent_again_elsewhere(place: Place) -> None:
    """The process that claimed the message failed to record it: the claim is given back,
    and the same run sent to another process at once runs it there."""
    models = [MockAIProvider(ai_responses=[AIResponse(content=f"Reply {i}.")]) for i in (1, 2)]
    stores = [(place.questions(), place.rooms()) for _ in models]
    fronts = [
        Front([], questions=questions, rooms=rooms, provider=model)
        for (questions, rooms), model in zip(stores, models, strict=True)
    ]
    rooms = stores[0][1]

    async def gone(event: RoomEvent, turns: Sequence[OpenTurn]) -> None:
        raise StoreUnavailableError("The database went away")

    rooms.record_inbound = gone  # type: ignore[method-assign]
    body = {
        "threadId": "t1",
        "runId": "r1",
        "messages": [{"id": "m0", "role": "user", "content": "Paint it"}],
    }
    try:
        failed = parse((await fronts[0].post(body)).text)
        again = parse((await fronts[1].post(body)).text)
    finally:
        for front, (questions, rooms) in zip(fronts, stores, strict=True):
            await front.close()
            await questions.close()
            await rooms.close()
    assert (failed[-1].type, failed[-1].code) == (EventType.RUN_ERROR, "turn_failed")
    assert "send it again" in failed[-1].message
    assert again[-1].type == EventType.RUN_FINISHED
    assert texts(again) == ["Reply 2."]
