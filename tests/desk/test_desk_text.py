"""Text UTF-8 cannot encode at the desk: a lone surrogate (JSON's ``"\\ud800"``) gets a 422
naming where it is, never a 500 or a failed batch. On every store (memory, SQLite, Redis,
PostgreSQL)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
from desk_harness import World, bearer, post_raw, serve, world_at
from tests.servers.stores import StoreSite

LONE = b'"caf\\ud800"'
"""A JSON string whose text has a lone surrogate at character 3."""
QUESTIONS = {
    "questions": [
        {"question": "Size?", "options": [{"label": "S"}, {"label": "L"}], "multiSelect": False}
    ]
}


@pytest.fixture
async def world(store_site: StoreSite) -> AsyncIterator[World]:
    async with world_at(store_site) as world:
        yield world


async def status_of(world: World, pending_id: str) -> str:
    request = await world.handler.get_request(pending_id)
    assert request is not None
    return str(request.status)


# -- text UTF-8 cannot encode ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("arguments", "verb", "body", "where"),
    [
        ({"question": "Which café?"}, "answer", b'{"answer": ' + LONE + b"}", "answer"),
        (
            {"question": "Which café?"},
            "answer",
            b'{"answer": {"nested": [' + LONE + b"]}}",
            "'nested[0]'",
        ),
        (
            {"action": "Deploy"},
            "answer",
            b'{"confirmed": false, "reason": ' + LONE + b"}",
            "reason",
        ),
        (
            QUESTIONS,
            "answer",
            b'{"answers": [{"question": ' + LONE + b', "answer": "S"}]}',
            "question",
        ),
        (
            QUESTIONS,
            "answer",
            b'{"answers": [{"question": "Size?", "answer": ' + LONE + b"}]}",
            "answer",
        ),
        ({"question": "Which café?"}, "reject", b'{"reason": ' + LONE + b"}", "reason"),
        # In a key, where no field of the body is: the body itself is named.
        ({"question": "Which café?"}, "answer", b"{" + LONE + b': "x"}', "of a key"),
        ({"question": "Which café?"}, "reject", b"{" + LONE + b': "x"}', "of a key"),
        (
            QUESTIONS,
            "answer",
            b'{"answers": [{"question": "Size?", "answer": "S", ' + LONE + b": 1}]}",
            "of a key in 'answers[0]'",
        ),
    ],
)
async def test_a_lone_surrogate_gets_422_naming_where_and_the_request_stays_open(
    world: World, arguments: dict[str, Any], verb: str, body: bytes, where: str
) -> None:
    tool = "ConfirmAction" if "action" in arguments else "AskUserQuestion"
    pending_id = await world.ask(arguments, tool_name=tool)

    async with world.client() as client:
        reply = await post_raw(client, pending_id, verb, body)

    assert reply.status_code == 422
    detail = reply.json()["detail"]
    assert where in detail
    assert "lone surrogate (U+D800) at character 3" in detail
    assert await status_of(world, pending_id) == "pending"


async def test_a_bad_answer_among_many_spares_the_others(world: World) -> None:
    """Answers posted at the same moment share the store's batch; only the bad one fails."""
    ids = [await world.ask({"question": f"Q{n}?"}) for n in range(6)]
    waits = {
        pending_id: asyncio.create_task(world.handler.wait(pending_id, timeout=30))
        for pending_id in ids
    }
    bodies = [b'{"answer": ' + (LONE if n == 2 else b'"fine"') + b"}" for n in range(6)]

    async with world.client() as client:
        replies = await asyncio.gather(
            *(
                post_raw(client, pending_id, "answer", body)
                for pending_id, body in zip(ids, bodies, strict=True)
            )
        )

    assert [reply.status_code for reply in replies] == [200, 200, 422, 200, 200, 200]
    for n, pending_id in enumerate(ids):
        if n != 2:
            assert await waits[pending_id] == "fine"
    async with world.client() as client:
        listed = await client.get("/api/requests", headers=bearer("alice"))
        late = await post_raw(client, ids[2], "answer", b'{"answer": "fine too"}')
    assert [view["id"] for view in listed.json()["requests"]] == [ids[2]]
    assert late.status_code == 200
    assert await waits[ids[2]] == "fine too"


async def test_a_real_server_answers_a_lone_surrogate_with_422(world: World) -> None:
    pending_id = await world.ask({"question": "Which café?"})

    async with serve(world.app) as base, httpx.AsyncClient(base_url=base) as client:
        reply = await post_raw(client, pending_id, "answer", b'{"answer": ' + LONE + b"}")
        fine = await post_raw(client, pending_id, "answer", b'{"answer": "Flore"}')

    assert reply.status_code == 422
    assert "lone surrogate" in reply.json()["detail"]
    assert fine.status_code == 200
