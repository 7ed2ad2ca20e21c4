"""A process that runs roomkit's serving code among its own, for the tests of stop signals.

    python -m tests.cli.stopping_peer EMBEDDED OWN

EMBEDDED is what it runs until Ctrl-C or SIGTERM: ``server`` (a roomkit ``Server``),
``command`` (an ``Interrupts`` watching a command that serves without a server, as
``roomkit notify`` does) or ``command-server`` (an ``Interrupts`` handing the signals to a
``Server``, as ``roomkit desk`` does). OWN is the SIGTERM handler the process installs before:
``python`` (``signal.signal``), ``loop`` (``loop.add_signal_handler``) or ``none``.

It prints ``serving`` once it serves; once stopped, ``cleaning up``, then it waits for a line
on stdin (its cleanup, held by the test), prints ``cleaned up`` and ``stopped``. With a
handler of its own, it then waits until that handler runs and prints ``own handler``.
"""

from __future__ import annotations

import asyncio
import signal
import sys
from typing import Any

import uvicorn

from roomkit._interrupts import Interrupts
from roomkit._serving import Server, listen


async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
    """An ASGI app no request reaches."""


async def cleanup() -> None:
    print("cleaning up", flush=True)
    await asyncio.to_thread(sys.stdin.readline)
    print("cleaned up", flush=True)


async def serve_server(interrupts: Interrupts | None) -> None:
    config = uvicorn.Config(app, lifespan="off", log_config=None, log_level="warning")
    with listen("127.0.0.1", 0) as sock:
        server = Server(config, on_started=lambda: print("serving", flush=True))
        if interrupts is not None:
            interrupts.server = server
        await server.serve(sockets=[sock])


async def serve_command(interrupts: Interrupts) -> None:
    stop = asyncio.Event()
    interrupts.serve(stop.set)
    print("serving", flush=True)
    await stop.wait()


async def main(embedded: str, own: str) -> None:
    loop = asyncio.get_running_loop()
    handled = asyncio.Event()
    if own == "python":
        signal.signal(signal.SIGTERM, lambda *_: loop.call_soon_threadsafe(handled.set))
    elif own == "loop":
        loop.add_signal_handler(signal.SIGTERM, handled.set)
    if embedded == "server":
        await serve_server(None)
        await cleanup()
    else:
        interrupts = Interrupts()
        with interrupts.watching():
            try:
                if embedded == "command":
                    await serve_command(interrupts)
                else:
                    await serve_server(interrupts)
            finally:
                await cleanup()
    print("stopped", flush=True)
    if own != "none":
        await handled.wait()
        print("own handler", flush=True)


if __name__ == "__main__":
    asyncio.run(main(*sys.argv[1:3]))
