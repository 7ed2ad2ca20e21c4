"""Wake-up hints between processes on one SQLite file: a commit in one process wakes the
feed of another at once, so a store that would poll only once an hour still hears it. A
killed listener's socket is removed, and its successor is woken; a folder that is taken or
cannot be written, or a path too long for a Unix socket, leaves the store polling with one
WARNING, and no change is lost. A store whose commits wait for no disk
(``synchronous="normal"``) wakes the others alike, and what it acknowledged outlives its
process being killed."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from tests.tools.human_input.stores.store_kit import (
    CREATED,
    PATIENCE,
    RESOLVED,
    SETTLE_ELSEWHERE,
    SETTLED,
    Changes,
    make_request,
)

from roomkit.stores import PendingChange
from roomkit.stores.sqlite import SQLiteStore
from roomkit.stores.sqlite._wake import wake_folder
from roomkit.tools.human_input import HumanInputHandler

LOGGER = "roomkit.tools.human_input.stores.sqlite"
HOURLY = 3600.0
"""A backstop no test outlasts: what such a store hears in time, a hint brought."""

LISTEN_ELSEWHERE = """
import asyncio, json, sys
from roomkit.stores import PendingChangeKind
from roomkit.stores.sqlite import SQLiteStore

async def main(path):
    heard = asyncio.Queue()
    async with SQLiteStore(path, backstop_interval=3600) as store:
        store.subscribe(heard.put_nowait)
        print(json.dumps("ready"), flush=True)
        while True:
            change = await heard.get()
            if change.kind is PendingChangeKind.SETTLED:
                print(json.dumps(change.pending_id), flush=True)

asyncio.run(main(sys.argv[1]))
"""
"""Run with ``path``: listens on the file, hourly backstop; says "ready", then each settled id
(one JSON string a line)."""

WAIT_ELSEWHERE = """
import asyncio, json, sys
from roomkit.tools.human_input import HumanInputHandler
from roomkit.stores.sqlite import SQLiteStore

async def main(path):
    async with SQLiteStore(path, backstop_interval=3600) as store:
        handler = HumanInputHandler(store=store)
        request = await handler.create("AskUserQuestion", {"question": "Ship it?"})
        waiting = asyncio.create_task(handler.wait(request.pending_id, timeout=None))
        while not handler.statistics().parked_waits:  # registered for wake-ups
            await asyncio.sleep(0)
        print(json.dumps(request.pending_id), flush=True)
        print(json.dumps(await waiting), flush=True)
        await handler.close()

asyncio.run(main(sys.argv[1]))
"""
"""Run with ``path``: waits on a new request, hourly backstop; prints its id, then the answer."""


@pytest.fixture
def db_path() -> Iterator[Path]:
    """A database in a folder of short path: the wake-up sockets' paths stay within a Unix
    socket's limit however deep the runner's own temporary folders are (pytest-xdist adds a
    level), so each test meets the case it sets up."""
    folder = Path(tempfile.mkdtemp(prefix="rk"))
    yield folder / "pending.db"
    shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture
async def answerer(db_path: Path) -> AsyncIterator[SQLiteStore]:
    """A store that only writes, opened first: it creates the file and its schema."""
    async with SQLiteStore(db_path) as store:
        yield store


class Elsewhere:
    """A script in a process of its own, read line by line; killed at the end of the test."""

    def __init__(self, process: asyncio.subprocess.Process) -> None:
        self.process = process

    @classmethod
    async def start(cls, script: str, *args: str) -> Elsewhere:
        process = await asyncio.create_subprocess_exec(
            sys.executable, "-c", script, *args, stdout=asyncio.subprocess.PIPE
        )
        return cls(process)

    async def read(self) -> Any:
        assert self.process.stdout is not None
        async with asyncio.timeout(PATIENCE):
            line = await self.process.stdout.readline()
        assert line, "the other process ended before it reported"
        return json.loads(line)

    async def kill(self) -> None:
        if self.process.returncode is None:
            self.process.send_signal(signal.SIGKILL)
        await self.process.wait()


@pytest.fixture
async def elsewhere() -> AsyncIterator[list[Elsewhere]]:
    started: list[Elsewhere] = []
    yield started
    for process in started:
        await process.kill()


def sockets(database: Path) -> list[str]:
    """The listeners' sockets in the file's wake-up folder."""
    located = wake_folder(str(database))
    assert located is not None
    folder = Path(located[0])
    return sorted(path.name for path in folder.iterdir()) if folder.is_dir() else []


def contents(path: Path) -> str:
    return path.read_text()


def warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [
        r.getMessage() for r in caplog.records if r.name == LOGGER and r.levelno >= logging.WARNING
    ]


async def settle_one(store: SQLiteStore) -> str:
    request, _ = await store.insert(make_request())
    assert await store.settle(request.pending_id, RESOLVED, result="yes") is not None
    return request.pending_id


async def heard_first(changes: Changes, writer: SQLiteStore) -> None:
    """Return once the feed ``changes`` listens to has looked past a change of ``writer``'s.

    From then on, a change reaches an hourly feed in time only by a hint.
    """
    request, _ = await writer.insert(make_request())
    await changes.arrival(PendingChange(CREATED, request.pending_id))


# -- hints -----------------------------------------------------------------------------------


async def test_a_settle_in_another_process_wakes_an_hourly_feed(
    db_path: Path, answerer: SQLiteStore
) -> None:
    async with SQLiteStore(db_path, backstop_interval=HOURLY) as listener:
        changes = Changes()
        listener.subscribe(changes)
        await heard_first(changes, answerer)
        assert len(sockets(db_path)) == 1
        request, _ = await answerer.insert(make_request())

        process = await asyncio.create_subprocess_exec(
            sys.executable, "-c", SETTLE_ELSEWHERE, "sqlite", str(db_path), "", request.pending_id
        )
        async with asyncio.timeout(PATIENCE):
            assert await process.wait() == 0
        await changes.arrival(PendingChange(SETTLED, request.pending_id))

        heard = next(c for c in changes.seen if c == PendingChange(SETTLED, request.pending_id))
        # The record rides along with the change: a waiter needs no read of its own.
        assert heard.record is not None
        assert (heard.record.result, heard.record.settled_by) == ("from afar", "carol")
    assert sockets(db_path) == []


@pytest.mark.parametrize("synchronous", ["full", "normal"])
async def test_an_answer_in_one_process_ends_a_wait_in_another(
    db_path: Path, answerer: SQLiteStore, elsewhere: list[Elsewhere], synchronous: str
) -> None:
    """With ``"normal"``, the answer's commits wait for no disk (the waiter's do)."""
    async with SQLiteStore(db_path, synchronous=synchronous) as store:
        handler = HumanInputHandler(store=store)
        elsewhere.append(waiter := await Elsewhere.start(WAIT_ELSEWHERE, str(db_path)))
        pending_id = await waiter.read()

        assert await handler.aresolve(pending_id, "shipped", by="here") is True

        assert await waiter.read() == "shipped"


async def test_the_desk_process_wakes_the_agent_that_waits(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """``roomkit desk --store sqlite:///...`` beside an agent on the same file."""
    from roomkit.cli import main

    for name in ("ROOMKIT_DESK_SECRET", "ROOMKIT_TOKEN", "ROOMKIT_DESK_URL", "ROOMKIT_DESK_DATA"):
        monkeypatch.delenv(name, raising=False)
    database, data = tmp_path / "kit.db", str(tmp_path / "data")
    store = SQLiteStore(database, backstop_interval=HOURLY)
    agent = HumanInputHandler(store=store)
    asked = await agent.create("AskUserQuestion", {"question": "Where?"}, actor_id="alice")
    waiting = asyncio.create_task(agent.wait(asked.pending_id, timeout=None))
    desk = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "roomkit.cli", "desk", "--port", "0", "--data-dir", data,
        "--store", f"sqlite:///{database}",
        stdout=asyncio.subprocess.PIPE, env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )  # fmt: skip
    try:
        async with asyncio.timeout(PATIENCE):
            base = await _desk_url(desk)
            assert await asyncio.to_thread(main, ["token", "alice", "--data-dir", data]) == 0
            alice = capsys.readouterr().out.strip()
            answer = ["pending", "answer", asked.pending_id, "Lisbon", "--url", base]
            assert await asyncio.to_thread(main, [*answer, "--token", alice]) == 0
            assert await waiting == "Lisbon"
    finally:
        # A failed wait must not outlive the test: its feed holds a socket and a thread.
        waiting.cancel()
        desk.send_signal(signal.SIGINT)
        await desk.communicate()
        await agent.close()
        await store.close()


async def _desk_url(process: asyncio.subprocess.Process) -> str:
    """The desk's base URL, from the sign-in link it prints once it listens."""
    assert process.stdout is not None
    while True:
        line = (await process.stdout.readline()).decode()
        assert line, "the desk exited before serving"
        found = re.match(r"Open (http://\S+)/#token=", line)
        if found:
            return found.group(1)


# -- commits that wait for no disk ----------------------------------------------------------

SETTLE_AND_STAY = """
import asyncio, json, sys
from roomkit.models.pending_input import PendingInputStatus
from roomkit.stores.sqlite import SQLiteStore

async def main(path, pending_id):
    store = SQLiteStore(path, synchronous="normal")
    won = await store.settle(pending_id, PendingInputStatus.RESOLVED, result="kept")
    print(json.dumps(won is not None), flush=True)
    await asyncio.Event().wait()

asyncio.run(main(*sys.argv[1:]))
"""
"""Run with ``path`` and an id: settles it with ``synchronous="normal"``, says whether it
won, and stays until killed."""


async def test_an_outcome_acknowledged_without_waiting_for_the_disk_survives_a_kill(
    db_path: Path, answerer: SQLiteStore, elsewhere: list[Elsewhere]
) -> None:
    request, _ = await answerer.insert(make_request())
    elsewhere.append(
        settler := await Elsewhere.start(SETTLE_AND_STAY, str(db_path), request.pending_id)
    )
    assert await settler.read() is True

    await settler.kill()

    async with SQLiteStore(db_path) as reopened:
        record = await reopened.fetch(request.pending_id)
    assert record is not None
    assert (record.status, record.result) == (RESOLVED, "kept")


# -- restarts --------------------------------------------------------------------------------


async def test_a_killed_listeners_socket_is_removed_and_its_successor_is_woken(
    db_path: Path,
    answerer: SQLiteStore,
    elsewhere: list[Elsewhere],
    caplog: pytest.LogCaptureFixture,
) -> None:
    elsewhere.append(first := await Elsewhere.start(LISTEN_ELSEWHERE, str(db_path)))
    assert await first.read() == "ready"
    (stale,) = sockets(db_path)
    await first.kill()
    assert sockets(db_path) == [stale]

    with caplog.at_level(logging.DEBUG, logger=LOGGER):
        await settle_one(answerer)
    assert sockets(db_path) == []
    assert warnings(caplog) == []

    elsewhere.append(second := await Elsewhere.start(LISTEN_ELSEWHERE, str(db_path)))
    assert await second.read() == "ready"
    settled = await settle_one(answerer)
    assert await second.read() == settled


# -- bad paths -------------------------------------------------------------------------------


@pytest.fixture
def taken(db_path: Path) -> Path:
    """The wake-up folder's path, taken by a file."""
    path = Path(f"{db_path}.wake")
    path.write_text("someone else's")
    return path


async def test_a_wake_folder_taken_by_a_file_leaves_the_store_polling_with_one_warning(
    db_path: Path, answerer: SQLiteStore, taken: Path, caplog: pytest.LogCaptureFixture
) -> None:
    await _polls_with_one_warning(db_path, answerer, caplog, str(taken))

    assert sockets(db_path) == []
    assert contents(taken) == "someone else's"


async def test_an_unwritable_wake_folder_leaves_the_store_polling_with_one_warning(
    db_path: Path, answerer: SQLiteStore, caplog: pytest.LogCaptureFixture
) -> None:
    with unwritable(Path(f"{db_path}.wake")):
        await _polls_with_one_warning(db_path, answerer, caplog, f"{db_path}.wake")
        assert sockets(db_path) == []


@pytest.fixture
def too_long(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Path, str]]:
    """A database whose wake-up folder beside it is too long a path for a socket, and the
    temporary directory its spare folder goes under instead."""
    temp = tempfile.mkdtemp(prefix="rk")
    monkeypatch.setattr(tempfile, "tempdir", temp)
    deep = tmp_path / ("d" * 90)
    deep.mkdir()
    try:
        yield deep / "pending.db", temp
    finally:
        shutil.rmtree(temp)


async def sockets_as_a_hint_wakes(database: Path) -> list[str]:
    """The sockets in the wake-up folder once a settle by one store on ``database`` has
    reached another's hourly feed (by a hint); both stores are closed on return."""
    async with (
        SQLiteStore(database) as writer,
        SQLiteStore(database, backstop_interval=HOURLY) as listener,
    ):
        changes = Changes()
        listener.subscribe(changes)
        await heard_first(changes, writer)
        settled = await settle_one(writer)
        await changes.arrival(PendingChange(SETTLED, settled))
        return sockets(database)


async def test_a_path_too_long_for_a_socket_moves_the_folder_under_the_temp_dir(
    too_long: tuple[Path, str], caplog: pytest.LogCaptureFixture
) -> None:
    database, temp = too_long
    located = wake_folder(str(database))
    assert located is not None
    assert located[1]
    assert Path(located[0]).parent == Path(temp)

    assert len(await sockets_as_a_hint_wakes(database)) == 1
    assert warnings(caplog) == []
    # The spare folder goes with the last socket in it.
    assert os.listdir(temp) == []


async def test_a_spare_folder_removed_as_a_store_binds_in_it_is_made_again(
    too_long: tuple[Path, str], monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """Another process's last listener removes the spare folder between its making and
    this store's bind: the store makes it again and binds, with no warning."""
    database, _ = too_long
    located = wake_folder(str(database))
    assert located is not None
    real_lstat, removed = os.lstat, []

    def lstat_after_a_removal(path: Any, *args: Any, **kwargs: Any) -> os.stat_result:
        found = real_lstat(path, *args, **kwargs)
        if os.fspath(path) == located[0] and not removed:
            removed.append(path)
            os.rmdir(path)  # as the other process's last listener does, once
        return found

    monkeypatch.setattr(os, "lstat", lstat_after_a_removal)
    assert len(await sockets_as_a_hint_wakes(database)) == 1
    assert removed
    assert warnings(caplog) == []


async def test_a_path_too_long_even_under_the_temp_dir_leaves_the_store_polling(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    deep = tmp_path / ("d" * 90)
    deep.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(deep))
    database = deep / "pending.db"
    async with SQLiteStore(database) as writer:
        await _polls_with_one_warning(database, writer, caplog, "too long")


async def _polls_with_one_warning(
    database: Path, writer: SQLiteStore, caplog: pytest.LogCaptureFixture, complaint: str
) -> None:
    """A listener on ``database`` hears two of ``writer``'s settles by polling, across two
    runs of its feed, and the log holds one WARNING that mentions ``complaint``."""
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        async with SQLiteStore(database, backstop_interval=0.02) as listener:
            for _ in range(2):
                changes = Changes()
                unsubscribe = listener.subscribe(changes)
                await changes.arrival(PendingChange(SETTLED, await settle_one(writer)))
                unsubscribe()
    (warning,) = warnings(caplog)
    assert complaint in warning
    assert "polling" in warning


@contextmanager
def unwritable(folder: Path) -> Iterator[None]:
    """``folder``, made so that this process cannot create a file in it."""
    folder.mkdir()
    if os.geteuid() != 0:
        folder.chmod(0o555)
        try:
            yield
        finally:
            folder.chmod(0o755)
        return
    # Root writes through any mode bits; an immutable folder refuses even root.
    chattr = shutil.which("chattr")
    made = chattr and subprocess.run([chattr, "+i", str(folder)], capture_output=True)
    if not made or made.returncode != 0:
        pytest.skip("run as root on a file system that cannot make a folder immutable")
    try:
        yield
    finally:
        subprocess.run([chattr, "-i", str(folder)], check=True)


def open_sockets() -> int:
    """How many sockets this process holds open."""
    found = 0
    for fd in os.listdir("/proc/self/fd"):
        # OSError: the descriptor listdir itself used, closed by now.
        with contextlib.suppress(OSError):
            found += os.readlink(f"/proc/self/fd/{fd}").startswith("socket:")
    return found


needs_proc = pytest.mark.skipif(
    not os.path.isdir("/proc/self/fd"), reason="counts descriptors in /proc"
)


@needs_proc
async def test_a_write_still_committing_as_the_store_closes_leaves_no_socket_open(
    db_path: Path, answerer: SQLiteStore
) -> None:
    # Someone listens on the file, so that the commit rings a socket.
    answerer.subscribe(lambda change: None)
    assert len(sockets(db_path)) == 1
    store = SQLiteStore(db_path, backstop_interval=HOURLY)
    await store.open()
    before = open_sockets()

    # The insert queues its write first, and close() waits for it to commit and ring.
    await asyncio.gather(store.insert(make_request()), store.close())

    assert open_sockets() == before


@needs_proc
async def test_a_feed_stopped_before_its_first_poll_leaves_no_socket_bound(
    db_path: Path, answerer: SQLiteStore
) -> None:
    store = SQLiteStore(db_path, backstop_interval=HOURLY)
    await store.open()
    before = open_sockets()

    unsubscribe = store.subscribe(lambda change: None)
    (feed,) = [task for task in asyncio.all_tasks() if "sqlite feed" in task.get_name()]
    assert len(sockets(db_path)) == 1
    # The last listener leaves before the feed's task has run a step: it is cancelled
    # before its first poll, with the socket already bound.
    unsubscribe()
    await asyncio.wait((feed,))

    assert sockets(db_path) == []
    assert open_sockets() == before
    await store.close()


async def test_a_socket_bound_after_a_listing_the_store_kept_is_still_woken(
    tmp_path: Path,
) -> None:
    """The store keeps the wake folder's listing while the folder stays unchanged: one
    bound later changes the folder, and the next commit's hint reaches it."""
    path = tmp_path / "kit.db"
    async with SQLiteStore(path, backstop_interval=HOURLY) as store:
        store.subscribe(lambda change: None)  # binds this store's socket: the folder exists
        await store.insert(make_request())
        located = wake_folder(str(path))
        assert located is not None
        folder = Path(located[0])
        # Changed long ago: the next commit's listing is kept.
        os.utime(folder, ns=(0, 0))
        await store.insert(make_request())
        with contextlib.closing(socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)) as late:
            late.bind(str(folder / f"{os.getpid()}-0badcafe.sock"))
            late.setblocking(False)
            await store.insert(make_request())

            assert late.recv(64) == b"!"
