"""A conversation the room does not hold: the client's answered user messages run no turn.

A front end sends the whole conversation on every run; a room may lack its earlier part (a
memory store after a restart, a thread moved to another server, a client seeding one). Only
the user messages after the last answer the client shows are run, and only they count
against ``max_new_messages``.
"""

from __future__ import annotations

from typing import Any

from ag_ui.core import EventType
from agui_front import Front, parse, texts

from roomkit.core.store import InMemoryStore
from roomkit.models.room import RoomEvent, TextContent
from roomkit.providers.ai.base import AIResponse

LIMIT_CODE = "too_many_messages"


def conversation(exchanges: int) -> list[dict[str, Any]]:
    """``exchanges`` user messages, each answered by an assistant message."""
    messages: list[dict[str, Any]] = []
    for number in range(exchanges):
        messages.append({"id": f"old-u{number}", "role": "user", "content": f"Old {number}"})
        messages.append(
            {"id": f"old-a{number}", "role": "assistant", "content": f"Forged reply {number}"}
        )
    return messages


def user(number: int) -> dict[str, Any]:
    return {"id": f"new-u{number}", "role": "user", "content": f"New {number}"}


def said(front: Front) -> list[str]:
    """What the user said last to the agent, turn by turn."""
    return [call.messages[-1].content for call in front.provider.calls]


async def test_a_seeded_conversation_runs_only_its_last_unanswered_message() -> None:
    """A fresh thread, 6 answered user messages and a new one: one turn, for the new one;
    the room records it and its reply, and none of the client's copy of the conversation."""
    front = Front([AIResponse(content="Reply.")] * 7)
    try:
        body = {"threadId": "t1", "runId": "r1", "messages": [*conversation(6), user(0)]}
        events = parse((await front.post(body)).text)
        assert events[-1].type == EventType.RUN_FINISHED
        assert texts(events) == ["Reply."]
        assert said(front) == ["New 0"]
        prompt = [m.content for m in front.provider.calls[0].messages]
        assert not any("Forged" in str(content) for content in prompt)
        recorded = await front.kit.store.list_events("t1", offset=0, limit=50)
        assert [e.content.body for e in recorded] == ["New 0", "Reply."]
    finally:
        await front.close()


async def test_a_conversation_longer_than_the_limit_is_not_refused() -> None:
    """Twenty answered user messages are no new ones: the run is served, not refused."""
    front = Front([AIResponse(content="Reply.")])
    try:
        body = {"threadId": "t1", "runId": "r1", "messages": [*conversation(20), user(0)]}
        events = parse((await front.post(body)).text)
        assert events[-1].type == EventType.RUN_FINISHED
        assert said(front) == ["New 0"]
    finally:
        await front.close()


async def test_two_trailing_user_messages_run_two_turns_and_only_they_count() -> None:
    """The unanswered user messages at the end run in order; the cap counts only them."""
    front = Front([AIResponse(content="One."), AIResponse(content="Two.")], max_new_messages=2)
    try:
        over = [*conversation(6), user(0), user(1), user(2)]
        body = {"threadId": "t1", "runId": "r1", "messages": over}
        refused = parse((await front.post(body)).text)
        assert (refused[-1].type, refused[-1].code) == (EventType.RUN_ERROR, LIMIT_CODE)
        assert "3 unanswered user messages" in refused[-1].message
        assert front.provider.calls == []
        body = {"threadId": "t1", "runId": "r2", "messages": [*conversation(6), user(0), user(1)]}
        events = parse((await front.post(body)).text)
        assert events[-1].type == EventType.RUN_FINISHED
        assert texts(events) == ["One.", "Two."]
        assert said(front) == ["New 0", "New 1"]
    finally:
        await front.close()


async def test_a_restarted_memory_kit_runs_only_the_new_message() -> None:
    """A conversation held by a kit on a memory store that went away: the next kit (a new
    app) is sent it whole with one new message, and runs that message alone."""
    first = Front([AIResponse(content=f"Reply {n}.") for n in range(3)])
    try:
        for number in range(3):
            await first.run(f"Message {number}")
        assert said(first) == ["Message 0", "Message 1", "Message 2"]
    finally:
        await first.close()
    second = Front([AIResponse(content="After the restart.")] * 4)
    second.messages = first.messages
    try:
        events = await second.run("Message 3")
        assert events[-1].type == EventType.RUN_FINISHED
        assert texts(events) == ["After the restart."]
        assert said(second) == ["Message 3"]
        # The next run, with the reply the client now holds, runs nothing again.
        again = await second.run()
        assert again[-1].type == EventType.RUN_FINISHED
        assert len(second.provider.calls) == 1
    finally:
        await second.close()


async def test_the_agents_reasoning_and_activity_answer_the_messages_before_them() -> None:
    """A client showing the agent's reasoning or an activity after a user message shows that
    message answered: a seeded conversation ending so runs no turn for it, only the new one."""
    front = Front([AIResponse(content="Reply.")] * 3)
    try:
        seeded = [
            {"id": "old-u0", "role": "user", "content": "Old 0"},
            {"id": "old-r0", "role": "reasoning", "content": "Thinking about it."},
            {"id": "old-u1", "role": "user", "content": "Old 1"},
            {
                "id": "old-act1",
                "role": "activity",
                "activityType": "PLAN",
                "content": {"steps": ["search"]},
            },
        ]
        body = {"threadId": "t1", "runId": "r1", "messages": [*seeded, user(0)]}
        events = parse((await front.post(body)).text)
        assert events[-1].type == EventType.RUN_FINISHED
        assert said(front) == ["New 0"]
        body = {"threadId": "t1", "runId": "r2", "messages": seeded}
        events = parse((await front.post(body)).text)
        assert events[-1].type == EventType.RUN_FINISHED
        assert said(front) == ["New 0"], "the reasoning and the activity answered Old 0, Old 1"
    finally:
        await front.close()


class CountingRooms(InMemoryStore):
    """The memory room store, counting the pages of events read from the start of a room."""

    def __init__(self) -> None:
        super().__init__()
        self.pages = 0

    async def list_events(self, room_id: str, *, offset: int = 0, limit: int = 50) -> Any:
        self.pages += 1
        return await super().list_events(room_id, offset=offset, limit=limit)


async def test_a_long_thread_whose_last_answer_is_recent_reads_no_older_page() -> None:
    """In a thread of hundreds of events, a run whose last answer the room's latest events
    hold runs its new message without reading the room from its start: a message the room
    holds after that answer is among those latest events."""
    rooms = CountingRooms()
    replies = [AIResponse(content=text) for text in ("Hello.", "First.", "Second.")]
    front = Front(replies, rooms=rooms)
    try:
        assert texts(await front.run("Zero")) == ["Hello."]
        for number in range(250):
            note = RoomEvent("t1", "notes", "bob", TextContent(f"Note {number}"))
            await rooms.add_event(note)
        assert texts(await front.run("One")) == ["First."]
        rooms.pages = 0
        assert texts(await front.run("Two")) == ["Second."]
        assert said(front) == ["Zero", "One", "Two"]
        assert rooms.pages == 0, "the room was read from its start"
    finally:
        await front.close()
