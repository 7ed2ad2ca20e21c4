"""An edit of the longest arguments a request keeps fits in a decision's body, however it is
escaped, on a desk served by uvicorn; every other body keeps the desk's own cap."""

from __future__ import annotations

import asyncio
import io
import json
import sys
from typing import Any

import httpx
import pytest
from desk_harness import World, bearer, serve, token

from roomkit.cli import main
from roomkit.desk.limits import DeskLimits
from roomkit.models.json_limits import MAX_ARGUMENTS_CHARS, MAX_ARGUMENTS_DEPTH, arguments_problem

MAX_BODY = DeskLimits().max_body
EDIT_CAP = 12 * MAX_ARGUMENTS_CHARS + 4096
"""What the answer route takes: every character of the arguments escaped (twelve bytes for one
outside the BMP), and the envelope."""


def longest(char: str) -> dict[str, Any]:
    """Arguments exactly :data:`MAX_ARGUMENTS_CHARS` long as a store writes them."""
    arguments = {"note": char * (MAX_ARGUMENTS_CHARS - len('{"note":""}'))}
    written = json.dumps(arguments, ensure_ascii=False, separators=(",", ":"))
    assert len(written) == MAX_ARGUMENTS_CHARS
    assert arguments_problem(arguments) is None
    return arguments


@pytest.fixture
async def world() -> World:
    world = World()
    await world.room("room", "alice", "bob")
    return world


async def hold(world: World, arguments: dict[str, Any]) -> str:
    request = await world.handler.create_approval(
        "post_note",
        arguments,
        approvers=("alice",),
        tool_schema={"type": "object", "properties": {"note": {"type": "string"}}},
        room_id="room",
        actor_id="alice",
        channel_id="agent",
    )
    return request.pending_id


def edit_body(arguments: dict[str, Any], digest: str, *, ascii_only: bool) -> bytes:
    body = {"decision": "edit", "arguments": arguments, "digest": digest}
    if ascii_only:  # what json.dumps writes by default: every character an escape
        return json.dumps(body).encode()
    return json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode()


@pytest.mark.parametrize(
    ("char", "ascii_only"),
    [("字", False), ("字", True), ("😀", False), ("😀", True)],
    ids=["cjk-utf8", "cjk-escaped", "emoji-utf8", "emoji-escaped"],
)
async def test_an_edit_of_the_longest_arguments_is_taken(
    world: World, char: str, ascii_only: bool
) -> None:
    """56,000 characters of arguments sent back as an edit, past the 64 KiB of other bodies."""
    arguments = longest(char)
    pending_id = await hold(world, arguments)
    edited = {"note": arguments["note"][:-1] + "."}
    async with serve(world.app) as base, httpx.AsyncClient(base_url=base) as client:
        view = (await client.get(f"/api/requests/{pending_id}", headers=bearer("alice"))).json()
        body = edit_body(edited, view["arguments_digest"], ascii_only=ascii_only)
        assert MAX_BODY < len(body) <= EDIT_CAP
        reply = await client.post(
            f"/api/requests/{pending_id}/answer",
            content=body,
            headers={**bearer("alice"), "Content-Type": "application/json"},
        )
    assert reply.status_code == 200, reply.text[:300]
    assert json.loads(await world.handler.wait(pending_id)) == {
        "decision": "edit",
        "arguments": edited,
    }


async def test_the_cli_sends_an_edit_of_the_longest_arguments(
    world: World, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """As an argument, or on standard input (``-``): 168 KB of UTF-8 is past the 128 KiB one
    command-line argument may be on Linux."""
    arguments = longest("字")
    first, second = await hold(world, arguments), await hold(world, arguments)
    edited = {"note": "字" + arguments["note"][1:]}
    typed = json.dumps(edited, ensure_ascii=False)
    assert len(typed.encode()) > 128 * 1024
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(typed.encode())))
    async with serve(world.app) as base:
        client = ["--url", base, "--token", token("alice")]
        codes = [
            await asyncio.to_thread(main, ["pending", "edit", pending_id, given, *client])
            for pending_id, given in ((first, typed), (second, "-"))
        ]
    _, err = capsys.readouterr()
    assert codes == [0, 0], err[:300]
    for pending_id in (first, second):
        assert json.loads(await world.handler.wait(pending_id))["arguments"] == edited


def nested(depth: int) -> dict[str, Any]:
    """Arguments whose objects nest ``depth`` levels, their own object the first."""
    arguments: dict[str, Any] = {"note": "deep"}
    for _ in range(depth - 1):
        arguments = {"note": arguments}
    return arguments


@pytest.mark.parametrize(
    ("arguments", "says"),
    [
        ({"note": "x" * MAX_ARGUMENTS_CHARS}, "over the 56,000 a request keeps"),
        (nested(MAX_ARGUMENTS_DEPTH + 1), "nested"),
    ],
    ids=["too-long", "too-deep"],
)
async def test_an_edit_a_request_cannot_keep_gets_422(
    world: World, arguments: dict[str, Any], says: str
) -> None:
    """Arguments within the edit's body cap but past what a request keeps are a wrong
    answer, named, and the approval stays open."""
    pending_id = await hold(world, {"note": "hi"})
    body = json.dumps({"decision": "edit", "arguments": arguments}).encode()
    assert len(body) <= EDIT_CAP
    async with serve(world.app) as base, httpx.AsyncClient(base_url=base) as client:
        reply = await client.post(
            f"/api/requests/{pending_id}/answer",
            content=body,
            headers={**bearer("alice"), "Content-Type": "application/json"},
        )
    assert reply.status_code == 422, reply.text[:300]
    assert says in reply.json()["detail"]
    assert (await world.handler.get_request(pending_id)).status == "pending"


async def test_a_decision_past_the_edit_cap_gets_413(world: World) -> None:
    pending_id = await hold(world, {"note": "hi"})
    big = json.dumps({"decision": "respond", "result": "x" * EDIT_CAP}).encode()
    async with serve(world.app) as base, httpx.AsyncClient(base_url=base) as client:
        reply = await client.post(
            f"/api/requests/{pending_id}/answer",
            content=big,
            headers={**bearer("alice"), "Content-Type": "application/json"},
        )
    assert reply.status_code == 413
    assert f"{EDIT_CAP}-byte limit" in reply.json()["detail"]
    assert (await world.handler.get_request(pending_id)).status == "pending"


async def test_other_bodies_keep_the_desk_cap(world: World) -> None:
    """An answer to a question and a refusal are held to ``max_body``, on the answer route
    too; the approval stays open."""
    question = await world.ask()
    approval = await hold(world, {"note": "hi"})
    long_answer = json.dumps({"answer": "字" * (MAX_BODY // 3 + 1)}).encode()
    long_reason = json.dumps({"reason": "x" * (MAX_BODY + 1)}).encode()
    headers = {**bearer("alice"), "Content-Type": "application/json"}
    async with serve(world.app) as base, httpx.AsyncClient(base_url=base) as client:
        answered = await client.post(
            f"/api/requests/{question}/answer", content=long_answer, headers=headers
        )
        rejected = await client.post(
            f"/api/requests/{approval}/reject", content=long_reason, headers=headers
        )
    assert (answered.status_code, rejected.status_code) == (413, 413)
    assert f"{MAX_BODY}-byte limit" in answered.json()["detail"]
    assert f"{MAX_BODY}-byte limit" in rejected.json()["detail"]
    for pending_id in (question, approval):
        assert (await world.handler.get_request(pending_id)).status == "pending"


def test_the_edit_cap_follows_from_the_arguments_limit() -> None:
    from roomkit.desk.limits import EDIT_BODY_BYTES

    assert EDIT_BODY_BYTES == EDIT_CAP
    assert DeskLimits().max_answer_body == EDIT_CAP
    assert DeskLimits(max_body=2 * EDIT_CAP).max_answer_body == 2 * EDIT_CAP


@pytest.mark.parametrize("typed", [b"", b"\xff{}"], ids=["empty", "not-utf-8"])
async def test_the_cli_refuses_standard_input_that_is_no_arguments(
    world: World,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    typed: bytes,
) -> None:
    pending_id = await hold(world, {"note": "hi"})
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(typed), encoding="utf-8"))
    async with serve(world.app) as base:
        code = await asyncio.to_thread(
            main, ["pending", "edit", pending_id, "-", "--url", base, "--token", token("alice")]
        )
    _, err = capsys.readouterr()
    assert code == 2
    assert "UTF-8" in err if typed else "JSON object" in err
    assert (await world.handler.get_request(pending_id)).status == "pending"
