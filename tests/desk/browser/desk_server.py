"""The demo desk served by uvicorn on a free port, from a thread with its own event loop.

The browser tests drive the page with Playwright's synchronous API from the main thread;
the desk, its agent and its stores live on the server thread's loop. :meth:`DeskServer.run`
runs a coroutine there (to open a room, or to put a request in front of the person the way
an agent would) and returns its result.
"""

from __future__ import annotations

import asyncio
import itertools
import socket
import threading
from collections.abc import Coroutine
from concurrent.futures import Future
from pathlib import Path
from typing import Any, TypeVar

import uvicorn

from roomkit.desk.demo import DEMO_PERSON, Demo, build_demo
from roomkit.desk.demo_console import Console

T = TypeVar("T")

_rooms = itertools.count(1)


class DeskServer:
    """The demo (SQLite stores in ``data_dir``) on ``127.0.0.1:<free port>``.

    Args:
        data_dir: the demo's data folder.
    """

    def __init__(self, data_dir: Path) -> None:
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, name="desk-server")
        self._thread.start()
        # The console's lines are kept (``demo.console.lines``), not printed: a notice the
        # notifier sends after a test ended would land among pytest's own output.
        quiet = Console(say=lambda line: None)
        self.demo: Demo = self.run(build_demo(data_dir, console=quiet))
        self._socket = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._socket.bind(("127.0.0.1", 0))
        # Listening before uvicorn starts: early connections queue until it accepts them.
        self._socket.listen(128)
        self.url = f"http://127.0.0.1:{self._socket.getsockname()[1]}"
        """The desk's base URL."""
        config = uvicorn.Config(self.demo.app, log_config=None, lifespan="on")
        self._server = uvicorn.Server(config)
        self._serving: Future[None] = asyncio.run_coroutine_threadsafe(
            self._server.serve(sockets=[self._socket]), self.loop
        )

    def run(self, coroutine: Coroutine[Any, Any, T], *, timeout: float = 30) -> T:
        """Run ``coroutine`` on the server's loop and return its result."""
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop).result(timeout)

    def submit(self, coroutine: Coroutine[Any, Any, T]) -> Future[T]:
        """Start ``coroutine`` on the server's loop; its result comes in the future."""
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop)

    def token(self, actor_id: str, *, admin: bool = False) -> str:
        """A desk token for ``actor_id``."""
        return self.demo.token_for(actor_id, admin=admin)

    def new_room(self, person: str = DEMO_PERSON, *, name: str = "room") -> str:
        """A fresh room (``<name>-<n>``) with the agent, the chat and ``person`` in it."""
        room_id = f"{name}-{next(_rooms)}"
        self.run(self.demo.open_room(room_id, person))
        return room_id

    def link(self, room_id: str, person: str = DEMO_PERSON) -> str:
        """The page's address for ``person`` in ``room_id`` (the token in the fragment)."""
        return f"{self.url}/#token={self.token(person)}&room={room_id}"

    def withdraw_open(self, room_id: str) -> None:
        """Withdraw the questions still open in ``room_id``."""

        async def withdraw() -> None:
            handler = self.demo.handler
            for request in await handler.list_pending(room_id=room_id):
                await handler.arelease(request.pending_id)

        self.run(withdraw())

    def close(self) -> None:
        """Stop the server, close the demo, stop the loop."""
        self._server.should_exit = True
        try:
            self._serving.result(30)
        finally:
            self.run(self.demo.aclose())
            self.loop.call_soon_threadsafe(self.loop.stop)
            self._thread.join(30)
            self.loop.close()
            self._socket.close()
