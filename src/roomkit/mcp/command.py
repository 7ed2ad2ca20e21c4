"""``roomkit mcp``: serve :class:`HumanInputMCPServer` over stdio or streamable HTTP.

::

    roomkit mcp --store sqlite:///kit.db [--actor NAME] [--room mcp] [--timeout 300]
                [--max-open-calls 64]
    roomkit mcp --store sqlite:///kit.db --http 8766 [--host 127.0.0.1]
    roomkit mcp --store sqlite:///kit.db --hold 20 [--desk-url https://desk.example]

A client on the 2026-07-28 protocol has each round of a call held at most ``--hold`` seconds
(20 by default), then "still waiting" with a sealed state naming the wait, which any
``roomkit mcp`` on the store answers, after a restart too (:mod:`roomkit.mcp.waits`): the
states are sealed with a key derived from the desk's secret (``ROOMKIT_DESK_SECRET``, or
the key file in ``--data-dir``), which every process on the store shares; without one,
with a key of the process's own. With ``--desk-url``, the first "still waiting" of a call
also offers a client that takes URL-mode elicitations a single-use desk link answering it.

The store is the desk's (``roomkit desk --store`` with the same URL): a question asked here
is shown and answered there. A memory store is refused, since no desk could see it. The
store is read once before the server starts: one that cannot be reached stops the command
with one line.

Over stdio the protocol owns stdout: every log line, warning and notice goes to stderr.
Over HTTP (bound to the loopback unless ``--host`` says otherwise) every request carries a
person's desk token (``Authorization: Bearer``, from ``roomkit token ACTOR`` with the same
``--data-dir``), checked by the same gate as the desk's: the token's subject is the actor
asked; a revoked token, an answer link and a sign-in link are refused. A session belongs to
the person who opened it: anyone else's request on it is answered ``404 Session not
found``, as for a session that does not exist.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import sys
from collections.abc import Awaitable, Callable, MutableMapping
from typing import TYPE_CHECKING, Any

import mcp_types as types
from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp.server.auth.provider import AccessToken

from roomkit.auth.authenticator import TokenAuthenticator
from roomkit.auth.door import Turned, admit_session, bearer_token
from roomkit.auth.gate import CredentialGate
from roomkit.auth.ledger import LinkLedger
from roomkit.auth.names import check_actor_name
from roomkit.auth.tokens import KEY_FILE, SECRET_ENV, data_folder, resolve_secret
from roomkit.bodies import BodyRefusedError, BoundedBodies, json_rpc_refusal
from roomkit.core.exceptions import StoreUnavailableError
from roomkit.mcp.server import ACTOR_SCOPE_KEY, MAX_OPEN_CALLS, HumanInputMCPServer, check_room
from roomkit.mcp.waits import HOLD, state_key
from roomkit.models.clock import LONGEST_TIMEOUT
from roomkit.notify.links import AnswerLinks, desk_address
from roomkit.tools.human_input import HumanInputHandler

if TYPE_CHECKING:
    from roomkit._interrupts import Interrupts

__all__ = ["BearerApp", "bearer_app", "run_command"]

START_TIMEOUT = 10.0
"""Seconds the store has to answer the start-up read."""
_PROBE = "roomkit-mcp-start-up-check"
SESSION_ISSUER = "roomkit-desk"
"""Who vouches for the person a session is bound to, as the SDK's session owner says it."""

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]


def run_command(args: argparse.Namespace) -> int:
    """Run ``roomkit mcp`` until its client leaves (stdio) or Ctrl-C; the exit status.

    Ctrl-C once it serves stops it (0); Ctrl-C before, while its store is read or its
    server starts, interrupts it (130), with nothing printed.

    Raises:
        ValueError: the options are wrong (the message says how); nothing was started.
        StoreError: the store cannot be reached.
        OSError: the HTTP port cannot be used.
        ImportError: the ``mcp`` extra (or the store's) is not installed.
    """
    # Before anything can log: stdout belongs to the protocol.
    logging.basicConfig(stream=sys.stderr, level=logging.WARNING, force=True)
    from roomkit.stores import StoreTrail, close_stores, load_audit_keys, new_sqlite_file, open_url

    if args.store == "memory":
        raise ValueError(
            "a memory store lives in this process only, where no desk sees its questions: "
            "pass the desk's store, e.g. --store sqlite:///kit.db"
        )
    host = _check_options(args)
    keys = load_audit_keys(args.data_dir)  # the heads this process appends are signed
    new_file = new_sqlite_file(args.store)
    pending_store, room_store = open_url(args.store)
    trail = getattr(pending_store, "trail", None)
    if keys is not None and isinstance(trail, StoreTrail):
        trail.use_keys(keys)
    secret = _secret(args) if args.http is not None else None
    state_keys = _state_keys(args, secret)
    hold = getattr(args, "hold", HOLD)
    desk_url = getattr(args, "desk_url", None)
    links = None if desk_url is None else AnswerLinks(desk_url, _secret(args))

    from roomkit._interrupts import Interrupts

    interrupts = Interrupts()

    async def serve() -> None:
        handler = HumanInputHandler(store=pending_store)
        try:
            server = HumanInputMCPServer(
                handler,
                actor=args.actor,
                room=args.room,
                timeout=args.timeout,
                hold=hold,
                state_keys=state_keys,
                links=links,
                max_open_calls=getattr(args, "max_open_calls", MAX_OPEN_CALLS),
            )
            await _check_store(handler)
            if new_file is not None:
                print(
                    f"roomkit mcp: created a new store in {new_file}: its questions show on "
                    "a desk run with the same --store (roomkit desk --store "
                    f"sqlite:///{new_file})",
                    file=sys.stderr,
                    flush=True,
                )
            if secret is None:
                # Serving from here on: Ctrl-C stops it, as its client leaving does.
                interrupts.serve()
                await _serve_stdio(server)
            else:
                await _serve_http(server, secret, host, args.http, interrupts)
        finally:
            await handler.close()
            await close_stores(pending_store, room_store)

    # Ctrl-C before it serves (its store being read) interrupts it: 130; once it serves, 0.
    return interrupts.run(serve)


def _check_options(args: argparse.Namespace) -> str:
    """Refuse a wrong option before anything is opened, naming it; return the address
    ``--host`` names to serve HTTP on.

    Raises:
        ValueError: ``--http``, ``--timeout`` or ``--hold`` (each up to a century), or
            ``--max-open-calls`` is out of range, ``--host`` is no address to listen on
            (or a name that resolves to none), ``--room`` or ``--actor`` is not a room or
            an actor name, or ``--desk-url`` is not an http(s) URL a link can be made of (a
            host, a port from 1 to 65535, no fragment).
    """
    from roomkit._serving import listen_address, port_problem

    host = args.host
    if args.http is not None:
        problem = port_problem(args.http, option="--http")
        if problem is not None:
            raise ValueError(problem)
        # An IPv6 address in brackets (as in a URL) binds without them.
        host = listen_address(args.host, port_option="--http")
    for option, seconds in (("--timeout", args.timeout), ("--hold", getattr(args, "hold", HOLD))):
        if not 0 < seconds < float("inf"):
            raise ValueError(f"{option} takes a positive, finite number of seconds, got {seconds}")
        if seconds > LONGEST_TIMEOUT:
            # Refused here: every call would read the store's refusal of a timeout as its own
            # arguments', and the server refuses such a hold.
            raise ValueError(
                f"{option} takes at most {LONGEST_TIMEOUT:.0f} seconds (a century), got {seconds:g}"
            )
    calls = getattr(args, "max_open_calls", MAX_OPEN_CALLS)
    if calls < 1:
        raise ValueError(f"--max-open-calls takes a whole number of 1 or more, got {calls}")
    check_room(args.room, what="--room")
    if args.actor is not None:
        check_actor_name(args.actor, what="--actor")
    desk_url = getattr(args, "desk_url", None)
    if desk_url is not None and not desk_url.startswith(("http://", "https://")):
        raise ValueError(
            f"--desk-url takes the desk's address, an http:// or https:// URL, got {desk_url!r}"
        )
    if desk_url is not None:
        desk_address(desk_url, "--desk-url")
    return str(host)


def _secret(args: argparse.Namespace) -> bytes:
    try:
        return resolve_secret(data_dir=args.data_dir)
    except (ValueError, OSError) as error:
        raise ValueError(f"Cannot use the desk secret: {error}") from None


def _state_keys(args: argparse.Namespace, secret: bytes | None) -> list[bytes] | None:
    """The keys that seal request states: from the desk's secret when there is one (the
    HTTP tokens', ``ROOMKIT_DESK_SECRET``, or an existing key file in ``--data-dir``), so
    every process on the store reads every other's; else this process's own (a state then
    outlives no restart), without creating a key file for it."""
    if secret is None:
        folder = data_folder(args.data_dir)
        if not os.environ.get(SECRET_ENV) and not (folder / KEY_FILE).exists():
            return None
        secret = _secret(args)
    return [state_key(secret)]


async def _check_store(handler: HumanInputHandler) -> None:
    try:
        async with asyncio.timeout(START_TIMEOUT):
            await handler.get_request(_PROBE)
    except TimeoutError:
        raise StoreUnavailableError(
            f"the store did not answer within {START_TIMEOUT:g} s"
        ) from None


async def _serve_stdio(server: HumanInputMCPServer) -> None:
    from mcp.server.stdio import stdio_server

    from roomkit.mcp._lines import CheckedLines, client_stdin
    from roomkit.mcp._unreadable import AnsweringReads

    with client_stdin() as stdin:
        # Each line is checked as an HTTP body is: the SDK's parser takes a key given
        # twice as its last value.
        lines = CheckedLines(stdin)
        async with stdio_server(stdin=lines) as (read, write):  # type: ignore[arg-type]  # reads lines only
            lines.answer_on(write)
            # The SDK drops a line it cannot parse unanswered: its client would wait forever.
            reads = AnsweringReads(read, write)
            await server.server.run(reads, write, server.server.create_initialization_options())


async def _serve_http(
    server: HumanInputMCPServer, secret: bytes, host: str, port: int, interrupts: Interrupts
) -> None:
    import uvicorn

    from roomkit._serving import Server, listen

    app = bearer_app(server, secret, host=host)
    sock = listen(host, port, hint="pass --http with another port")
    # The port bound: the one asked for, or the one the system picked for --http 0.
    bound = sock.getsockname()[1]

    def started() -> None:
        shown = f"[{host}]" if ":" in host else host
        print(f"roomkit mcp: serving http://{shown}:{bound}/mcp", file=sys.stderr, flush=True)

    config = uvicorn.Config(app, log_config=None, log_level="warning", server_header=False)
    with sock:
        http = Server(config, on_started=started)
        interrupts.server = http
        await http.serve(sockets=[sock])


def bearer_app(server: HumanInputMCPServer, secret: bytes, *, host: str = "127.0.0.1") -> BearerApp:
    """The server's streamable-HTTP app behind the desk's bearer tokens (see :class:`BearerApp`)."""
    return BearerApp(server, secret, host=host)


class BearerApp:
    """The server's streamable-HTTP app behind the desk's tokens, an ASGI app.

    Each request's ``Authorization: Bearer`` token goes through the one credential gate
    (:class:`~roomkit.auth.gate.CredentialGate`) for a person's session
    (:attr:`~roomkit.auth.gate.Use.SESSION`): a request without a valid, unrevoked person's
    token gets a 401 (an answer link, a sign-in link, any credential that is not a person's
    token among them, each told what it is for) and never reaches the MCP server; a valid
    one is served with the token's subject as the actor asked.

    A session belongs to the person who opened it: the SDK's session manager compares the
    person of every later request on it with theirs, and answers anyone else as it answers
    an unknown session, ``404 Session not found``, so that a session id leaks nothing and
    nobody else can cancel a call on it or end it.

    Args:
        server: the MCP server to serve.
        secret: the desk's secret, which signed the tokens.
        host: the address served (the SDK's DNS-rebinding guard allows it).
    """

    def __init__(self, server: HumanInputMCPServer, secret: bytes, *, host: str) -> None:
        self.sdk_app: Any = server.server.streamable_http_app(host=host)
        """The SDK's Starlette app."""
        # Bodies are checked before the SDK parses them: 413 / 400 as JSON-RPC errors.
        self.inner: Any = BoundedBodies(self.sdk_app, refusal=_refusal, check=_no_batch)
        """The SDK's app behind the body limits: what an admitted request reaches."""
        self.gate = CredentialGate(TokenAuthenticator(secret), LinkLedger(server.handler.ledger))

    @property
    def routes(self) -> list[Any]:
        """The SDK app's routes: every path this app serves."""
        return list(self.sdk_app.routes)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            turned = await self._admit(scope)
            if turned is not None:
                await _plain(send, turned.status, turned.message)
                return
        await self.inner(scope, receive, send)

    async def _admit(self, scope: Scope) -> Turned | None:
        """Why the request is refused, or ``None`` once its person is set on the scope."""
        principal = await admit_session(self.gate, bearer_token(scope.get("headers")))
        if isinstance(principal, Turned):
            return principal
        scope[ACTOR_SCOPE_KEY] = principal.actor_id
        # The SDK binds a session to the user that opened it, and refuses it to anyone else.
        person = AccessToken(
            token=principal.actor_id,
            client_id=principal.actor_id,
            scopes=[],
            subject=principal.actor_id,
            claims={"iss": SESSION_ISSUER},
        )
        scope["user"] = AuthenticatedUser(person)
        return None


class _BatchRefusedError(BodyRefusedError):
    """A JSON-RPC batch: an invalid request, since MCP has none."""


def _no_batch(message: Any) -> None:
    """Refuse a JSON-RPC batch, which MCP removed in its 2025-06-18 revision: the SDK would
    answer one with a page of its validation errors.

    Raises:
        BodyRefusedError: ``message`` is a JSON array.
    """
    if isinstance(message, list):
        raise _BatchRefusedError(
            "A JSON-RPC batch (a JSON array) is not taken: MCP has no batches since its "
            "2025-06-18 revision; send each message as one JSON object in a POST of its own"
        )


def _refusal(error: BodyRefusedError) -> dict[str, Any]:
    """A refused body's JSON-RPC error: a batch is an invalid request, the rest as
    :func:`~roomkit.bodies.json_rpc_refusal` says."""
    answer = json_rpc_refusal(error)
    if isinstance(error, _BatchRefusedError):
        answer["error"]["code"] = types.INVALID_REQUEST
    return answer


async def _plain(send: Send, status: int, message: str) -> None:
    body = message.encode()
    headers = [(b"content-type", b"text/plain; charset=utf-8")]
    if status == 401:
        headers.append((b"www-authenticate", b'Bearer realm="roomkit"'))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})
