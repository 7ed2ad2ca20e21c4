"""An agent process for the restart tests: asks a person, may be killed, resumes.

``python restart_agent.py KIND WHERE ask``    creates the room and runs a turn that asks a
                                               question (it waits until killed).
``python restart_agent.py KIND WHERE queue``  does what ``ask`` does, then stores a second
                                               message (from another person), which waits
                                               behind that turn.
``python restart_agent.py KIND WHERE resume`` re-drives the unfinished turns and prints their
                                               replies.

``KIND WHERE`` name the deployment's stores as :class:`tests.core.room_stores.Place` does:
``sqlite PATH`` or ``redis URL#PREFIX``; the rooms and the questions are kept there.

With ``ROOMKIT_STOP_AT`` set to one of :data:`STOPS`, the process prints ``{"at": stop}``
right after that durable write and stops itself (SIGSTOP) before anything else runs: the
test kills it at exactly that instant.

Each line it prints is JSON, so the test reads what happened. The tests run ``main`` in a
process forked from one that imported this module (:mod:`tests.forked_processes`), which
reads ``ROOMKIT_STOP_AT`` from the environment it was given.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
from collections.abc import Sequence
from typing import Any

from roomkit import HumanInputToolHandler, InboundMessage, RoomKit, TextContent
from roomkit.channels.ai import AIChannel
from roomkit.core.store import JournalStep, OpenTurn
from roomkit.models.pending_input import PendingInput
from roomkit.models.room import RoomEvent
from roomkit.providers.ai.base import AIContext, AIProvider, AIResponse, AITool, AIToolCall
from roomkit.tools.human_input import HumanInputHandler

ASK = AITool(
    name="AskUserQuestion",
    description="Ask the user a question.",
    parameters={"type": "object", "properties": {"question": {"type": "string"}}},
)

STOPS = (
    "inbound",  # the message and its turn stored
    "step -1",  # the conversation the turn starts from recorded
    "step 0",  # the model's tool call recorded
    "question",  # the question stored
    "announced",  # its announcement recorded
    "step 1",  # the answer recorded as the call's result
    "step 1000",  # the model's reply recorded
    "finish",  # the reply stored and the turn ended
)
"""The durable writes of one turn, in order."""


def reached(stop: str) -> None:
    """Tell the test that ``stop``'s write is done, then freeze until killed."""
    if stop == os.environ.get("ROOMKIT_STOP_AT"):
        print(json.dumps({"at": stop}), flush=True)
        os.kill(os.getpid(), signal.SIGSTOP)


class StopsAtRoomWrites:
    """Put in front of a room store's class: stops after each of its durable turn writes."""

    async def record_inbound(self, event: RoomEvent, turns: Sequence[OpenTurn]) -> None:
        await super().record_inbound(event, turns)
        reached("inbound")

    async def record_step(self, turn_id: str, step: JournalStep) -> None:
        await super().record_step(turn_id, step)
        reached(f"step {step.index}")

    async def finish_turn(self, turn_id: str, reply: RoomEvent | None) -> bool:
        finished = await super().finish_turn(turn_id, reply)
        reached("finish")
        return finished


class StopsAtQuestionWrites:
    """Put in front of a pending store's class: stops after a question is stored or
    announced."""

    async def insert(self, request: PendingInput, **options: Any) -> tuple[PendingInput, bool]:
        stored = await super().insert(request, **options)
        reached("question")
        return stored

    async def mark_announced(self, pending_id: str) -> None:
        await super().mark_announced(pending_id)
        reached("announced")


class TravelAgent(AIProvider):
    """Asks where to go, then books it; counts its model calls."""

    def __init__(self) -> None:
        self.generated = 0

    @property
    def model_name(self) -> str:
        return "travel-agent"

    async def generate(self, context: AIContext) -> AIResponse:
        self.generated += 1
        last = context.messages[-1]
        results = last.tool_result_parts
        if results:
            return AIResponse(content=f"Booked a trip to {results[0].content}.")
        # Call ids are unique in the room (a question's key derives from it), and the same
        # on a re-run of the same conversation.
        call_id = f"call-{len(context.messages)}"
        call = AIToolCall(id=call_id, name="AskUserQuestion", arguments={"question": "Where?"})
        return AIResponse(content="", tool_calls=[call])


def stores(kind: str, where: str) -> tuple[Any, Any]:
    """The room store and the pending store at ``where``, each stopping at its writes."""
    if kind == "sqlite":
        from roomkit.stores.sqlite import SQLiteRoomStore, SQLiteStore

        rooms: type = SQLiteRoomStore
        questions: type = SQLiteStore
        options: dict[str, Any] = {}
    elif kind == "postgres":
        from roomkit.stores.postgres import PostgresRoomStore, PostgresStore

        rooms, questions = PostgresRoomStore, PostgresStore
        where, _, schema = where.partition("#")
        options = {"schema": schema}
    else:
        from roomkit.stores.redis import RedisRoomStore, RedisStore

        rooms, questions = RedisRoomStore, RedisStore
        where, _, prefix = where.partition("#")
        options = {"prefix": prefix}
    stopping_rooms = type("Rooms", (StopsAtRoomWrites, rooms), {})
    stopping_questions = type("Questions", (StopsAtQuestionWrites, questions), {})
    return (
        stopping_rooms(where, **options),
        stopping_questions(where, backstop_interval=0.02, **options),
    )


async def main(kind: str, where: str, mode: str) -> None:
    rooms, pending = stores(kind, where)
    kit = RoomKit(store=rooms)
    model = TravelAgent()
    human = HumanInputToolHandler(
        {"AskUserQuestion"}, handler=HumanInputHandler(store=pending), tool_definitions=[ASK]
    )
    kit.register_channel(AIChannel("ai", provider=model, human_input_handler=human))

    announced = asyncio.Event()

    @kit.on("user_input_required")
    async def asked(event: object) -> None:
        announced.set()
        print(json.dumps({"asked": getattr(event, "data", {}).get("pending_id")}), flush=True)

    if mode in ("ask", "queue"):
        await kit.create_room("trip")
        await kit.attach_channel("trip", "ai")
        message = InboundMessage("web", "ann", TextContent("Plan my holiday"))
        if mode == "ask":
            await kit.process_inbound(message, room_id="trip")
            return
        first = asyncio.get_running_loop().create_task(kit.process_inbound(message, room_id="trip"))
        await announced.wait()
        second = InboundMessage("web", "bob", TextContent("Me too"))
        await kit.process_inbound(
            second,
            room_id="trip",
            on_recorded=lambda _: print(json.dumps({"queued": "Me too"}), flush=True),
        )
        await first
    else:
        replies = await kit.resume_pending()
        print(
            json.dumps(
                {"replies": [r.content.body for r in replies], "generated": model.generated}
            ),
            flush=True,
        )
        await kit.close()
        await pending.close()
        await rooms.close()


if __name__ == "__main__":
    asyncio.run(main(*sys.argv[1:4]))
