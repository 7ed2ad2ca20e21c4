"""Schemathesis against ``roomkit mcp --http``, run as the command: hostile bodies, no 5xx.

The command serves a SQLite store in a subprocess, with its log on stderr. JSON-RPC messages
are described by a schema of their own (the methods a client sends, the human-input tools);
each generated message goes with one part made an attack (``tests/hostile_json.py``): nesting
far past the limits, a number too long or out of range, a lone surrogate, NUL, a key given
twice. Then a sweep puts each attack in each part of a real tool call in turn. No request may
answer 5xx, the log holds no traceback nor error, and afterwards an SDK client still asks
through the command. Fixed, small runs, derandomized.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import httpx2
import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from tests.desk.desk_harness import SECRET
from tests.hostile_json import every_attack, hostile_text
from tests.notify.slack_api import free_port

from roomkit.desk import issue_token

EXAMPLES = 60
TOKEN = issue_token(SECRET, "bob")
CALL = {
    "jsonrpc": "2.0",
    "id": 7,
    "method": "tools/call",
    "params": {
        "name": "AskUserQuestion",
        "arguments": {"question": "Tea?", "options": ["green", "black"]},
    },
}
REQUEST: dict[str, Any] = {
    "type": "object",
    "required": ["jsonrpc", "method"],
    "additionalProperties": False,
    "properties": {
        "jsonrpc": {"enum": ["2.0"]},
        "id": {"anyOf": [{"type": "integer"}, {"type": "string"}]},
        "method": {
            "enum": [
                "ping",
                "tools/list",
                "tools/call",
                "initialize",
                "notifications/initialized",
                "notifications/cancelled",
                "no/such/method",
            ]
        },
        "params": {
            "type": "object",
            "additionalProperties": False,
            "properties": {
                "name": {"enum": ["AskUserQuestion", "ConfirmAction", "NoSuchTool"]},
                "arguments": {
                    "type": "object",
                    "properties": {
                        "question": {"type": "string"},
                        "action": {"type": "string"},
                        "options": {"type": "array", "items": {"type": "string"}},
                    },
                },
                "requestId": {"type": "integer"},
                "_meta": {"type": "object"},
            },
        },
    },
}
MCP = schemathesis.openapi.from_dict(
    {
        "openapi": "3.0.3",
        "info": {"title": "roomkit mcp --http", "version": "1"},
        "paths": {
            "/mcp": {
                "post": {
                    "requestBody": {
                        "required": True,
                        "content": {"application/json": {"schema": REQUEST}},
                    },
                    "responses": {"default": {"description": "A JSON-RPC answer or stream"}},
                }
            }
        },
    }
)


class Command:
    """``roomkit mcp --http`` in a subprocess, its stderr read into :attr:`log` as it comes."""

    def __init__(self, folder: Path) -> None:
        self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        self.log: list[str] = []
        self.serving = threading.Event()
        self.process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "roomkit.cli",
                "mcp",
                "--store",
                f"sqlite:///{folder / 'kit.db'}",
                "--http",
                str(self.port),
                # A well-formed call is asked and gives up at once: the run never waits.
                "--timeout",
                "0.05",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            env={**os.environ, "ROOMKIT_DESK_SECRET": SECRET},
        )
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self) -> None:
        assert self.process.stderr is not None
        for line in self.process.stderr:
            self.log.append(line.decode("utf-8", "replace"))
            if "roomkit mcp: serving" in self.log[-1]:
                self.serving.set()
        self.serving.set()  # the process ended: whoever waits finds out

    def faults(self) -> list[str]:
        """The log's lines that tell of a fault: a traceback, or an error."""
        return [
            line
            for line in self.log
            if "Traceback" in line or line.startswith(("ERROR", "CRITICAL", "--- Logging error"))
        ]

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(timeout=20)
        self.reader.join(timeout=20)
        assert self.process.stderr is not None
        self.process.stderr.close()


@pytest.fixture(scope="module")
def command(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Command]:
    """One command for the module's runs: starting it is most of their time."""
    running = Command(tmp_path_factory.mktemp("mcp"))
    try:
        assert running.serving.wait(timeout=30), "roomkit mcp did not start"
        assert running.process.poll() is None, "".join(running.log)
        yield running
    finally:
        running.stop()


def session(base: str) -> dict[str, str]:
    """The headers of an initialized session: the token, the session id, what is accepted."""
    headers = {
        "Authorization": f"Bearer {TOKEN}",
        "Accept": "application/json, text/event-stream",
        "Content-Type": "application/json",
    }
    initialize = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "clientInfo": {"name": "fuzz", "version": "1"},
        },
    }
    with httpx.Client(timeout=30) as http:
        reply = http.post(f"{base}/mcp", json=initialize, headers=headers)
        assert reply.status_code == 200, reply.text
        headers["Mcp-Session-Id"] = reply.headers["mcp-session-id"]
        headers["Mcp-Protocol-Version"] = "2025-11-25"
        done = {"jsonrpc": "2.0", "method": "notifications/initialized"}
        assert http.post(f"{base}/mcp", json=done, headers=headers).status_code == 202
    return headers


async def still_asks(base: str) -> list[str]:
    """The tools an SDK client lists, once a call of one has asked (and timed out)."""
    auth = {"Authorization": f"Bearer {TOKEN}"}
    async with (
        httpx2.AsyncClient(headers=auth) as http,
        Client(streamable_http_client(f"{base}/mcp", http_client=http)) as client,
    ):
        result = await client.call_tool("AskUserQuestion", {"question": "Still there?"})
        assert result.is_error, "nobody answers within the command's --timeout"
        return sorted(tool.name for tool in (await client.list_tools()).tools)


def test_hostile_bodies_get_4xx_and_roomkit_mcp_serves_on(command: Command) -> None:
    headers = session(command.base)
    operation = MCP["/mcp"]["POST"]
    statuses: set[int] = set()

    @settings(
        max_examples=EXAMPLES,
        derandomize=True,
        deadline=None,
        suppress_health_check=list(HealthCheck),
    )
    @given(case=operation.as_strategy(), data=st.data())
    def attack(case: schemathesis.Case, data: st.DataObject) -> None:
        message = CALL if data.draw(st.booleans()) else case.body
        text = hostile_text(data, message)
        response = case.call(base_url=command.base, headers=headers, data=text, timeout=30)
        assert response.status_code < 500, (text[:200], response.text[:300])
        statuses.add(response.status_code)

    attack()
    assert 400 in statuses
    assert command.faults() == []
    assert "AskUserQuestion" in asyncio.run(still_asks(command.base))
    assert command.process.poll() is None


def test_every_attack_in_every_part_of_a_call_gets_4xx_or_is_taken(command: Command) -> None:
    headers = session(command.base)
    statuses: list[int] = []
    with httpx.Client(timeout=30) as http:
        for text in every_attack(CALL):
            response = http.post(f"{command.base}/mcp", content=text.encode(), headers=headers)
            assert response.status_code < 500, (text[:200], response.text[:300])
            statuses.append(response.status_code)
            if response.status_code == 400 and response.headers["content-type"].startswith(
                "application/json"
            ):
                assert json.loads(response.text)["error"]["code"] in (-32700, -32600, -32602)
    assert len(statuses) > 150
    assert 400 in statuses
    assert command.faults() == []
    assert "AskUserQuestion" in asyncio.run(still_asks(command.base))
