"""A desk on a store it cannot reach: it refuses to start, in one line; a later outage is a
503 with one log line, not a traceback."""

from __future__ import annotations

import logging
import socket
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
import uvicorn
from desk_harness import SECRET, World, bearer, serve
from tests.tools.human_input.stores.redis_server import RedisServer, running_redis

from roomkit import RoomKit
from roomkit.cli import main
from roomkit.desk import create_desk_app, open_stores
from roomkit.stores.redis import RedisStore
from roomkit.tools.human_input import HumanInputHandler


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ROOMKIT_DESK_SECRET", raising=False)
    monkeypatch.delenv("ROOMKIT_DESK_DATA", raising=False)


@pytest.fixture
def redis_server(tmp_path: Path) -> Iterator[RedisServer]:
    (tmp_path / "redis").mkdir()
    with running_redis(tmp_path / "redis") as server:
        yield server


def closed_port() -> int:
    """A loopback port nobody listens on (connections to it are refused)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def test_a_sqlite_url_with_two_slashes_says_how_to_write_it() -> None:
    with pytest.raises(ValueError, match=r"not a SQLite URL: use sqlite:///kit\.db"):
        open_stores("sqlite://kit.db")


def test_roomkit_desk_says_how_to_write_a_sqlite_url(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["desk", "--store", "sqlite://kit.db"]) == 2
    assert "use sqlite:///kit.db" in capsys.readouterr().err


@pytest.mark.parametrize("where", ["redis", "sqlite"])
def test_roomkit_desk_refuses_an_unreachable_store_in_one_line(
    where: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    if where == "redis":
        url, problem = f"redis://127.0.0.1:{closed_port()}/0", "cannot be reached"
    else:
        url, problem = f"sqlite:///{tmp_path}/no-such-folder/kit.db", "unavailable"
    code = main(["desk", "--store", url, "--port", "0", "--data-dir", str(tmp_path)])
    out, err = capsys.readouterr()
    assert code == 1
    assert err.startswith("roomkit: Cannot start the desk: ")
    assert problem in err
    assert err.count("\n") == 1
    assert out == ""


async def test_the_desk_app_does_not_start_on_an_unreachable_store(
    caplog: pytest.LogCaptureFixture,
) -> None:
    store = RedisStore(f"redis://127.0.0.1:{closed_port()}/0")
    app = create_desk_app(RoomKit(), handler=HumanInputHandler(store=store), secret=SECRET)
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        config = uvicorn.Config(app, log_config=None, lifespan="on")
        server = uvicorn.Server(config)
        with caplog.at_level(logging.INFO), pytest.raises(SystemExit):
            await server.serve(sockets=[sock])
    await store.close()
    assert not server.started
    errors = [record for record in caplog.records if record.levelno >= logging.ERROR]
    first = errors[0].getMessage()
    assert first.startswith("The desk cannot start: the Redis store at ")
    assert "\n" not in first
    assert [record.getMessage() for record in errors[1:]] == [
        "Application startup failed. Exiting."
    ]
    assert all(record.exc_info is None for record in caplog.records)


async def test_the_desk_app_starts_on_a_reachable_store(redis_server: RedisServer) -> None:
    store = RedisStore(redis_server.url)
    app = create_desk_app(RoomKit(), handler=HumanInputHandler(store=store), secret=SECRET)
    try:
        async with serve(app) as base, httpx.AsyncClient(base_url=base) as client:
            listed = await client.get("/api/requests", headers=bearer("alice"))
    finally:
        await store.close()
    assert listed.json() == {"requests": []}


async def test_an_outage_after_the_start_is_a_503_with_one_log_line(
    redis_server: RedisServer, caplog: pytest.LogCaptureFixture
) -> None:
    store = RedisStore(redis_server.url)
    world = World(handler=HumanInputHandler(store=store))
    try:
        async with world.client() as client:
            assert (await client.get("/api/requests", headers=bearer("alice"))).status_code == 200
            redis_server.stop()
            with caplog.at_level(logging.WARNING, logger="roomkit.desk"):
                refused = await client.get("/api/requests", headers=bearer("alice"))
    finally:
        await store.close()
    assert refused.status_code == 503
    assert refused.json() == {"detail": "The request store is unavailable: try again"}
    logged = [record for record in caplog.records if record.name == "roomkit.desk"]
    assert len(logged) == 1
    assert logged[0].getMessage().startswith("The desk could not reach the request store: ")
    assert logged[0].exc_info is None
