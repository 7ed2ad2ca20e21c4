"""``roomkit.stores.open_url``: both stores of a back end from one URL, with no web framework."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from redis.asyncio import Redis
from tests.servers.redis_server import RedisServer

from roomkit.core.store import InMemoryStore
from roomkit.models.pending_input import PendingInput
from roomkit.models.room import Room
from roomkit.stores import MemoryStore, close_stores, open_url
from roomkit.stores.redis import RedisRoomStore, RedisStore


def test_memory_opens_both_stores_in_this_process() -> None:
    requests, rooms = open_url("memory")
    assert isinstance(requests, MemoryStore)
    assert isinstance(rooms, InMemoryStore)


def test_the_pair_names_its_stores() -> None:
    opened = open_url("memory")
    assert opened.requests is opened[0]
    assert opened.rooms is opened[1]


def test_postgres_urls_name_both_postgres_stores() -> None:
    from roomkit.stores.postgres import PostgresRoomStore, PostgresStore

    for url in ("postgresql://u:p@127.0.0.1:1/db", "postgres://u:p@127.0.0.1:1/db"):
        requests, rooms = open_url(url)
        assert isinstance(requests, PostgresStore)
        assert isinstance(rooms, PostgresRoomStore)


@pytest.mark.parametrize(
    ("url", "advice"),
    [
        ("mongodb://x", "Unknown store URL 'mongodb'"),
        ("sqlite:///", "A sqlite URL names a file"),
        ("sqlite://desk.db", "use sqlite:///desk.db"),
    ],
)
def test_a_bad_url_says_which_forms_work(url: str, advice: str) -> None:
    with pytest.raises(ValueError, match="sqlite:///") as caught:
        open_url(url)
    assert advice in str(caught.value)


@pytest.mark.parametrize("url", ["memory://", "memory:"])
def test_memory_written_as_a_url_says_to_write_it_alone(url: str) -> None:
    with pytest.raises(ValueError, match="write memory alone, without '://'"):
        open_url(url)


async def test_sqlite_keeps_requests_and_rooms_in_one_file(tmp_path: Path) -> None:
    path = tmp_path / "both.db"
    requests, rooms = open_url(f"sqlite:///{path}")
    request = PendingInput(
        pending_id="p1",
        tool_name="AskUserQuestion",
        arguments={"question": "Colour?"},
        room_id="room-1",
        tool_call_id="call-1",
        channel_id="ai-1",
    )
    try:
        await rooms.create_room(Room("room-1"))
        _, created = await requests.insert(request)
        assert created
    finally:
        await close_stores(requests, rooms, requests)
    again_requests, again_rooms = open_url(f"sqlite:///{path}")
    try:
        stored = await again_requests.fetch("p1")
        assert stored is not None
        assert stored.arguments == {"question": "Colour?"}
        room = await again_rooms.get_room("room-1")
        assert room is not None
        assert room.id == "room-1"
    finally:
        await close_stores(again_requests, again_rooms)


def test_open_url_needs_no_web_framework() -> None:
    """Opening stores from a URL imports neither FastAPI nor the desk."""
    probe = (
        "import sys\n"
        "sys.modules['fastapi'] = None\n"
        "sys.modules['starlette'] = None\n"
        "from roomkit.stores import open_url\n"
        "print(type(open_url('memory').requests).__name__)\n"
        "print('roomkit.desk' in sys.modules)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=60
    )
    assert done.stdout.split() == ["MemoryStore", "False"]


async def test_a_redis_url_sets_the_stores_timeout_beside_the_clients_options(
    redis_server: RedisServer,
) -> None:
    """``?timeout=`` is the stores' bound on every call; the client's options still reach
    the client (its connections carry the name the URL gives)."""
    name = "roomkit-url-options"
    requests, rooms = open_url(f"{redis_server.url}?client_name={name}&timeout=2.5")
    assert isinstance(requests, RedisStore)
    assert isinstance(rooms, RedisRoomStore)
    assert (requests.timeout, rooms.timeout) == (2.5, 2.5)
    admin = Redis.from_url(redis_server.url)
    try:
        await requests.open()
        assert any(client.get("name") == name for client in await admin.client_list())
    finally:
        await admin.aclose()
        await close_stores(requests, rooms)


def test_a_redis_url_without_a_timeout_keeps_five_seconds() -> None:
    requests, rooms = open_url("redis://127.0.0.1:1/0?socket_timeout=2")
    assert isinstance(requests, RedisStore)
    assert isinstance(rooms, RedisRoomStore)
    assert (requests.timeout, rooms.timeout) == (5.0, 5.0)


@pytest.mark.parametrize("value", ["0", "-1", "abc", "", "nan", "inf", "5s"])
def test_a_redis_url_timeout_must_be_a_positive_number_of_seconds(value: str) -> None:
    with pytest.raises(ValueError, match="not a positive number of seconds") as caught:
        open_url(f"redis://127.0.0.1:1/0?timeout={value}")
    assert "?timeout=5" in str(caught.value)


def test_a_redis_url_timeout_is_given_once() -> None:
    with pytest.raises(ValueError, match="timeout= 2 times: keep one"):
        open_url("redis://127.0.0.1:1/0?timeout=1&timeout=2")
    with pytest.raises(ValueError, match="given twice, as timeout= and in the URL"):
        RedisStore("redis://127.0.0.1:1/0?timeout=1", timeout=2)
    with pytest.raises(ValueError, match="given twice, as timeout= and in the URL"):
        RedisRoomStore("redis://127.0.0.1:1/0?timeout=1", timeout=2)
