"""Serving an ASGI app with uvicorn from a command: the socket, the server, the link to open.

``roomkit desk``, ``roomkit mcp --http`` and the demo bind their socket first (so a port in
use is one line saying what to do, and a browser opened at once waits in the backlog), run
uvicorn on it until Ctrl-C or SIGTERM, and say where they listen once they do (the desk
prints its sign-in link). A stop waits at most :data:`SHUTDOWN_GRACE` seconds for the
connections still open (a WebSocket client, an upload still arriving) to finish; then it
closes them and the process exits. A connection whose request head is not in within
:data:`~roomkit._heads.HEAD_TIMEOUT` seconds (or the ``head_timeout`` given) is closed
(:mod:`roomkit._heads`). It lives beside the desk rather than in it, so that a command
serving something else loads no part of the desk. Needs uvicorn (the ``desk`` or ``mcp``
extra).
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import ipaddress
import signal
import socket
import threading
from collections.abc import Callable, Iterator
from types import FrameType

import uvicorn

from roomkit._heads import HEAD_TIMEOUT, head_timeout_protocol
from roomkit._interrupts import Interrupts, handling_signals, watched

__all__ = [
    "HEAD_TIMEOUT",
    "SHUTDOWN_GRACE",
    "Interrupts",
    "Server",
    "listen",
    "listen_address",
    "port_problem",
    "sign_in_link",
]


MAX_PORT = 65535
SHUTDOWN_GRACE = 5
"""Seconds a stop (Ctrl-C, SIGTERM) waits for open connections to finish, unless the
configuration passed to :class:`Server` sets ``timeout_graceful_shutdown``; past it, their
tasks are cancelled and the connections closed."""


def port_problem(port: int, *, option: str = "--port") -> str | None:
    """What is wrong with ``port`` as a port to listen on, ``None`` when nothing is.

    ``0`` is fine: it asks for any free port.
    """
    if 0 <= port <= MAX_PORT:
        return None
    return f"{option} takes a port from 1 to {MAX_PORT} (or 0 for any free one), got {port}"


def listen_address(host: str, *, port_option: str = "--port") -> str:
    """The address ``--host`` names to listen on: an IPv6 literal in brackets (``[::1]``,
    as in a URL) without them, any other address or a name as given.

    Checked before anything starts, so a wrong value is one line naming ``--host``, not the
    resolver's "Name or service not known" once the store is open.

    Args:
        host: the value of ``--host``.
        port_option: the option that takes the port, which the message points to.

    Raises:
        ValueError: ``host`` is empty, brackets something other than an IPv6 address, or
            is a name this machine does not resolve (the message names ``--host``).
    """
    shown = repr(host if len(host) <= 80 else host[:77] + "...")
    usage = (
        "--host takes an address or a host name to listen on, without scheme or port, such "
        f"as 127.0.0.1, 0.0.0.0, [::1] or desk.example.com (the port is {port_option}); "
        f"got {shown}"
    )
    address = host
    if host.startswith("[") and host.endswith("]"):
        address = host[1:-1]
        try:
            ipaddress.IPv6Address(address)
        except ValueError:
            raise ValueError(usage) from None
    if not address.strip() or "[" in address or "]" in address:
        raise ValueError(usage)
    try:
        # Resolved as :func:`listen` binds it: the family its form picks, for a passive socket.
        socket.getaddrinfo(
            address, None, family=_family(address), type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
        )
    except (OSError, ValueError) as error:  # ValueError: a NUL; UnicodeError: a long label
        reason = getattr(error, "strerror", None) or str(error)
        raise ValueError(
            f"--host {shown} is no address this machine can listen on ({reason}): pass an "
            "address, such as 127.0.0.1, 0.0.0.0 or [::1], or a name that resolves here"
        ) from None
    return address


def listen(host: str, port: int, *, hint: str = "pass --port") -> socket.socket:
    """A listening, non-blocking socket on ``host:port`` (0: any free port).

    Raises:
        ValueError: ``port`` is no port number (out of 0-65535).
        OSError: the address cannot be used. For a port in use, ``strerror`` says so and
            what to do: ``port 8765 is in use: pass --port``.
    """
    problem = port_problem(port)
    if problem is not None:
        raise ValueError(problem)
    family = _family(host)
    # TCP named by its number: asyncio sets TCP_NODELAY only on such a socket's connections,
    # and without it each answer after a connection's first waits ~40 ms for a delayed ACK.
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        # Listening before uvicorn starts: a browser opened at once waits in the backlog.
        sock.listen(128)
        sock.setblocking(False)
    except OSError as error:
        sock.close()
        if error.errno == errno.EADDRINUSE:
            raise OSError(error.errno, f"port {port} is in use: {hint}") from None
        raise
    return sock


def _family(host: str) -> socket.AddressFamily:
    """The address family :func:`listen` binds ``host`` with: IPv6 for a literal of it."""
    return socket.AF_INET6 if ":" in host else socket.AF_INET


def sign_in_link(host: str, port: int, token: str) -> str:
    """The page's address on ``host:port`` with ``token`` in the fragment.

    A desk listening on every address (``0.0.0.0``, ``::``) is opened on the loopback.
    """
    if host in ("", "0.0.0.0"):
        host = "127.0.0.1"
    elif host == "::":
        host = "::1"
    shown = f"[{host}]" if ":" in host else host
    # The token travels in the fragment, which the browser never sends to the server.
    return f"http://{shown}:{port}/#token={token}"


class Server(uvicorn.Server):
    """uvicorn's server, saying when it is up, and stopped by Ctrl-C or SIGTERM without the
    signal being raised again afterwards, so the caller closes its stores before it exits.
    Once it has stopped, each signal gets back the handler the process had before (see
    :func:`~roomkit._interrupts.handling_signals` for the one kind it cannot see).

    A stop waits for open connections at most ``timeout_graceful_shutdown`` seconds
    (:data:`SHUTDOWN_GRACE` when the configuration leaves it unset), then cuts off those
    still open: a client that holds its connection open cannot hold up the exit.

    A request's head (its request line and headers) has ``head_timeout`` seconds to arrive
    whole, from the connection opening or the previous response ending; past it the
    connection is closed (a client that opens connections and sends nothing, or its headers
    a byte at a time, holds none for long).

    Args:
        config: uvicorn's configuration; its ``http`` is uvicorn's h11 or httptools protocol
            (``"auto"``, the default, picks one of them).
        on_started: called once the server accepts connections.
        head_timeout: seconds a request's head has to arrive whole.

    Raises:
        ValueError: ``head_timeout`` is not a positive number, or ``config.http`` is another
            protocol than h11 or httptools.
    """

    def __init__(
        self,
        config: uvicorn.Config,
        *,
        on_started: Callable[[], None],
        head_timeout: float = HEAD_TIMEOUT,
    ) -> None:
        if config.timeout_graceful_shutdown is None:
            config.timeout_graceful_shutdown = SHUTDOWN_GRACE
        config.http = head_timeout_protocol(config.http, head_timeout)
        super().__init__(config)
        self._on_started = on_started
        self.serving = False
        """Whether the server got as far as serving (and said so through ``on_started``)."""
        self.interrupted = False
        """Whether Ctrl-C (SIGINT) stopped the server before it was serving: the command
        was interrupted as it started, and exits as interrupted (130), not as stopped."""

    def handle_exit(self, sig: int, frame: FrameType | None) -> None:
        if sig == signal.SIGINT and not self.serving:
            self.interrupted = True
        super().handle_exit(sig, frame)

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        await super().shutdown(sockets=sockets)
        # Past the grace period: whatever is still connected is cut off, not waited for.
        for connection in list(self.server_state.connections):
            transport = getattr(connection, "transport", None)
            if isinstance(transport, asyncio.Transport):
                transport.abort()

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        await super().startup(sockets=sockets)
        if not self.should_exit:
            self.serving = True
            self._on_started()

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        # A command's Interrupts already hands Ctrl-C and SIGTERM to this server.
        if threading.current_thread() is not threading.main_thread() or watched(self):
            yield
            return
        loop = asyncio.get_running_loop()
        with handling_signals(loop, lambda sig: self.handle_exit(sig, None)):
            yield
