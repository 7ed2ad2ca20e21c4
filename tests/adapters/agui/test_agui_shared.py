"""A thread two people share, each from a front end of their own: one's messages are not
the other's, whatever ids their clients give them."""

from __future__ import annotations

from typing import Any

from ag_ui.core import RunAgentInput, UserMessage
from agui_front import Front, bearer, parse, texts

from roomkit.providers.ai.base import AIResponse


def run_of(thread: str, run: str, *messages: UserMessage) -> dict[str, Any]:
    body = RunAgentInput(
        thread_id=thread, run_id=run, state=None, messages=list(messages), tools=[], context=[]
    )
    return body.model_dump(mode="json", by_alias=True, exclude_none=True)


async def test_a_message_numbered_as_another_persons_is_run_and_answered() -> None:
    """Alice's client and Bob's both number their first message ``m0``: Bob's is recorded and
    run, and Bob's run streams the reply to his message, not Alice's."""
    front = Front([AIResponse(content="Hello Alice."), AIResponse(content="Hello Bob.")])
    try:
        alices = run_of("t1", "ra", UserMessage(id="m0", content="Hi, I am Alice"))
        async with front.client() as client:
            first = parse((await client.post("/agui", json=alices, headers=bearer("alice"))).text)
            await front.kit.add_participant("t1", "bob")
            bobs = run_of("t1", "rb", UserMessage(id="m0", content="Hi, I am Bob"))
            second = parse((await client.post("/agui", json=bobs, headers=bearer("bob"))).text)
        recorded = [
            (event.sender_id, event.content.body)
            for event in await front.kit.store.recent_events("t1", 10)
        ]
    finally:
        await front.close()
    assert texts(first) == ["Hello Alice."]
    assert texts(second) == ["Hello Bob."]
    assert ("bob", "Hi, I am Bob") in recorded
