"""``roomkit mcp``: over stdio as a subprocess, over HTTP behind the desk's tokens, and its
refusals to start."""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import httpx2
import mcp_types as types
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from tests.desk.desk_harness import SECRET, bearer, serve
from tests.mcp.mcp_kit import INITIALIZE, Call, open_request, text_of

from roomkit.cli import main
from roomkit.desk import issue_answer_link, issue_token
from roomkit.desk.auth import token_entry
from roomkit.desk.tokens import token_claims
from roomkit.mcp import HumanInputMCPServer
from roomkit.mcp.command import bearer_app
from roomkit.stores.sqlite import SQLiteStore
from roomkit.tools.human_input import HumanInputHandler


async def test_stdio_server_in_a_subprocess_asks_on_the_shared_store(tmp_path: Path) -> None:
    """The SDK client launches ``roomkit mcp``; a handler on the same SQLite file answers."""
    db = tmp_path / "kit.db"
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "roomkit.cli", "mcp", "--store", f"sqlite:///{db}", "--actor", "alice"],
        env={**os.environ, "PYTHONWARNINGS": "default"},
    )
    store = SQLiteStore(str(db))
    handler = HumanInputHandler(store=store)
    try:
        async with Client(params) as client:
            call = Call(client, "AskUserQuestion", {"question": "Ship it?"})
            await call.wait_asked()
            request = await open_request(handler)
            assert (request.actor_id, request.room_id, str(request.channel_type)) == (
                "alice",
                "mcp",
                "mcp",
            )
            assert await handler.aresolve(request.pending_id, "yes")
            result = await call.result()
        assert (text_of(result), result.is_error) == ("yes", False)
    finally:
        await handler.close()
        await store.close()


def test_an_unreachable_store_stops_it_with_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = tmp_path / "no" / "such" / "dir" / "kit.db"
    assert main(["mcp", "--store", f"sqlite:///{missing}"]) == 1
    out, err = capsys.readouterr()
    assert out == ""
    assert err.startswith("roomkit: Cannot start the MCP server: ")
    assert err.count("\n") == 1


def test_a_memory_store_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["mcp", "--store", "memory"]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert "--store sqlite:///" in err


def test_the_command_names_its_options() -> None:
    from roomkit.cli import _parser

    args = _parser().parse_args(["mcp", "--store", "sqlite:///x.db"])
    assert isinstance(args, argparse.Namespace)
    assert (args.room, args.actor, args.http, args.host) == ("mcp", None, None, "127.0.0.1")


async def test_http_asks_as_the_tokens_actor_and_refuses_no_token() -> None:
    handler = HumanInputHandler()
    server = HumanInputMCPServer(handler, actor="nobody")
    async with serve(bearer_app(server, SECRET.encode()), lifespan="on") as base:
        async with httpx.AsyncClient() as plain:
            refused = await plain.post(f"{base}/mcp", json={})
        assert refused.status_code == 401
        assert "roomkit token" in refused.text
        headers = {"Authorization": f"Bearer {issue_token(SECRET, 'bob')}"}
        async with (
            httpx2.AsyncClient(headers=headers) as http,
            Client(streamable_http_client(f"{base}/mcp", http_client=http)) as client,
        ):
            call = Call(client, "AskUserQuestion", {"question": "Tea?"})
            await call.wait_asked()
            request = await open_request(handler)
            assert request.actor_id == "bob"
            handler.resolve(request.pending_id, "green")
            result = await call.result()
    assert text_of(result) == "green"


async def test_http_refuses_a_revoked_token_and_an_answer_link() -> None:
    """A revoked token (``roomkit revoke``'s ledger entry) and an answer link cannot ask."""
    handler = HumanInputHandler()
    server = HumanInputMCPServer(handler)
    revoked = issue_token(SECRET, "carol")
    claims = token_claims(SECRET, revoked)
    await handler.ledger.record_spent(token_entry(claims["jti"]), until=None)
    link = issue_answer_link(SECRET, "some-request", "carol")
    async with (
        serve(bearer_app(server, SECRET.encode()), lifespan="on") as base,
        httpx.AsyncClient() as plain,
    ):
        replies = [
            await plain.post(f"{base}/mcp", json={}, headers=bearer(value))
            for value in (revoked, link, "forged.token")
        ]
    assert [reply.status_code for reply in replies] == [401, 401, 401]
    assert "answers its one request" in replies[1].text


async def test_stdout_carries_the_protocol_only(tmp_path: Path) -> None:
    """Every line ``roomkit mcp`` writes on stdout is a JSON-RPC message, warnings or not."""
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-W",
        "always",
        "-m",
        "roomkit.cli",
        "mcp",
        "--store",
        f"sqlite:///{tmp_path / 'kit.db'}",
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    assert process.stdin is not None
    messages = [
        INITIALIZE,
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
        {
            "jsonrpc": "2.0",
            "id": 3,
            "method": "tools/call",
            "params": {"name": "AskUserQuestion", "arguments": {"colour": "red"}},
        },
    ]
    assert process.stdout is not None
    process.stdin.write(b"".join(json.dumps(message).encode() + b"\n" for message in messages))
    await process.stdin.drain()
    lines: list[dict[str, Any]] = []
    while not lines or lines[-1].get("id") != 3:
        lines.append(json.loads(await process.stdout.readline()))
    process.stdin.close()
    rest, _ = await process.communicate()
    lines += [json.loads(line) for line in rest.decode().splitlines()]
    assert all(line["jsonrpc"] == "2.0" for line in lines)
    assert [line.get("id") for line in lines] == [1, 2, 3]
    assert lines[2]["result"]["isError"] is True
    assert process.returncode == 0


async def test_a_wait_outlives_the_process_and_is_answered_by_another(tmp_path: Path) -> None:
    """One ``roomkit mcp`` says "still waiting" and stops; another on the store, sharing the
    desk's secret, takes the retry and gives the answer given meanwhile."""
    db = tmp_path / "kit.db"
    command = ["-m", "roomkit.cli", "mcp", "--store", f"sqlite:///{db}", "--actor", "alice"]
    params = StdioServerParameters(
        command=sys.executable,
        args=[*command, "--hold", "0.2"],
        env={**os.environ, "ROOMKIT_DESK_SECRET": SECRET, "PYTHONWARNINGS": "default"},
    )
    ask = ("AskUserQuestion", {"question": "Ship it?"})
    store = SQLiteStore(str(db))
    handler = HumanInputHandler(store=store)
    try:
        async with Client(params) as client:
            still = await client.session.call_tool(*ask, allow_input_required=True)
        assert isinstance(still, types.InputRequiredResult)
        request = await open_request(handler)
        assert await handler.aresolve(request.pending_id, "yes", by="alice")
        async with Client(params) as client:
            done = await client.session.call_tool(
                *ask, request_state=still.request_state, allow_input_required=True
            )
        assert isinstance(done, types.CallToolResult)
        assert (text_of(done), done.is_error) == ("yes", False)
    finally:
        await handler.close()
        await store.close()


async def test_stdio_answers_a_message_its_parser_cannot_read(tmp_path: Path) -> None:
    """A call whose text holds a lone surrogate (``"\\ud800"``, valid JSON) and a line that is
    no JSON get an error each, the call under its id; nothing is left unanswered."""
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "roomkit.cli",
        "mcp",
        "--store",
        f"sqlite:///{tmp_path / 'kit.db'}",
        "--actor",
        "alice",
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    assert process.stdin is not None
    assert process.stdout is not None
    initialize = INITIALIZE
    lines = [
        json.dumps(initialize).encode(),
        b'{"jsonrpc": "2.0", "method": "notifications/initialized"}',
        b'{"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": '
        b'"AskUserQuestion", "arguments": {"question": "Ship \\ud83d?"}}}',
        b'{"jsonrpc": "2.0", "id": 3, "method": ',
        b'{"jsonrpc": "2.0", "id": 4, "method": "tools/list"}',
    ]
    process.stdin.write(b"".join(line + b"\n" for line in lines))
    await process.stdin.drain()
    replies: list[dict[str, Any]] = []
    while not replies or replies[-1].get("id") != 4:
        replies.append(json.loads(await process.stdout.readline()))
    process.stdin.close()
    await process.communicate()
    errors = {reply["id"]: reply["error"] for reply in replies if "error" in reply}
    assert set(errors) == {2, None}
    assert "U+D83D" in errors[2]["message"]
    assert errors[None]["code"] == types.PARSE_ERROR


async def test_stdio_refuses_a_message_that_names_a_key_twice(tmp_path: Path) -> None:
    """A message naming ``id`` twice gets a parse error under no id, a call naming its
    ``arguments`` twice an error under its id; neither is taken, and the next line is served."""
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "roomkit.cli",
        "mcp",
        "--store",
        f"sqlite:///{tmp_path / 'kit.db'}",
        "--actor",
        "alice",
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    assert process.stdin is not None
    assert process.stdout is not None
    initialize = INITIALIZE
    lines = [
        json.dumps(initialize).encode(),
        b'{"jsonrpc": "2.0", "method": "notifications/initialized"}',
        b'{"jsonrpc": "2.0", "id": 2, "id": 3, "method": "tools/list"}',
        b'{"jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": {"name": '
        b'"AskUserQuestion", "arguments": {"question": "Ship it?"}, "arguments": {"x": 1}}}',
        b'{"jsonrpc": "2.0", "method": "notifications/cancelled", "method": "ping"}',
        b'{"jsonrpc": "2.0", "id": 5, "method": "ping"}',
    ]
    process.stdin.write(b"".join(line + b"\n" for line in lines))
    await process.stdin.drain()
    replies: list[dict[str, Any]] = []
    while not replies or replies[-1].get("id") != 5:
        replies.append(json.loads(await process.stdout.readline()))
    process.stdin.close()
    await process.communicate()
    assert [reply.get("id") for reply in replies] == [1, None, 4, 5]
    assert replies[1]["error"] == {
        "code": types.PARSE_ERROR,
        "message": "The message names the key 'id' twice in one object: give it once",
    }
    assert replies[2]["error"] == {
        "code": types.INVALID_REQUEST,
        "message": "The message names the key 'arguments' twice in one object: give it once",
    }
    assert replies[3]["result"] == {}
    store = SQLiteStore(str(tmp_path / "kit.db"))
    handler = HumanInputHandler(store=store)
    try:
        assert await handler.list_pending() == []
    finally:
        await handler.close()
        await store.close()


@pytest.mark.parametrize(
    ("option", "value"),
    [
        ("--http", "99999"),
        ("--http", "-1"),
        ("--timeout", "nan"),
        ("--timeout", "1e12"),
        ("--hold", "0"),
        ("--hold", "1e12"),
        ("--max-open-calls", "0"),
        ("--room", ""),
        ("--actor", ""),
        ("--actor", "alice "),
        ("--desk-url", "desk.example.com"),
        ("--desk-url", "https://desk.example.com:99999"),
        ("--desk-url", "https://desk.example.com/#inbox"),
    ],
)
def test_a_wrong_option_is_named_before_the_store_is_opened(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], option: str, value: str
) -> None:
    db = tmp_path / "kit.db"
    assert main(["mcp", "--store", f"sqlite:///{db}", option, value]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err.startswith(f"roomkit: {option} ")
    assert not db.exists()


def test_a_room_no_store_keeps_stops_it_with_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Refused at start, rather than read by every call as its own arguments' fault."""
    store = f"sqlite:///{tmp_path / 'kit.db'}"
    assert main(["mcp", "--store", store, "--actor", "alice", "--room", "r" * 300]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err.splitlines() == [
        "roomkit: --room is 300 characters, over the 256 a request's room may have on every "
        "store: pass a shorter one"
    ]


def _mcp_notice(database: Path) -> list[str]:
    """What ``roomkit mcp`` on ``database`` says on stderr, its client gone at once."""
    done = subprocess.run(
        [sys.executable, "-m", "roomkit.cli", "mcp", "--store", f"sqlite:///{database}",
         "--actor", "alice"],
        stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert (done.returncode, done.stdout) == (0, "")
    return done.stderr.splitlines()


def test_a_new_store_file_is_named_on_stderr(tmp_path: Path) -> None:
    """A store the desk does not read goes said: the agent's questions would go where no
    desk looks. Making it is fine (a first run), so the server goes on."""
    database = tmp_path / "kit.db"
    assert _mcp_notice(database) == [
        f"roomkit mcp: created a new store in {database}: its questions show on a desk run "
        f"with the same --store (roomkit desk --store sqlite:///{database})"
    ]
    assert database.exists()
    assert _mcp_notice(database) == []


def test_a_closed_standard_input_is_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "kit.db"
    monkeypatch.setattr(sys, "stdin", None)
    assert main(["mcp", "--store", f"sqlite:///{db}", "--actor", "alice"]) == 2
    assert capsys.readouterr().err.splitlines() == [
        "roomkit: roomkit mcp talks to its client on standard input and output, and its input "
        "is closed: let the MCP client start it (or serve HTTP with --http PORT)"
    ]
    assert not db.exists()


def test_a_client_that_stops_reading_ends_it_without_a_traceback(tmp_path: Path) -> None:
    """The reply goes to a pipe no one reads: the command ends as on any closed pipe."""
    store = f"sqlite:///{tmp_path / 'kit.db'}"
    process = subprocess.Popen(
        [sys.executable, "-m", "roomkit.cli", "mcp", "--store", store, "--actor", "alice"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert process.stdout is not None
    process.stdout.close()
    initialize = INITIALIZE
    try:
        _, err = process.communicate(json.dumps(initialize).encode() + b"\n", timeout=60)
    finally:
        if process.returncode is None:
            process.kill()
            process.communicate()
    said = [line for line in err.decode().splitlines() if "created a new store" not in line]
    assert (process.returncode, said) == (141, [])
