"""``SQLiteStore(create=False)`` and ``open_url(url, create=False)``: a store opened only to
read what is there never creates a file, nor writes its tables into one that holds none."""

from __future__ import annotations

import sqlite3
from contextlib import closing
from pathlib import Path

import pytest

from roomkit.core.exceptions import StoreError, StoreNotFoundError
from roomkit.stores import close_stores, open_url
from roomkit.stores.sqlite import SQLiteStore


def _names(folder: Path) -> list[str]:
    return sorted(path.name for path in folder.iterdir())


async def test_a_missing_file_is_not_created(tmp_path: Path) -> None:
    path = tmp_path / "desk.db"
    store = SQLiteStore(path, create=False)
    try:
        with pytest.raises(StoreNotFoundError, match="does not exist"):
            await store.open()
    finally:
        await store.close()
    assert _names(tmp_path) == []


@pytest.mark.parametrize("kind", ["empty", "foreign"])
async def test_a_file_without_the_store_is_left_as_it_was(kind: str, tmp_path: Path) -> None:
    path = tmp_path / "desk.db"
    if kind == "empty":
        path.touch()
    else:
        with closing(sqlite3.connect(path)) as db, db:
            db.execute("CREATE TABLE notes (body TEXT)")
    before = path.read_bytes()
    requests, rooms = open_url(f"sqlite:///{path}", create=False)
    try:
        with pytest.raises(StoreNotFoundError, match="holds no roomkit store") as caught:
            await requests.fetch("x")
    finally:
        await close_stores(requests, rooms)
    assert isinstance(caught.value, StoreError)
    assert isinstance(caught.value, LookupError)
    assert path.read_bytes() == before
    assert _names(tmp_path) == ["desk.db"]


async def test_a_file_holding_the_store_opens_as_usual(tmp_path: Path) -> None:
    path = tmp_path / "desk.db"
    async with SQLiteStore(path) as store:
        assert await store.fetch("x") is None
    async with SQLiteStore(path, create=False) as store:
        assert await store.fetch("x") is None
        assert await store.list_pending() == []
