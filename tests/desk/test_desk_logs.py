"""Structured logs: ``roomkit desk --log-format json`` writes one JSON object per line."""

from __future__ import annotations

import asyncio
import io
import json
import logging
import os
import re
import signal
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from desk_harness import SECRET, token

from roomkit.cli import main
from roomkit.desk.logs import JsonFormatter, log_as_json


@pytest.fixture
def root_logging() -> Iterator[None]:
    """Put the root logger back as it was (pytest's capture handlers included)."""
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    yield
    for handler in list(root.handlers):
        root.removeHandler(handler)
    for handler in handlers:
        root.addHandler(handler)
    root.setLevel(level)


def _record(message: str, *args: object, **extra: Any) -> logging.LogRecord:
    record = logging.LogRecord("roomkit.desk", logging.INFO, __file__, 1, message, args, None)
    record.__dict__.update(extra)
    return record


def test_a_record_is_one_line_of_json_with_its_event_fields() -> None:
    line = JsonFormatter().format(
        _record("Answered %s\nfor real", "p1", event="answer", pending_id="p1", actor="alice")
    )

    assert "\n" not in line
    fields = json.loads(line)
    assert list(fields)[:4] == ["time", "level", "logger", "message"]
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", fields["time"])
    assert fields["level"] == "INFO"
    assert fields["logger"] == "roomkit.desk"
    assert fields["message"] == "Answered p1\nfor real"
    assert (fields["event"], fields["pending_id"], fields["actor"]) == ("answer", "p1", "alice")
    assert "args" not in fields
    assert "msg" not in fields


def test_an_exception_and_an_unserialisable_field_keep_the_line_valid() -> None:
    try:
        raise ValueError("the store is gone")
    except ValueError:
        record = _record("failed", where=Path("/tmp/x"), seen={1, 2})
        record.exc_info = sys.exc_info()

    fields = json.loads(JsonFormatter().format(record))

    assert fields["where"] == "/tmp/x"
    assert fields["seen"] == "{1, 2}"
    assert fields["exception"].startswith("Traceback")
    assert "ValueError: the store is gone" in fields["exception"]


@pytest.mark.usefixtures("root_logging")
def test_log_as_json_sends_every_logger_through_the_formatter() -> None:
    stream = io.StringIO()
    log_as_json("warning", stream=stream)

    logging.getLogger("tests.some.library").warning("Shutting down")
    logging.getLogger("tests.roomkit.desk").info("not at this level")

    lines = stream.getvalue().splitlines()
    assert [json.loads(line)["message"] for line in lines] == ["Shutting down"]
    with pytest.raises(ValueError, match="Unknown log level 'loud'"):
        log_as_json("loud")


def test_an_unknown_level_with_json_logs_exits_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = str(tmp_path / "data")
    code = main(["desk", "--log-format", "json", "--log-level", "loud", "--data-dir", data])

    assert code == 2
    assert "Unknown log level 'loud'" in capsys.readouterr().err


def test_an_unknown_level_with_text_logs_exits_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = str(tmp_path / "data")
    code = main(["desk", "--log-level", "loud", "--port", "0", "--data-dir", data])

    assert code == 2
    assert capsys.readouterr().err == (
        "roomkit: Unknown log level 'loud': use critical, error, warning, info, debug, trace\n"
    )


async def _base_url(process: asyncio.subprocess.Process) -> str:
    """The desk's base URL, from the sign-in link it prints on stdout once it listens."""
    assert process.stdout is not None
    line = (await process.stdout.readline()).decode()
    found = re.match(r"Open (http://\S+)/#token=", line)
    assert found, f"the desk printed {line!r} instead of its link"
    return found.group(1)


async def _json_desk(tmp_path: Path, database: Path, *options: str) -> asyncio.subprocess.Process:
    """``roomkit desk --log-format json`` on ``database`` (and ``options``), in a process of
    its own."""
    environment = {**os.environ, "PYTHONUNBUFFERED": "1", "ROOMKIT_DESK_SECRET": SECRET}
    return await asyncio.create_subprocess_exec(
        sys.executable, "-m", "roomkit.cli", "desk", "--port", "0", "--log-format", "json",
        "--data-dir", str(tmp_path / "data"), "--store", f"sqlite:///{database}", *options,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, env=environment,
    )  # fmt: skip


async def test_roomkit_desk_logs_each_event_as_a_json_line(tmp_path: Path) -> None:
    from roomkit.stores.sqlite import SQLiteStore
    from roomkit.tools.human_input import HumanInputHandler

    database = tmp_path / "desk.db"
    store = SQLiteStore(database, backstop_interval=0.02)
    agent = HumanInputHandler(store=store)
    asked = await agent.create("AskUserQuestion", {"question": "Where?"}, actor_id="alice")
    desk = await _json_desk(tmp_path, database)
    try:
        base = await _base_url(desk)
        async with httpx.AsyncClient(base_url=base) as client:
            answered = await client.post(
                f"/api/requests/{asked.pending_id}/answer",
                json={"answer": "Lisbon"},
                headers={"Authorization": f"Bearer {token('alice')}"},
            )
        assert answered.status_code == 200
        assert await agent.wait(asked.pending_id, timeout=30) == "Lisbon"
    finally:
        desk.send_signal(signal.SIGINT)
        _, logged = await desk.communicate()
        await store.close()
    lines = logged.decode().splitlines()

    events = [json.loads(line) for line in lines]
    assert all({"time", "level", "logger", "message"} <= set(event) for event in events)
    answer = next(event for event in events if event.get("event") == "answer")
    assert answer["pending_id"] == asked.pending_id
    assert (answer["actor"], answer["surface"], answer["level"]) == ("alice", "desk", "INFO")
    assert answer["logger"] == "roomkit.desk"
    assert any(event["logger"] == "uvicorn.access" for event in events)
    assert "Lisbon" not in "".join(lines)
    assert desk.returncode == 0


@pytest.mark.parametrize("options", [(), ("--log-level", "error")], ids=["default", "error"])
async def test_json_logs_hold_only_json_when_the_desk_makes_its_store(
    tmp_path: Path, options: tuple[str, ...]
) -> None:
    """The new-store notice is a JSON line too (whatever ``--log-level`` lets through, as
    the text notice is always printed), and no line carries terminal colour codes."""
    database = tmp_path / "new.db"
    desk = await _json_desk(tmp_path, database, *options)
    try:
        await _base_url(desk)
    finally:
        desk.send_signal(signal.SIGINT)
        _, logged = await desk.communicate()
    lines = logged.decode().splitlines()

    events = [json.loads(line) for line in lines]
    created = next(event for event in events if event.get("event") == "store_created")
    assert created["path"] == str(database)
    assert created["logger"] == "roomkit.desk"
    assert "created a new store" in created["message"]
    assert not any("color_message" in event for event in events)
    assert "\x1b" not in "".join(event["message"] for event in events)
    assert desk.returncode == 0
