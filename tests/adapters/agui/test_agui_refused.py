"""A run the AG-UI endpoint refuses leaves nothing behind: no room made for its thread, no
one on a roster, no answer of its resume settled."""

from __future__ import annotations

from typing import Any

import pytest
from ag_ui.core import EventType
from agui_front import Front, interrupts, parse, texts

UNKNOWN = {"interruptId": "0" * 32, "status": "resolved", "payload": {"answer": "b"}}
REFUSED: list[tuple[str, dict[str, Any], str]] = [
    (
        "too many new messages",
        {"messages": [{"id": f"u{n}", "role": "user", "content": "hi"} for n in range(9)]},
        "too_many_messages",
    ),
    (
        "a message without text",
        {"messages": [{"id": "u1", "role": "user", "content": "  "}]},
        "empty_message",
    ),
    ("an unknown resume", {"messages": [], "resume": [UNKNOWN]}, "unknown_interrupt"),
    ("a resume twice", {"messages": [], "resume": [UNKNOWN, UNKNOWN]}, "unknown_interrupt"),
]


@pytest.mark.parametrize(
    ("body", "code"), [(b, c) for _, b, c in REFUSED], ids=[n for n, *_ in REFUSED]
)
async def test_a_refused_first_run_makes_no_room(
    front: Front, body: dict[str, Any], code: str
) -> None:
    """The thread stays free: another person's first run there makes it theirs."""
    response = await front.post({"threadId": "fresh", "runId": "r1", **body})
    events = parse(response.text)
    assert [e.type for e in events] == [EventType.RUN_STARTED, EventType.RUN_ERROR]
    assert events[-1].code == code
    assert await front.kit.store.get_room("fresh") is None
    assert await front.kit.store.list_bindings("fresh") == []
    events = await front.run("Paint it", thread="fresh", actor="bob")
    assert [i.message for i in interrupts(events)] == ["Which colour?"]
    assert await front.kit.store.get_room("fresh") is not None


async def test_a_resume_naming_one_settled_otherwise_settles_none_of_it(front: Front) -> None:
    """The entry it cannot take is found before any other entry is settled."""
    [interrupt] = interrupts(await front.run("Paint it"))
    other = await front.handler.create("Ask", {"question": "Size?"}, room_id="t1")
    assert await front.handler.aresolve(other.pending_id, "small", by="alice", surface="desk")
    resume = [
        {"interruptId": interrupt.id, "status": "resolved", "payload": {"answer": "blue"}},
        {"interruptId": other.pending_id, "status": "resolved", "payload": {"answer": "big"}},
    ]
    events = await front.run(resume=resume)
    assert (events[-1].type, events[-1].code) == (EventType.RUN_ERROR, "already_settled")
    [still] = await front.handler.list_pending(room_id="t1")
    assert still.pending_id == interrupt.id
    # Answered alone, it is taken.
    events = await front.run(resume=resume[:1])
    assert texts(events) == ["Blue it is."]
