"""Free text at the desk is text: ``42``, ``true`` or ``null`` typed as an answer, or a choice
labelled ``42``, is the text it is when the schema takes a string; structured answers still
go as JSON. On every store (memory, SQLite, Redis, PostgreSQL)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any

import pytest
from desk_harness import World, post_raw, world_at
from tests.servers.stores import StoreSite


@pytest.fixture
async def world(store_site: StoreSite) -> AsyncIterator[World]:
    async with world_at(store_site) as world:
        yield world


@pytest.mark.parametrize("text", ["42", "true", "null", "1"])
async def test_free_text_that_reads_as_json_is_text(world: World, text: str) -> None:
    pending_id = await world.ask({"question": "Anything?"}, answer_schema={"type": "string"})
    waiting = asyncio.create_task(world.handler.wait(pending_id, timeout=30))

    async with world.client() as client:
        reply = await post_raw(client, pending_id, "answer", json.dumps({"answer": text}).encode())

    assert (reply.status_code, reply.json()["result"]) == (200, text)
    assert await waiting == text


async def test_a_choice_labelled_42_is_taken(world: World) -> None:
    pending_id = await world.ask(
        {"question": "Pick", "options": ["42", "7"]}, answer_schema={"type": "string"}
    )

    async with world.client() as client:
        reply = await post_raw(client, pending_id, "answer", b'{"answer": "42"}')

    assert reply.status_code == 200
    assert await world.handler.wait(pending_id, timeout=30) == "42"


async def test_a_question_with_an_empty_list_of_options_takes_any_text(world: World) -> None:
    """A model may send ``"options": []``: the page offers a text box, and the desk takes
    what is typed in it."""
    pending_id = await world.ask({"question": "Where to?", "options": []})
    async with world.client() as client:
        reply = await post_raw(client, pending_id, "answer", b'{"answer": "Paris"}')
    assert reply.status_code == 200, reply.text
    assert await world.handler.wait(pending_id, timeout=30) == "Paris"


async def test_a_custom_text_answer_is_passed_as_typed(world: World) -> None:
    """With a string schema the model reads the person's text, not its JSON quoting."""
    pending_id = await world.ask(
        {"form": "note"}, tool_name="Form", answer_schema={"type": "string"}
    )

    async with world.client() as client:
        number = await post_raw(client, pending_id, "answer", b'{"answer": 42}')
        text = await post_raw(client, pending_id, "answer", b'{"answer": "42"}')

    assert number.status_code == 422, "a JSON number is not text"
    assert "42 is not of type 'string'" in number.json()["detail"]
    assert text.status_code == 200
    assert await world.handler.wait(pending_id, timeout=30) == "42"


@pytest.mark.parametrize(
    ("schema", "body", "result"),
    [
        ({"type": "integer"}, b'{"answer": 42}', "42"),
        ({"type": "boolean"}, b'{"answer": true}', "true"),
        ({"type": "object", "required": ["n"]}, b'{"answer": {"n": 2}}', '{"n":2}'),
        ({"type": ["integer", "string"]}, b'{"answer": "42"}', "42"),
    ],
)
async def test_a_structured_answer_still_goes_as_json(
    world: World, schema: dict[str, Any], body: bytes, result: str
) -> None:
    pending_id = await world.ask({"form": "x"}, tool_name="Form", answer_schema=schema)

    async with world.client() as client:
        reply = await post_raw(client, pending_id, "answer", body)

    assert reply.status_code == 200
    assert await world.handler.wait(pending_id, timeout=30) == result
