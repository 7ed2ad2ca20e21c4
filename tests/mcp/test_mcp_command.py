"""``roomkit mcp``: over stdio as a subprocess, over HTTP behind the desk's tokens, and its
refusals to start."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

import httpx
import httpx2
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from tests.desk.desk_harness import SECRET, serve
from tests.mcp.mcp_kit import Call, open_request, text_of

from roomkit.cli import main
from roomkit.desk import issue_token
from roomkit.mcp import HumanInputMCPServer
from roomkit.mcp.command import bearer_app
from roomkit.tools.human_input import HumanInputHandler
from roomkit.tools.human_input.stores.sqlite import SQLiteStore


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
