"""The AG-UI endpoint's bound on the turns one run starts: a run sending more new user
messages than that is refused whole, whatever its body's size and the caller's rate."""

from __future__ import annotations

import json
from typing import Any

import pytest
from ag_ui.core import EventType
from agui_front import DONE, Front, interrupts, parse, texts

from roomkit import RoomKit
from roomkit.adapters.agui import agui_router
from roomkit.channels.ai import AIChannel
from roomkit.providers.ai.base import AIResponse
from roomkit.providers.ai.mock import MockAIProvider
from roomkit.tools.human_input import HumanInputHandler

LIMIT_CODE = "too_many_messages"


def users(count: int, *, start: int = 0) -> list[dict[str, Any]]:
    return [
        {"id": f"u{number}", "role": "user", "content": "hi"}
        for number in range(start, start + count)
    ]


def refusal(events: list[Any]) -> Any:
    """The run's RUN_ERROR, right after its RUN_STARTED: nothing streamed between."""
    assert [e.type for e in events] == [EventType.RUN_STARTED, EventType.RUN_ERROR]
    return events[-1]


async def test_thousands_of_new_messages_in_one_run_start_no_turn(front: Front) -> None:
    """2,000 new user messages in one body well under the size limit: the run ends with
    ``RUN_ERROR`` saying how many one run may start, and the agent runs no turn."""
    body = {"threadId": "t1", "runId": "r1", "messages": users(2000)}
    assert len(json.dumps(body)) < 256 * 1024
    response = await front.post(body)
    assert response.status_code == 200
    error = refusal(parse(response.text))
    assert error.code == LIMIT_CODE
    assert "2000" in error.message
    assert "at most 8" in error.message
    assert front.provider.calls == []
    assert await front.kit.store.list_events("t1", offset=0, limit=50) == []


async def test_a_resume_with_too_many_new_messages_settles_nothing(front: Front) -> None:
    """The count comes first: the resume's answer is not taken, the interrupt stays open."""
    [interrupt] = interrupts(await front.run("Paint it"))
    body = {
        "threadId": "t1",
        "runId": "r2",
        "messages": front.messages + users(9, start=100),
        "resume": [
            {"interruptId": interrupt.id, "status": "resolved", "payload": {"answer": "blue"}}
        ],
    }
    error = refusal(parse((await front.post(body)).text))
    assert error.code == LIMIT_CODE
    [still] = await front.handler.list_pending()
    assert still.pending_id == interrupt.id
    assert len(front.provider.calls) == 1


async def test_the_limit_is_the_routers_option_and_counts_only_new_messages() -> None:
    """At the limit every message runs; the conversation those runs recorded does not count
    again on the next run, which may start as many new ones."""
    front = Front([AIResponse(content="Noted.")], max_new_messages=2)
    try:
        messages = users(3)
        body = {"threadId": "t1", "runId": "r1", "messages": messages}
        assert refusal(parse((await front.post(body)).text)).code == LIMIT_CODE
        assert front.provider.calls == []
        body = {"threadId": "t1", "runId": "r2", "messages": messages[:2]}
        events = parse((await front.post(body)).text)
        assert texts(events) == ["Noted.", "Noted."]
        held = messages[:2] + [
            {"id": e.message_id, "role": "assistant", "content": e.delta}
            for e in events
            if e.type == EventType.TEXT_MESSAGE_CONTENT
        ]
        body = {"threadId": "t1", "runId": "r3", "messages": held + users(2, start=2)}
        assert texts(parse((await front.post(body)).text)) == ["Noted.", "Noted."]
        assert len(front.provider.calls) == 4
    finally:
        await front.close()


@pytest.mark.parametrize("limit", [0, -1, True, 2.5, "8"])
def test_a_limit_that_is_no_positive_int_is_refused_naming_the_option(limit: Any) -> None:
    with pytest.raises(ValueError, match="max_new_messages must be a positive int"):
        agui_router(RoomKit(), agent="ai", secret="s" * 32, max_new_messages=limit)


QUOTED_SHORT: dict[str, tuple[dict[str, Any], str]] = {
    "agent": ({"agent": "a\n" * 500_000}, r"^No channel 'a\\na\\n.*\.\.\. in the kit"),
    "limit": ({"max_new_messages": "8" * 1_000_000}, r"positive int .*, got '888.*\.\.\.$"),
    "handler": ({"handler": ["h"] * 1_000_000}, r"^handler must be a HumanInputHandler, got \['h'"),
}


@pytest.mark.parametrize("option", QUOTED_SHORT)
def test_a_huge_option_refused_is_quoted_cut_short(option: str) -> None:
    """The value a message quotes is cut to a line, its line breaks escaped."""
    given, says = QUOTED_SHORT[option]
    options: dict[str, Any] = {"agent": "ai", "secret": "s" * 32, **given}
    kit = RoomKit()
    kit.register_channel(AIChannel("ai", provider=MockAIProvider(ai_responses=[])))
    with pytest.raises((TypeError, ValueError), match=says) as refused:
        agui_router(kit, **options)
    assert len(str(refused.value)) < 200
    assert "\n" not in str(refused.value)


async def test_a_chat_client_sending_one_message_a_run_is_never_refused() -> None:
    """A long conversation, one new message a run: every run is served."""
    front = Front([DONE])
    try:
        for number in range(12):
            events = await front.run(f"Message {number}")
            assert events[-1].type == EventType.RUN_FINISHED
        assert len(front.provider.calls) == 12
    finally:
        await front.close()


@pytest.mark.parametrize(
    ("option", "value"),
    [
        ("rate", 0),
        ("rate", -1.0),
        ("rate", float("inf")),
        ("rate", float("nan")),
        ("rate", True),
        pytest.param("rate", 10**400, id="rate-no-float-holds"),
        pytest.param("rate", 1e-320, id="rate-whose-wait-no-float-holds"),
        ("burst", 0),
        ("burst", 2.5),
        ("burst", False),
    ],
)
def test_a_rate_or_burst_that_is_no_bound_is_refused_at_once(option: str, value: Any) -> None:
    kit = RoomKit()
    kit.register_channel(AIChannel("ai", provider=MockAIProvider([])))
    with pytest.raises(ValueError, match=f"^{option} is the requests a person may make"):
        agui_router(
            kit, agent="ai", handler=HumanInputHandler(), secret="s" * 32, **{option: value}
        )
