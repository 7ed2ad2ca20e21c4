"""A key names a request only within its owner's scope (room, channel, actor), on every store.

A key is no secret (an AI channel's is ``room:channel:tool-call-id``), so an equal key from
another actor or another channel must ask a question of its own, never re-attach to theirs:
that would hand them its answer, and let their cancellation withdraw it.
"""

from __future__ import annotations

import asyncio

from tests.tools.human_input.durable.store_fixtures import HandlerFactory

from roomkit.models.pending_input import PendingInputStatus


async def test_another_actors_key_asks_a_question_of_its_own(
    make_handler: HandlerFactory,
) -> None:
    asker, other = make_handler(), make_handler()
    mcp = {"room_id": "mcp", "channel_id": "mcp"}
    alices = await asker.create(
        "AskUserQuestion", {"question": "PIN?"}, actor_id="alice", key="k", **mcp
    )
    await asker.aresolve(alices.pending_id, "4711")

    bobs = await other.create(
        "AskUserQuestion", {"question": "PIN?"}, actor_id="bob", key="k", **mcp
    )
    again = await other.create(
        "AskUserQuestion", {"question": "PIN?"}, actor_id="alice", key="k", **mcp
    )

    assert bobs.pending_id != alices.pending_id
    assert bobs.status is PendingInputStatus.PENDING
    assert again.pending_id == alices.pending_id
    await other.arelease(bobs.pending_id)
    assert await asker.wait(alices.pending_id, timeout=30) == "4711"


async def test_an_ai_channels_key_names_nothing_on_another_channel(
    make_handler: HandlerFactory,
) -> None:
    """The AI channel's ``room:channel:tool-call-id`` key, sent by an MCP caller."""
    asker, other = make_handler(), make_handler()
    key = "room:ai:call-1"
    channels = await asker.create(
        "AskUserQuestion", {"question": "Card?"}, room_id="room", channel_id="ai", key=key
    )
    waiting = asyncio.create_task(asker.wait(channels.pending_id, timeout=30))

    taken = await other.create(
        "AskUserQuestion",
        {"question": "?"},
        room_id="mcp",
        channel_id="mcp",
        actor_id="bob",
        key=key,
    )
    await other.arelease(taken.pending_id)
    redriven = await other.create(
        "AskUserQuestion", {"question": "Card?"}, room_id="room", channel_id="ai", key=key
    )

    assert taken.pending_id != channels.pending_id
    assert redriven.pending_id == channels.pending_id
    assert await other.aresolve(channels.pending_id, "4111")
    assert await waiting == "4111"


async def test_an_approvals_key_is_scoped_as_a_questions(make_handler: HandlerFactory) -> None:
    asker, other = make_handler(), make_handler()
    held = await asker.create_approval(
        "pay", {"amount": 5}, approvers=["alice"], room_id="room", channel_id="ai", key="c-1"
    )
    elsewhere = await other.create_approval(
        "pay", {"amount": 5}, approvers=["bob"], room_id="room", channel_id="ai2", key="c-1"
    )
    again = await other.create_approval(
        "pay", {"amount": 5}, approvers=["alice"], room_id="room", channel_id="ai", key="c-1"
    )
    assert elsewhere.pending_id != held.pending_id
    assert again.pending_id == held.pending_id
    for request in (held, elsewhere):
        await asker.arelease(request.pending_id)
