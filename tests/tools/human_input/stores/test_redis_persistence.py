"""Opening a Redis store reads how the server persists, and warns of what it would lose.

Each test starts a redis-server of its own with the settings under test, from a
configuration file, and reads the store's log records.
"""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path

import pytest
from tests.tools.human_input.stores.redis_server import running_redis
from tests.tools.human_input.stores.store_kit import RESOLVED, make_request

from roomkit.stores.redis import RedisStore

LOGGER = "roomkit.tools.human_input.stores.redis"


def warnings_of(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [
        record.getMessage()
        for record in caplog.records
        if record.name == LOGGER and record.levelno == logging.WARNING
    ]


@pytest.mark.parametrize(
    ("settings", "named"),
    [
        ({"appendfsync": "everysec"}, "appendfsync everysec"),
        ({"appendfsync": "no"}, "appendfsync no"),
        ({"appendonly": "no", "save": "3600 1 300 100"}, "snapshots only"),
        ({"appendonly": "no"}, "keeps nothing on disk"),
    ],
    ids=["everysec", "fsync-no", "snapshots", "nothing"],
)
async def test_a_server_that_can_lose_answers_is_named_with_what_it_loses(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, settings: dict[str, str], named: str
) -> None:
    with running_redis(tmp_path, settings=settings) as server:
        async with RedisStore(server.url):
            pass

    (warning,) = warnings_of(caplog)
    assert named in warning
    assert f"127.0.0.1:{server.port}" in warning
    assert "appendonly yes and appendfsync always" in warning


async def test_a_server_with_no_persistence_is_said_to_lose_everything(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with running_redis(tmp_path, settings={"appendonly": "no", "save": '""'}) as server:
        async with RedisStore(server.url):
            pass

    (warning,) = warnings_of(caplog)
    assert "a restart of the server loses every pending request and every acknowledged" in (warning)


async def test_a_server_that_syncs_every_write_gets_no_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with running_redis(tmp_path) as server:
        async with RedisStore(server.url) as store:
            await store.insert(make_request())

    assert warnings_of(caplog) == []


async def test_a_server_that_refuses_config_is_said_to_be_unchecked_and_still_serves(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with running_redis(tmp_path, settings={"rename-command": 'CONFIG ""'}) as server:
        async with RedisStore(server.url) as store:
            request, _ = await store.insert(make_request())
            settled = await store.settle(request.pending_id, RESOLVED, result="still works")

    (warning,) = warnings_of(caplog)
    assert "could not check the persistence" in warning
    assert f"127.0.0.1:{server.port}" in warning
    assert "CONFIG" in warning
    assert settled is not None


async def test_the_settings_are_read_once_per_store(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with running_redis(tmp_path, settings={"appendonly": "no"}) as server:
        store = RedisStore(server.url)
        try:
            await store.open()
            await store.open()
            await store.insert(make_request())
        finally:
            await store.close()

    assert len(warnings_of(caplog)) == 1


async def test_first_calls_made_at_once_read_the_settings_once(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Several calls open the store together (an agent's first requests, all at once): the
    server's settings are read, and their warning logged, once."""
    with running_redis(tmp_path, settings={"appendonly": "no"}) as server:
        store = RedisStore(server.url)
        try:
            inserted = await asyncio.gather(*(store.insert(make_request()) for _ in range(8)))
        finally:
            await store.close()

    assert len(inserted) == 8
    assert len(warnings_of(caplog)) == 1
