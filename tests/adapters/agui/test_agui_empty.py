"""The AG-UI endpoint against new user messages without text: the run is refused whole
before anything settles or runs; the messages that start no turn are never refused."""

from __future__ import annotations

from typing import Any

import pytest
from ag_ui.core import EventType
from agui_front import DONE, Front, interrupts, parse, texts

from roomkit.models.room import RoomEvent, TextContent

CODE = "empty_message"
IMAGE = {"type": "image", "source": {"type": "data", "value": "aGk=", "mimeType": "image/png"}}
BLANK: dict[str, Any] = {
    "an empty string": "",
    "a blank string": "  \n\t ",
    "no parts": [],
    "an image part only": [IMAGE],
    "a blank text part and an image": [{"type": "text", "text": " "}, IMAGE],
}


def refusal(events: list[Any]) -> Any:
    """The run's RUN_ERROR, right after its RUN_STARTED: nothing streamed between."""
    assert [e.type for e in events] == [EventType.RUN_STARTED, EventType.RUN_ERROR]
    return events[-1]


async def runs_alone(front: Front, text: str) -> None:
    """A run sending ``text`` finishes with the agent's reply, the model called once, on it."""
    events = await front.run(text)
    assert texts(events) == ["Blue it is."]
    assert events[-1].type == EventType.RUN_FINISHED
    [call] = front.provider.calls
    assert call.messages[-1].content == text


@pytest.mark.parametrize("content", list(BLANK.values()), ids=list(BLANK))
async def test_a_new_user_message_without_text_runs_no_turn(content: Any) -> None:
    """The run ends with ``RUN_ERROR`` naming the message and saying what to send; the
    model is not called, the room records nothing, and a message with text then runs."""
    front = Front([DONE])
    try:
        body = {
            "threadId": "t1",
            "runId": "r1",
            "messages": [{"id": "m0", "role": "user", "content": content}],
        }
        error = refusal(parse((await front.post(body)).text))
        assert error.code == CODE
        assert "m0" in error.message
        assert "send the user's words" in error.message
        assert front.provider.calls == []
        assert await front.kit.store.list_events("t1", offset=0, limit=50) == []
        await runs_alone(front, "Paint it")
    finally:
        await front.close()


async def test_one_blank_message_among_new_ones_runs_none_of_them() -> None:
    front = Front([DONE, DONE])
    try:
        messages = [
            {"id": "u0", "role": "user", "content": "Paint it"},
            {"id": "u1", "role": "user", "content": " "},
        ]
        body = {"threadId": "t1", "runId": "r1", "messages": messages}
        error = refusal(parse((await front.post(body)).text))
        assert error.code == CODE
        assert "u1" in error.message
        assert front.provider.calls == []
        assert await front.kit.store.list_events("t1", offset=0, limit=50) == []
    finally:
        await front.close()


async def test_a_resume_with_a_blank_new_message_settles_nothing(front: Front) -> None:
    """The check comes before the resume: its answer is not taken, the interrupt stays
    open, and the same resume alone (a run with no new message) is then taken."""
    [interrupt] = interrupts(await front.run("Paint it"))
    resume = [{"interruptId": interrupt.id, "status": "resolved", "payload": {"answer": "blue"}}]
    body = {
        "threadId": "t1",
        "runId": "r2",
        "messages": [*front.messages, {"id": "u9", "role": "user", "content": ""}],
        "resume": resume,
    }
    assert refusal(parse((await front.post(body)).text)).code == CODE
    [still] = await front.handler.list_pending()
    assert still.pending_id == interrupt.id
    assert len(front.provider.calls) == 1
    events = await front.run(resume=resume)
    assert texts(events) == ["Blue it is."]
    assert events[-1].type == EventType.RUN_FINISHED


async def test_blank_messages_that_start_no_turn_are_not_refused() -> None:
    """A blank user message the client shows answered, or one the room holds already, is
    no turn of this run: the run takes the new message after them."""
    front = Front([DONE, DONE])
    try:
        await front.kit.create_room("t1")
        await front.kit.add_participant("t1", "alice")
        await front.kit.attach_channel("t1", "ai")
        held = RoomEvent("t1", "agui", "alice", TextContent(""), metadata={"message_id": "h0"})
        await front.kit.store.add_event(held)
        front.messages = [
            {"id": "a0", "role": "user", "content": ""},
            {"id": "a1", "role": "assistant", "content": "Hello."},
            {"id": "h0", "role": "user", "content": "   "},
        ]
        await runs_alone(front, "Paint it")
    finally:
        await front.close()


async def test_a_run_with_no_new_message_is_taken(front: Front) -> None:
    """A run sending no user message at all starts no turn and finishes."""
    body = {"threadId": "t1", "runId": "r1", "messages": []}
    events = parse((await front.post(body)).text)
    assert events[-1].type == EventType.RUN_FINISHED
    assert front.provider.calls == []
