"""The ``roomkit`` command: serve the answer desk, issue tokens, answer from a terminal.

::

    roomkit desk [--host 127.0.0.1] [--port 8765] [--store memory|sqlite:///x.db|redis://...|postgresql://...]
                 [--log-format text|json] [--sign-in-ttl SECONDS] [--notify notify.toml]
    roomkit notify --store sqlite:///x.db|redis://...|postgresql://... --config notify.toml
    roomkit token ACTOR [--admin] [--ttl SECONDS]
    roomkit revoke TOKEN | --actor ACTOR [--store sqlite:///x.db|redis://...]
    roomkit pending list [--room ROOM] [--json]
    roomkit pending show ID
    roomkit pending answer ID ANSWER
    roomkit pending reject ID [--reason TEXT]
    roomkit pending approve ID | edit ID ARGUMENTS_JSON | respond ID TEXT
    roomkit mcp --store sqlite:///x.db|redis://... [--actor NAME] [--room mcp] [--http PORT]
    roomkit audit export --store URL [--since ISO] [--room ID]
    roomkit audit verify --store URL
    roomkit audit checkpoint --store URL [--adopt]
    roomkit audit key [--rotate]

``desk`` checks its store before it starts and prints a sign-in link once it listens: the
page signs in with it once, as an admin, within ``--sign-in-ttl`` seconds (15 minutes).
``desk``, ``token`` and ``revoke`` share the desk's secret (``ROOMKIT_DESK_SECRET``, or the
key file in ``--data-dir``); ``revoke`` writes to the desk's store, where every desk process
reads it. ``desk --notify`` runs a notifier from a TOML file in the desk (with Slack's
clicks, when the file has a ``[slack]`` table); ``notify`` runs one in a process of its own
until SIGTERM or Ctrl-C (:mod:`roomkit.notify.config` describes the file). The ``pending``
commands talk to a running desk (``--url``) with a token (``--token`` or ``ROOMKIT_TOKEN``).
The ``audit`` commands read and sign the request histories of a durable store, with the audit
key of ``ROOMKIT_AUDIT_KEY`` or of ``audit.key`` in ``--data-dir`` (:mod:`roomkit._audit`).
A failure prints one line on stderr and exits 1; a command used wrongly exits 2.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import ipaddress
import math
import os
import sys
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from roomkit import _terminal as pending_commands
from roomkit._audit import audit_keys, use_audit_keys
from roomkit._notify_command import add_notify_parser, notify_config
from roomkit._terminal import TOKEN_ENV
from roomkit._terminal import Failure as _Failure
from roomkit._terminal import answer_body as answer_body
from roomkit._terminal import printable as _printable
from roomkit.auth.tokens import DEFAULT_DATA_DIR, DEFAULT_TOKEN_TTL, SECRET_ENV
from roomkit.models.clock import spoken_duration

if TYPE_CHECKING:
    from roomkit.core.store import RoomStore
    from roomkit.tools.human_input.stores import DurableStore, PendingStore

__all__ = ["main"]

DEFAULT_URL = "http://127.0.0.1:8765"
LINK_ACTOR = "admin"
"""Whom the sign-in link ``roomkit desk`` prints speaks for (an admin: it sees everything)."""
SIGN_IN_TTL = 900.0
"""Seconds the printed sign-in link may be opened in, by default: 15 minutes."""
_KIND_NAMES = {"actor": "token", "answer": "answer link", "sign-in": "sign-in link"}
"""How ``roomkit revoke`` names what it revoked, by its kind."""


# -- desk and token ----------------------------------------------------------------------------


def _serve(args: argparse.Namespace) -> int:
    import uvicorn

    from roomkit.auth.tokens import SESSION_TTL, issue_sign_in_link
    from roomkit.core.exceptions import StoreError
    from roomkit.core.framework import RoomKit
    from roomkit.desk.app import create_desk_app
    from roomkit.desk.limits import DeskLimits
    from roomkit.desk.serving import Server, listen, port_problem, sign_in_link
    from roomkit.desk.startup import check_stores
    from roomkit.desk.stores import close_stores
    from roomkit.notify.ladders import following
    from roomkit.tools.human_input import HumanInputHandler
    from roomkit.tools.human_input.stores import checkpointing

    _check_ttl("--sign-in-ttl", args.sign_in_ttl)
    problem = port_problem(args.port)
    if problem is not None:
        raise _Failure(problem, 2)
    config = None if args.notify is None else notify_config(args.notify)
    new_key = _key_is_new(args.data_dir)
    secret = _secret(args.data_dir)
    keys = audit_keys(args.data_dir)
    if args.log_format == "json":
        from roomkit.desk.logs import log_as_json

        try:
            log_as_json(args.log_level)
        except ValueError as error:
            raise _Failure(str(error), 2) from None
    pending_store, room_store = _open_stores(args.store)
    trail = use_audit_keys(pending_store, keys)

    async def serve() -> None:
        try:
            kit = RoomKit(store=room_store)
            handler = HumanInputHandler(store=pending_store)
            notifier = None if config is None else config.notifier(handler, link_secret=secret)
            try:
                app = create_desk_app(
                    kit,
                    handler=handler,
                    secret=secret,
                    notifier=notifier,
                    allowed_origins=args.allowed_origin or None,
                    allowed_hosts=_allowed_hosts(args),
                )
            except (TypeError, ValueError) as error:
                raise _Failure(str(error), 2) from None
            try:
                await check_stores(kit, handler)
                sock = listen(args.host, args.port)
            except StoreError as error:
                raise _Failure(f"Cannot start the desk: {error}") from None
            except OSError as error:
                raise _Failure(f"Cannot start the desk: {error.strerror or error}") from None
            port = sock.getsockname()[1]
            token = issue_sign_in_link(secret, LINK_ACTOR, admin=True, ttl=args.sign_in_ttl)
            link = sign_in_link(args.host, port, token)

            def started() -> None:
                print(
                    f"Open {link}\n  (signs one browser in as admin, who sees and answers "
                    f"everything, for {SESSION_TTL / 3600:g} hours; the link works once, within "
                    f"{spoken_duration(args.sign_in_ttl)}. `roomkit token ACTOR` makes a token "
                    "for a person)",
                    flush=True,
                )
                if new_key is not None:
                    print(
                        f"Created the desk's key in {new_key}: tokens from `roomkit token` "
                        f"work here when it runs with --data-dir {_quoted(new_key)}",
                        flush=True,
                    )

            server_config = uvicorn.Config(
                app,
                host=args.host,
                port=port,
                ws_max_size=DeskLimits().max_frame,
                # Frames are small JSON: compressing them costs more CPU than it saves, and
                # compression next to secrets is a risk not worth taking.
                ws_per_message_deflate=False,
                log_level=args.log_level,
                # JSON lines come from the root logger's formatter; uvicorn's own would differ.
                log_config=None if args.log_format == "json" else uvicorn.config.LOGGING_CONFIG,
                server_header=False,
            )
            with sock:
                async with (
                    checkpointing(trail),
                    following(handler, None if config is None else config.ladder),
                ):
                    await Server(server_config, on_started=started).serve(sockets=[sock])
        finally:
            await close_stores(pending_store, room_store)

    # Ctrl-C is how a served desk stops: by then the server has shut down cleanly.
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(serve())
    return 0


def _open_stores(url: str) -> tuple[PendingStore | DurableStore, RoomStore]:
    """The pending-request and room stores ``--store`` names; a wrong URL exits 2."""
    from roomkit.desk.stores import open_stores

    try:
        return open_stores(url)
    except (ValueError, ImportError) as error:
        raise _Failure(str(error), 2) from None


def _secret(data_dir: Path) -> bytes:
    from roomkit.auth.tokens import resolve_secret

    try:
        return resolve_secret(data_dir=data_dir)
    except (ValueError, OSError) as error:
        raise _Failure(f"No desk secret: {error}") from None


def _default_data_dir() -> Path:
    return Path(os.environ.get("ROOMKIT_DESK_DATA", DEFAULT_DATA_DIR))


def _key_is_new(data_dir: Path) -> Path | None:
    """The folder the desk is about to create its key in, ``None`` when it has one already
    (or takes ``ROOMKIT_DESK_SECRET``)."""
    from roomkit.auth.tokens import KEY_FILE

    if os.environ.get(SECRET_ENV) or (data_dir / KEY_FILE).exists():
        return None
    return data_dir


def _existing_secret(data_dir: Path) -> bytes:
    """The secret of a desk that exists: ``ROOMKIT_DESK_SECRET``, or the key in ``data_dir``,
    which must be a folder already (a token signed with a brand-new key opens no desk)."""
    if not os.environ.get(SECRET_ENV) and not data_dir.is_dir():
        raise _Failure(
            f"The folder {data_dir} does not exist, so it holds no desk's key: pass the "
            "--data-dir the desk runs with (or set ROOMKIT_DESK_SECRET to its secret)",
            2,
        )
    return _secret(data_dir)


def _quoted(path: Path) -> str:
    import shlex

    return shlex.quote(str(path))


def _check_ttl(option: str, ttl: float, about: str = "") -> None:
    if not (math.isfinite(ttl) and ttl > 0):
        raise _Failure(f"{option} must be a positive number of seconds{about}", 2)


def _token(args: argparse.Namespace) -> int:
    from roomkit.auth.names import check_actor_name
    from roomkit.auth.tokens import issue_token

    _check_ttl(
        "--ttl",
        args.ttl,
        ": every token expires (the default is 30 days; `roomkit revoke` ends one sooner)",
    )
    try:
        # Before the secret: a name refused leaves no key file behind.
        check_actor_name(args.actor, what="ACTOR")
    except ValueError as error:
        raise _Failure(str(error), 2) from None
    chosen = args.data_dir is not None
    if not chosen:
        args.data_dir = _default_data_dir()
    secret = _existing_secret(args.data_dir)
    try:
        print(issue_token(secret, args.actor, admin=args.admin, ttl=args.ttl))
    except ValueError as error:
        raise _Failure(str(error), 2) from None
    if not chosen and not os.environ.get(SECRET_ENV):
        # A desk started with another --data-dir refuses this token: say which key signed
        # it (on stderr, so `$(roomkit token ...)` captures the token alone).
        print(
            f"Signed with the key in {args.data_dir} (no --data-dir given): the desk takes "
            f"it when it runs with --data-dir {_quoted(args.data_dir)}",
            file=sys.stderr,
        )
    return 0


def _revoke(args: argparse.Namespace) -> int:
    from roomkit.auth.ledger import actor_entry, link_entry, token_entry
    from roomkit.auth.names import check_actor_name
    from roomkit.auth.principal import CredentialKind
    from roomkit.auth.tokens import token_claims, token_kind
    from roomkit.core.exceptions import DeskAuthError, StoreError
    from roomkit.desk.stores import close_stores
    from roomkit.tools.human_input import HumanInputHandler

    if (args.token is None) == (args.actor is None):
        raise _Failure("Revoke one token (TOKEN) or every token of an actor (--actor NAME)", 2)
    if args.store == "memory":
        raise _Failure(
            "A memory store lives inside the desk process: revoke on the desk's shared "
            "store (--store sqlite:///path.db or redis://...)",
            2,
        )
    until: float | None = None
    if args.actor is not None:
        try:
            check_actor_name(args.actor, what="--actor")
        except ValueError as error:
            raise _Failure(str(error), 2) from None
        entry, what = actor_entry(args.actor), f"every token of {_printable(args.actor)}"
    else:
        try:
            claims = token_claims(_existing_secret(args.data_dir), args.token)
        except DeskAuthError as error:
            raise _Failure(f"Not a token of this desk: {error}", 2) from None
        if not isinstance(claims.get("jti"), str):
            raise _Failure(
                "This token carries no id (it predates revocation): revoke its actor's "
                f"tokens with `roomkit revoke --actor {_printable(claims['sub'])}`"
            )
        until = None if claims.get("exp") is None else float(claims["exp"])
        kind = token_kind(claims)
        # A link is refused by its link entry, whether it answers or signs in.
        link = kind is not CredentialKind.ACTOR
        entry = link_entry(claims["jti"]) if link else token_entry(claims["jti"])
        named = {
            CredentialKind.ANSWER_LINK: "answer link",
            CredentialKind.SIGN_IN_LINK: "sign-in link",
        }
        what = f"the {named.get(kind, 'token')} of {_printable(claims['sub'])}"
    pending_store, room_store = _open_stores(args.store)

    async def revoke() -> float:
        try:
            ledger = HumanInputHandler(store=pending_store).ledger
            return await ledger.record_spent(entry, until=until)
        finally:
            await close_stores(pending_store, room_store)

    try:
        when = asyncio.run(revoke())
    except StoreError as error:
        raise _Failure(f"Could not record the revocation: {error}") from None
    stamp = datetime.fromtimestamp(when, UTC).isoformat(timespec="seconds")
    print(f"Revoked {what} (issued until {stamp})" if args.actor else f"Revoked {what}")
    return 0


# -- the parser --------------------------------------------------------------------------------


# -- mcp ---------------------------------------------------------------------------------------


def _mcp(args: argparse.Namespace) -> int:
    from roomkit.core.exceptions import StoreError

    try:
        from roomkit.mcp.command import run_command
    except ImportError as error:
        raise _Failure(f"{error}: install the extra, pip install 'roomkit-hitl[mcp]'") from None
    try:
        return run_command(args)
    except ImportError as error:
        raise _Failure(f"{error}: install the store's extra") from None
    except ValueError as error:
        raise _Failure(str(error), 2) from None
    except (StoreError, OSError) as error:
        detail = error.strerror if isinstance(error, OSError) and error.strerror else error
        raise _Failure(f"Cannot start the MCP server: {detail}") from None


def _mcp_parser(commands: Any, data_dir: argparse.ArgumentParser) -> None:
    mcp = commands.add_parser(
        "mcp", parents=[data_dir], help="serve the human-input tools to MCP clients"
    )
    mcp.add_argument("--store", required=True, help="the desk's store: sqlite:///x.db, redis://...")
    mcp.add_argument("--actor", help="who is asked over stdio (over HTTP, the token says)")
    mcp.add_argument("--room", default="mcp", help="the room of every request (default: mcp)")
    mcp.add_argument("--timeout", type=float, default=300.0, help="seconds to answer")
    mcp.add_argument("--http", type=int, metavar="PORT", help="serve streamable HTTP on PORT")
    mcp.add_argument("--host", default="127.0.0.1", help="the HTTP address (default: loopback)")
    mcp.add_argument("--hold", type=float, default=20.0, help="seconds one round is held")
    mcp.add_argument("--desk-url", help="the desk's address, for answer links (URL mode)")
    mcp.set_defaults(run=_mcp)


def _audit_parser(commands: Any, data_dir: argparse.ArgumentParser) -> None:
    from roomkit import _audit

    audit = commands.add_parser("audit", help="export, verify and sign the decisions' history")
    actions = audit.add_subparsers(dest="action", required=True, metavar="ACTION")
    where = "the store: sqlite:///x.db, redis://... or postgresql://..."
    export = actions.add_parser(
        "export", parents=[data_dir], help="every history entry and checkpoint, as JSON Lines"
    )
    export.add_argument("--store", required=True, help=where)
    export.add_argument("--since", help="only entries at or after this ISO-8601 time")
    export.add_argument("--room", help="only the requests of this room")
    export.add_argument("--format", choices=["jsonl", "a2a-evidence"], default="jsonl")
    export.set_defaults(run=_audit.export)
    verify = actions.add_parser(
        "verify",
        parents=[data_dir],
        help="check every chain and arguments digest; with the audit key, every signed "
        "head and checkpoint",
    )
    verify.add_argument("--store", required=True, help=where)
    verify.set_defaults(run=_audit.verify)
    checkpoint = actions.add_parser(
        "checkpoint", parents=[data_dir], help="sign a checkpoint of every chain's head"
    )
    checkpoint.add_argument("--store", required=True, help=where)
    checkpoint.add_argument(
        "--adopt",
        action="store_true",
        help="first sign, as they stand, the heads of histories that hold and have none "
        "signed (written before heads were signed, or without the key)",
    )
    checkpoint.set_defaults(run=_audit.checkpoint)
    key = actions.add_parser(
        "key", parents=[data_dir], help="create the audit key file in the data folder"
    )
    key.add_argument(
        "--rotate", action="store_true", help="a new signing key first; the old ones stay after it"
    )
    key.set_defaults(run=_audit.key)


def _allowed_hosts(args: argparse.Namespace) -> list[str]:
    """The ``--allowed-host`` names, and ``--host`` itself when it is a name."""
    names = list(args.allowed_host or [])
    host = args.host.strip("[]")
    try:
        ipaddress.ip_address(host)
    except ValueError:
        if host:
            names.append(host)
    return names


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="roomkit",
        description="Serve the answer desk, issue its tokens, answer questions from a terminal.",
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    data_dir = argparse.ArgumentParser(add_help=False)
    data_dir.add_argument(
        "--data-dir",
        type=Path,
        default=_default_data_dir(),
        help=f"where the desk's key file lives (unless {SECRET_ENV} is set)",
    )
    # The token command tells a folder it was given from the default one.
    token_data_dir = argparse.ArgumentParser(add_help=False)
    token_data_dir.add_argument(
        "--data-dir",
        type=Path,
        help=f"the folder of the desk's key file, as `roomkit desk` has it (default: "
        f"$ROOMKIT_DESK_DATA or {DEFAULT_DATA_DIR}; unless {SECRET_ENV} is set)",
    )

    desk = commands.add_parser(
        "desk",
        parents=[data_dir],
        help="serve the answer desk",
        description="Serve the answer desk. Once it listens, it prints a sign-in link for "
        "its page: the link signs one browser in as admin (who sees and answers everything) "
        "for 12 hours; it works once, and only within --sign-in-ttl seconds.",
    )
    desk.add_argument("--host", default="127.0.0.1")
    desk.add_argument("--port", type=int, default=8765)
    desk.add_argument(
        "--store", default="memory", help="memory, sqlite:///x.db, redis://... or postgresql://..."
    )
    desk.add_argument(
        "--allowed-origin", action="append", help="an origin allowed to open the WebSocket"
    )
    desk.add_argument(
        "--allowed-host",
        action="append",
        help="a name the desk is reached by (a DNS name, a proxy's); addresses and "
        "localhost need none",
    )
    desk.add_argument(
        "--sign-in-ttl",
        type=float,
        default=SIGN_IN_TTL,
        metavar="SECONDS",
        help=f"seconds the printed sign-in link may be opened in (default: {SIGN_IN_TTL:.0f}, "
        "15 minutes); it signs in once",
    )
    desk.add_argument("--log-level", default="info")
    desk.add_argument(
        "--log-format", choices=("text", "json"), default="text", help="json: one object a line"
    )
    desk.add_argument(
        "--notify",
        type=Path,
        metavar="FILE",
        help="run a notifier from this TOML file (surfaces, people, ladder; with [slack], "
        "Slack's clicks too)",
    )
    desk.set_defaults(run=_serve)

    token = commands.add_parser(
        "token", parents=[token_data_dir], help="issue a token for a person"
    )
    token.add_argument("actor", help="the participant id the token speaks for")
    token.add_argument("--admin", action="store_true", help="sees and answers everything")
    token.add_argument(
        "--ttl",
        type=float,
        default=DEFAULT_TOKEN_TTL,
        help=f"seconds until it expires (default: {DEFAULT_TOKEN_TTL:.0f}, 30 days)",
    )
    token.set_defaults(run=_token)

    revoke = commands.add_parser(
        "revoke", parents=[data_dir], help="revoke a token, or every token of an actor"
    )
    revoke.add_argument("token", nargs="?", help="the token (or answer link) to revoke")
    revoke.add_argument("--actor", help="revoke every token of this actor issued until now")
    revoke.add_argument(
        "--store",
        default="memory",
        help=(
            "the desk's store, as `roomkit desk --store` names it: sqlite:///x.db, "
            "redis://... or postgresql://..."
        ),
    )
    revoke.set_defaults(run=_revoke)

    client = argparse.ArgumentParser(add_help=False)
    client.add_argument(
        "--url",
        default=os.environ.get("ROOMKIT_DESK_URL", DEFAULT_URL),
        help=f"the running desk (default: $ROOMKIT_DESK_URL or {DEFAULT_URL})",
    )
    client.add_argument("--token", help=f"a desk token (default: ${TOKEN_ENV})")
    client.add_argument("--timeout", type=float, default=10.0, help="seconds to wait for the desk")
    shown = argparse.ArgumentParser(add_help=False)
    shown.add_argument(
        "--digest",
        help="on an approval, the digest `pending show` printed: decide only while the "
        "arguments still have it (default: the arguments as read just before deciding)",
    )
    pending = commands.add_parser("pending", help="list and answer open questions")
    actions = pending.add_subparsers(dest="action", required=True, metavar="ACTION")
    listing = actions.add_parser("list", parents=[client], help="the questions you may answer")
    listing.add_argument("--room", help="only this room's")
    listing.add_argument("--json", action="store_true", help="print the requests as JSON")
    listing.set_defaults(run=pending_commands.listing, id="")
    show = actions.add_parser(
        "show", parents=[client], help="a question, its options, and how to answer it"
    )
    show.add_argument("id", help="the request's id (from `roomkit pending list`)")
    show.set_defaults(run=pending_commands.show)
    answer = actions.add_parser("answer", parents=[client, shown], help="answer a question")
    answer.add_argument("id", help="the request's id (from `roomkit pending list`)")
    answer.add_argument(
        "answer",
        help="the answer: text; an option's label or number; a JSON list for several options "
        "or a list of questions (`roomkit pending show ID` shows an example)",
    )
    answer.set_defaults(run=pending_commands.answer)
    reject = actions.add_parser("reject", parents=[client, shown], help="refuse a question")
    reject.add_argument("id", help="the request's id (from `roomkit pending list`)")
    reject.add_argument("--reason", default="", help="what the agent reads")
    reject.set_defaults(run=pending_commands.reject)
    decide = actions.add_parser("approve", parents=[client, shown], help="approve a held tool call")
    decide.add_argument("id", help="the approval's id (from `roomkit pending list`)")
    decide.set_defaults(run=pending_commands.approve)
    decide = actions.add_parser(
        "edit", parents=[client, shown], help="approve a held tool call with other arguments"
    )
    decide.add_argument("id", help="the approval's id (from `roomkit pending list`)")
    decide.add_argument("arguments", help="every argument, as one JSON object")
    decide.set_defaults(run=pending_commands.edit)
    decide = actions.add_parser(
        "respond", parents=[client, shown], help="answer in a held tool's place (it does not run)"
    )
    decide.add_argument("id", help="the approval's id (from `roomkit pending list`)")
    decide.add_argument("result", help="what the agent reads instead of the tool's result")
    decide.set_defaults(run=pending_commands.respond)
    _mcp_parser(commands, data_dir)
    add_notify_parser(commands, data_dir)
    _audit_parser(commands, data_dir)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``roomkit`` command; returns the exit status."""
    args = _parser().parse_args(argv)
    try:
        status: int = args.run(args)
    except _Failure as error:
        print(f"roomkit: {error}", file=sys.stderr)
        return error.code
    except KeyboardInterrupt:
        return 130
    return status


if __name__ == "__main__":
    sys.exit(main())
