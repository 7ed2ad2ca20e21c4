"""An ASGI app served by uvicorn on ``127.0.0.1:<free port>``, on an event loop of its own in
a thread, for tests that drive it from synchronous code (a browser through Playwright)."""

from __future__ import annotations

import asyncio
import socket
import threading
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

import uvicorn
from fastapi import FastAPI

from roomkit.tools.human_input import HumanInputHandler

T = TypeVar("T")


Build = Callable[[str], Coroutine[Any, Any, tuple[FastAPI, HumanInputHandler]]]
"""``build(url)`` makes the app to serve at ``url`` and the handler behind it, on the app's
loop."""


class ThreadedApp:
    """The app ``build`` makes, served until :meth:`close`; ``cleanups`` (coroutine
    functions) run on the app's loop once it stops serving, the last added first."""

    def __init__(self, build: Build) -> None:
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, name="app-server")
        self._thread.start()
        self.cleanups: list[Callable[[], Coroutine[Any, Any, object]]] = []
        listening = socket.socket()
        listening.bind(("127.0.0.1", 0))
        listening.listen(64)
        self.url = f"http://127.0.0.1:{listening.getsockname()[1]}"
        self.app, self.handler = self.run(build(self.url))
        self.server = uvicorn.Server(uvicorn.Config(self.app, log_config=None, lifespan="on"))
        self._serving = asyncio.run_coroutine_threadsafe(
            self.server.serve(sockets=[listening]), self.loop
        )

    def run(self, coroutine: Coroutine[Any, Any, T]) -> T:
        """Run ``coroutine`` on the app's loop; its result."""
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop).result(30)

    def close(self) -> None:
        """Stop serving, run the cleanups, then stop the loop and its thread."""
        self.server.should_exit = True
        try:
            self._serving.result(30)
            for cleanup in reversed(self.cleanups):
                self.run(cleanup())
        finally:
            self.loop.call_soon_threadsafe(self.loop.stop)
            self._thread.join(30)
            self.loop.close()
