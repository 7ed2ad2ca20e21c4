"""A follow-up's answer is checked against its request as the desk checks it: an answer
that is none of a question's options, or holds no text, settles nothing and asks again."""

from __future__ import annotations

from typing import Any

import pytest
from a2a.helpers.proto_helpers import get_text_parts
from a2a.types import TaskState
from a2a_world import World

from roomkit.models.pending_input import PendingInputStatus
from roomkit.providers.ai.base import AIResponse
from roomkit.providers.ai.mock import MockAIProvider

DONE = AIResponse(content="Done.")
PICK = {"question": "Which colour?", "options": ["red", "blue"]}
FREE = {"question": "Which colour?"}


def asking(arguments: dict[str, Any]) -> AIResponse:
    return MockAIProvider.tool_call("AskUserQuestion", arguments)


@pytest.mark.parametrize(
    ("arguments", "text", "answer"),
    [
        (PICK, "green", None),
        (PICK, None, "green"),
        (PICK, None, 5),
        ({**PICK, "multiSelect": True}, None, ["red", "green"]),
        (FREE, "", None),
        (FREE, "   ", None),
        (FREE, None, {"colour": "red"}),
    ],
    ids=["text", "data", "number", "multi", "empty", "blank", "object"],
)
async def test_an_answer_the_request_cannot_take_settles_nothing_and_asks_again(
    arguments: dict[str, Any], text: str | None, answer: Any
) -> None:
    world = World([asking(arguments), DONE])
    async with world.http() as http:
        task = await world.send(http, text="Paint it")
        [request] = await world.handler.list_pending(room_id="ctx-1")
        data = None if text is not None else {"pending_id": request.pending_id, "answer": answer}
        again = await world.send(http, text=text, data=data, task=task)
        still = await world.handler.get_request(request.pending_id)
        assert again.status.state == TaskState.TASK_STATE_INPUT_REQUIRED
        [problem, question] = get_text_parts(list(again.status.message.parts))
        assert problem.startswith(f"Request {request.pending_id} cannot take that answer: ")
        assert question == "Which colour?"
        assert still is not None
        assert still.status is PendingInputStatus.PENDING
        good = ["red"] if arguments.get("multiSelect") else "red"
        taken = {"pending_id": request.pending_id, "answer": good}
        done = await world.send(http, data=taken, task=task)
    assert done.status.state == TaskState.TASK_STATE_COMPLETED
    settled = await world.handler.get_request(request.pending_id)
    assert settled is not None
    assert settled.status is PendingInputStatus.RESOLVED
