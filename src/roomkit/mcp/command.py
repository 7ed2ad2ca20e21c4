"""``roomkit mcp``: serve :class:`HumanInputMCPServer` over stdio or streamable HTTP.

::

    roomkit mcp --store sqlite:///kit.db [--actor NAME] [--room mcp] [--timeout 300]
    roomkit mcp --store sqlite:///kit.db --http 8766 [--host 127.0.0.1]

The store is the desk's (``roomkit desk --store`` with the same URL): a question asked here
is shown and answered there. A memory store is refused, since no desk could see it. The
store is read once before the server starts: one that cannot be reached stops the command
with one line.

Over stdio the protocol owns stdout: every log line, warning and notice goes to stderr.
Over HTTP (bound to the loopback unless ``--host`` says otherwise) every request carries a
desk token (``Authorization: Bearer``, from ``roomkit token ACTOR`` with the same
``--data-dir``); the token's subject is the actor asked, and a revoked token is refused.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import sys
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from roomkit.core.exceptions import DeskAuthError, StoreError, StoreUnavailableError
from roomkit.mcp.server import ACTOR_SCOPE_KEY, HumanInputMCPServer
from roomkit.tools.human_input import HumanInputHandler

__all__ = ["bearer_app", "run_command"]

START_TIMEOUT = 10.0
"""Seconds the store has to answer the start-up read."""
_PROBE = "roomkit-mcp-start-up-check"

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]


def run_command(args: argparse.Namespace) -> int:
    """Run ``roomkit mcp`` until its client leaves (stdio) or Ctrl-C (HTTP).

    Raises:
        ValueError: the options are wrong (the message says how); nothing was started.
        StoreError: the store cannot be reached.
        OSError: the HTTP port cannot be used.
        ImportError: the ``mcp`` extra (or the store's) is not installed.
    """
    # Before anything can log: stdout belongs to the protocol.
    logging.basicConfig(stream=sys.stderr, level=logging.WARNING, force=True)
    from roomkit.desk.stores import close_stores, open_stores
    from roomkit.tools.human_input.stores import StoreTrail, load_audit_keys

    if args.store == "memory":
        raise ValueError(
            "a memory store lives in this process only, where no desk sees its questions: "
            "pass the desk's store, e.g. --store sqlite:///kit.db"
        )
    keys = load_audit_keys(args.data_dir)  # the heads this process appends are signed
    pending_store, room_store = open_stores(args.store)
    trail = getattr(pending_store, "trail", None)
    if keys is not None and isinstance(trail, StoreTrail):
        trail.use_keys(keys)
    secret = _secret(args) if args.http is not None else None

    async def serve() -> None:
        handler = HumanInputHandler(store=pending_store)
        try:
            server = HumanInputMCPServer(
                handler, actor=args.actor, room=args.room, timeout=args.timeout
            )
            await _check_store(handler)
            if secret is None:
                await _serve_stdio(server)
            else:
                await _serve_http(server, secret, args.host, args.http)
        finally:
            await handler.close()
            await close_stores(pending_store, room_store)

    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(serve())
    return 0


def _secret(args: argparse.Namespace) -> bytes:
    from roomkit.desk.tokens import resolve_secret

    try:
        return resolve_secret(data_dir=args.data_dir)
    except (ValueError, OSError) as error:
        raise ValueError(f"No desk secret: {error}") from None


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

    async with stdio_server() as (read, write):
        await server.server.run(read, write, server.server.create_initialization_options())


async def _serve_http(server: HumanInputMCPServer, secret: bytes, host: str, port: int) -> None:
    import uvicorn

    from roomkit.desk.serving import Server, listen

    app = bearer_app(server, secret, host=host)
    sock = listen(host, port, hint="pass --http with another port")

    def started() -> None:
        print(f"roomkit mcp: serving http://{host}:{port}/mcp", file=sys.stderr, flush=True)

    config = uvicorn.Config(app, log_config=None, log_level="warning", server_header=False)
    with sock:
        await Server(config, on_started=started).serve(sockets=[sock])


def bearer_app(server: HumanInputMCPServer, secret: bytes, *, host: str = "127.0.0.1") -> ASGIApp:
    """The server's streamable-HTTP app behind the desk's bearer tokens.

    A request without a valid, unrevoked actor token gets a 401 and never reaches the MCP
    server; a valid one is served with the token's subject as the actor asked.
    """
    from roomkit.desk.auth import LinkLedger, TokenAuthenticator

    inner: ASGIApp = server.server.streamable_http_app(host=host)
    authenticator = TokenAuthenticator(secret)
    ledger = LinkLedger(server.handler.ledger)

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await inner(scope, receive, send)
            return
        refusal = await _refusal(scope, authenticator, ledger)
        if refusal is not None:
            status, message = refusal
            await _plain(send, status, message)
            return
        await inner(scope, receive, send)

    return app


async def _refusal(scope: Scope, authenticator: Any, ledger: Any) -> tuple[int, str] | None:
    """Why the request is refused (status, message), or ``None``; sets the actor on success."""
    header = dict(scope.get("headers") or ()).get(b"authorization", b"").decode("latin-1")
    scheme, _, token = header.partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        return 401, "Send a desk token: Authorization: Bearer <roomkit token ACTOR>"
    try:
        principal = await authenticator.authenticate(token.strip())
    except DeskAuthError:
        return 401, "The token is not valid: issue one with `roomkit token ACTOR`"
    if principal.request_id is not None:
        return 403, "An answer link answers one request; it cannot ask: use an actor token"
    try:
        refused = await ledger.refusal(principal)
    except StoreError:
        return 503, "The store cannot be reached to check the token"
    if refused is not None:
        return 401, refused
    scope[ACTOR_SCOPE_KEY] = principal.actor_id
    return None


async def _plain(send: Send, status: int, message: str) -> None:
    body = message.encode()
    headers = [(b"content-type", b"text/plain; charset=utf-8")]
    if status == 401:
        headers.append((b"www-authenticate", b'Bearer realm="roomkit"'))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})
