"""A PostgreSQL store's own options in its URL's query (``?pool_size=``,
``?connect_timeout=``), for ``open_url`` and every ``--store``: taken out before libpq reads
the URL, checked, refused beside the argument of the same name; and no message about a URL
shows its password."""

from __future__ import annotations

import asyncio

import psycopg
import pytest

from roomkit.cli import main
from roomkit.stores import close_stores, open_url
from roomkit.stores.postgres import PostgresRoomStore, PostgresStore

SECRET = "s3cret-word"
URL = f"postgresql://app:{SECRET}@127.0.0.1:1/db"
"""A URL no server answers, which nothing in these tests connects to."""


async def test_open_url_takes_the_stores_options_out_of_the_url(database: str) -> None:
    """Both stores use the URL's pool size and connect timeout, and libpq still gets the rest
    of the query: the store's connections carry the application name it gives."""
    name = "roomkit-url-options"
    requests, rooms = open_url(
        f"{database}?pool_size=3&application_name={name}&connect_timeout=2.5"
    )
    try:
        assert (requests.pool_size, rooms.pool_size) == (3, 3)
        assert (requests.connect_timeout, rooms.connect_timeout) == (2.5, 2.5)
        assert await rooms.get_room("none") is None
        assert await requests.fetch("none") is None
        async with await psycopg.AsyncConnection.connect(database) as admin:
            cursor = await admin.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE application_name = %s", (name,)
            )
            row = await cursor.fetchone()
        assert row is not None
        assert row[0] >= 1
    finally:
        await close_stores(requests, rooms)


def test_without_options_the_stores_keep_their_defaults() -> None:
    requests, rooms = open_url(URL)
    assert (requests.pool_size, rooms.pool_size) == (16, 16)  # the room store shares the pool
    assert (requests.connect_timeout, rooms.connect_timeout) == (5.0, 5.0)
    assert PostgresRoomStore(URL).pool_size == 8
    assert PostgresStore(URL, pool_size=4, connect_timeout=1).pool_size == 4


def test_the_command_line_reads_a_store_through_a_url_with_its_options(
    database: str, capsys: pytest.CaptureFixture[str]
) -> None:
    async def make() -> None:
        requests, rooms = open_url(database)
        try:
            assert await requests.fetch("none") is None
        finally:
            await close_stores(requests, rooms)

    asyncio.run(make())
    url = f"{database}?pool_size=2&connect_timeout=3"
    assert main(["grants", "list", "--store", url]) == 0
    assert capsys.readouterr().out.endswith("No grants\n")


def test_a_bad_pool_size_on_the_command_line_is_one_line_without_the_password(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["audit", "verify", "--store", f"{URL}?pool_size=many"]) == 2
    said = capsys.readouterr().err
    assert said.startswith("roomkit: the URL's pool_size='many' is not a whole number"), said
    assert SECRET not in said


@pytest.mark.parametrize("value", ["0", "-1", "many", "", "1.5", "+2", "%32x"])
def test_a_url_pool_size_must_be_a_whole_number_of_connections(value: str) -> None:
    with pytest.raises(ValueError, match="is not a whole number of connections") as caught:
        open_url(f"{URL}?pool_size={value}")
    message = str(caught.value)
    assert "the URL's pool_size=" in message
    assert "write it as ?pool_size=32" in message
    assert SECRET not in message


@pytest.mark.parametrize("value", ["0", "-1", "abc", "", "nan", "inf", "5s"])
def test_a_url_connect_timeout_must_be_a_positive_number_of_seconds(value: str) -> None:
    with pytest.raises(ValueError, match="not a positive number of seconds") as caught:
        PostgresStore(f"{URL}?connect_timeout={value}")
    assert "write it as ?connect_timeout=5" in str(caught.value)


@pytest.mark.parametrize("store", [PostgresStore, PostgresRoomStore])
@pytest.mark.parametrize(("option", "value"), [("pool_size", 2), ("connect_timeout", 2.0)])
def test_an_option_is_given_once(
    store: type[PostgresStore | PostgresRoomStore], option: str, value: float
) -> None:
    with pytest.raises(ValueError, match=f"given twice, as {option}= and in the URL's query"):
        store(f"{URL}?{option}=2", **{option: value})
    with pytest.raises(ValueError, match=f"the URL gives {option}= 2 times: keep one"):
        store(f"{URL}?{option}=2&{option}=2")


@pytest.mark.parametrize(
    ("dsn", "said"),
    [
        (f"postgresql://app:{SECRET}@[::1/db", '"postgresql://app:****@[::1/db"'),
        (f"mysql://app:{SECRET}@host/db?x=1", '"mysql://app:****@host/db?x"'),
        (f"mysql://app:{SECRET}@host/db", "'mysql://app:****@host/db' is not a PostgreSQL DSN"),
        (f"postgresql://app:{SECRET}%zz@host/db", "its password is not written as a URL"),
        (f"host=h password={SECRET} bad", 'missing "=" after "bad"'),
    ],
)
def test_a_dsn_refused_is_named_without_its_password(dsn: str, said: str) -> None:
    """libpq quotes the piece of the DSN it stopped at; the message has the password masked."""
    with pytest.raises(ValueError, match="PostgreSQL DSN") as caught:
        PostgresStore(dsn)
    assert said in str(caught.value)
    assert SECRET not in str(caught.value)
