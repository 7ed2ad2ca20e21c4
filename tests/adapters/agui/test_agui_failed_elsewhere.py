"""A thread whose turn fails in another process: the server that runs it takes the answer a
resume in this process gave, and its model raises. The resume run ends with ``RUN_ERROR``
(``turn_failed``) and the words the run following the turn there would get (it used to end
with ``RUN_FINISHED``, as if the message had been handled), even when the turn failed there
before the run read the thread. On every durable store, the server running the turn a
process of its own."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from ag_ui.core import EventType
from agui_front import Front, interrupts, texts
from starlette.types import ASGIApp, Message, Receive, Scope, Send
from tests.adapters.door_peer import PATIENCE, asking_peer
from tests.adapters.fragile_model import Fragile
from tests.core.room_stores import Place

from roomkit.providers.ai.base import AIContext, AIResponse


class Recording(Fragile):
    """:class:`Fragile`, keeping the texts of each conversation it is given."""

    def __init__(self) -> None:
        self.seen: list[list[str]] = []

    async def generate(self, context: AIContext) -> AIResponse:
        self.seen.append([message.text for message in context.messages])
        return await super().generate(context)


HELD = {
    "id": "a-held",
    "role": "assistant",
    "toolCalls": [
        {
            "id": "tc-1",
            "type": "function",
            "function": {"name": "AskUserQuestion", "arguments": "{}"},
        }
    ],
}
"""The turn's question as the client keeps it from the run that ended with its interrupt:
a held call, which the resume run gives its result first."""


class HeldAfterStart:
    """An ASGI middleware holding an AG-UI run's stream at its second event (the first one
    after ``RUN_STARTED``, sent once the resume settled) until ``release`` is set: what the
    answer let happen elsewhere meanwhile has happened before the run reads the thread."""

    def __init__(self, app: ASGIApp, release: asyncio.Event) -> None:
        self.app, self.release = app, release

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"] != "/agui":
            await self.app(scope, receive, send)
            return
        sent = 0

        async def sending(message: Message) -> None:
            nonlocal sent
            if message["type"] == "http.response.body":
                sent += 1
                if sent == 2:
                    await self.release.wait()
            await send(message)

        await self.app(scope, receive, sending)


def answer(interrupt_id: str) -> list[dict[str, Any]]:
    return [{"interruptId": interrupt_id, "status": "resolved", "payload": {"answer": "blue"}}]


async def failed_here() -> Any:
    """The terminal event of a resume run whose turn fails in the same process."""
    front = Front([], provider=Fragile())
    try:
        [interrupt] = interrupts(await front.run("Ask"))
        events = await front.run(resume=answer(interrupt.id))
    finally:
        await front.close()
    return events[-1]


async def test_a_turn_failing_in_another_process_ends_the_resume_in_run_error(
    place: Place, tmp_path: Path
) -> None:
    questions, rooms = place.questions(), place.rooms()
    front = Front([], questions=questions, rooms=rooms, provider=Fragile())
    ended = asyncio.Event()
    front.app.add_middleware(HeldAfterStart, release=ended)
    try:
        async with asking_peer(place, "agui", tmp_path, fragile=True, ended=ended) as said:
            front.messages = [*said["messages"], HELD]
            async with asyncio.timeout(PATIENCE):
                events = await front.run(resume=answer(said["interrupt"]))
    finally:
        await front.close()
        await questions.close()
        await rooms.close()
    # The thread goes on on a server started now: the failed turn shows in no later run.
    questions, rooms = place.questions(), place.rooms()
    model = Recording()
    front = Front([], questions=questions, rooms=rooms, provider=model)
    try:
        front.messages = said["messages"]
        later = await front.run("Hello")
    finally:
        await front.close()
        await questions.close()
        await rooms.close()
    here = await failed_here()
    error = events[-1]
    # The whole event on a miss: a RUN_FINISHED says which outcome the run ended with.
    assert (error.type, getattr(error, "code", None)) == (EventType.RUN_ERROR, "turn_failed"), error
    assert error.message == here.message
    assert error.message == (
        "AG-UI message m0 was recorded but not handled: its turn failed (RuntimeError); "
        "send it again as a new message"
    )
    assert [e.type for e in events] == [
        EventType.RUN_STARTED,
        EventType.TOOL_CALL_RESULT,
        EventType.RUN_ERROR,
    ]
    assert later[-1].type == EventType.RUN_FINISHED
    assert texts(later) == ["Echo: Hello"]
    # Nor does the model read it.
    assert model.seen == [["Ask", "Hello"]]
