"""``roomkit desk``: serve the answer desk, and print the link that signs its page in.

It checks its store before it starts and prints a sign-in link once it listens: the page
signs in with it once, as an admin, within ``--sign-in-ttl`` seconds (15 minutes). With
``--notify`` it runs a notifier from a TOML file in the same process (with Slack's clicks,
when the file has a ``[slack]`` table). Needs the ``desk`` extra.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from pathlib import Path

from roomkit.auth.tokens import SECRET_ENV
from roomkit.cli._common import (
    Failure,
    add_store_option,
    check_ttl,
    close_stores,
    open_stores,
    printable,
    quoted,
    secret,
)
from roomkit.cli._desk_options import allowed_hosts, allowed_origins, listen_host

__all__ = ["LINK_ACTOR", "SIGN_IN_TTL", "add_parser", "serve"]

EXTRA = "desk"
LINK_ACTOR = "admin"
"""Whom the sign-in link ``roomkit desk`` prints speaks for (an admin: it sees everything)."""
SIGN_IN_TTL = 900.0
"""Seconds the printed sign-in link may be opened in, by default: 15 minutes."""


def serve(args: argparse.Namespace) -> int:
    """``roomkit desk``: serve until Ctrl-C or SIGTERM, then exit 0.

    Ctrl-C before the desk serves (before it prints its sign-in link) interrupts it as it
    starts: it exits 130, as any command interrupted does.

    Raises:
        Failure: a bad option (exit 2), or a store or a socket the desk cannot start on.
    """
    import uvicorn

    from roomkit._serving import Interrupts, Server, listen, port_problem, sign_in_link
    from roomkit.auth.tokens import SESSION_TTL, issue_sign_in_link
    from roomkit.cli.audit import audit_keys, use_audit_keys
    from roomkit.cli.notify import notify_config
    from roomkit.core.exceptions import StoreError
    from roomkit.core.framework import RoomKit
    from roomkit.desk.app import create_desk_app
    from roomkit.desk.limits import DeskLimits
    from roomkit.desk.startup import check_stores
    from roomkit.models.clock import spoken_duration
    from roomkit.notify.ladders import following
    from roomkit.stores import checkpointing, new_sqlite_file
    from roomkit.tools.human_input import HumanInputHandler

    host = listen_host(args.host)
    origins = allowed_origins(args.allowed_origin)
    check_ttl("--sign-in-ttl", args.sign_in_ttl)
    if args.log_format == "text" and args.log_level.lower() not in uvicorn.config.LOG_LEVELS:
        raise Failure(
            f"Unknown log level {printable(args.log_level, 40)!r}: use "
            f"{', '.join(uvicorn.config.LOG_LEVELS)}",
            2,
        )
    try:
        limits = DeskLimits(
            rate=args.rate,
            burst=args.burst,
            admin_rate=args.admin_rate,
            admin_burst=args.admin_burst,
        )
    except ValueError as error:
        name = str(error).split(" ", 1)[0].removeprefix("DeskLimits.")
        flag, value = "--" + name.replace("_", "-"), getattr(args, name, None)
        kind = "whole number" if name.endswith("burst") else "number"
        raise Failure(f"{flag} takes a positive {kind}, got {value}", 2) from None
    problem = port_problem(args.port)
    if problem is not None:
        raise Failure(problem, 2)
    hosts = allowed_hosts(args, host)
    config = None if args.notify is None else notify_config(args.notify)
    new_key = _key_is_new(args.data_dir)
    key = secret(args.data_dir)
    keys = audit_keys(args.data_dir)
    if args.log_format == "json":
        from roomkit.desk.logs import log_as_json

        try:
            log_as_json(args.log_level)
        except ValueError as error:
            raise Failure(str(error), 2) from None
    new_file = new_sqlite_file(args.store)
    pending_store, room_store = open_stores(args.store, "roomkit desk")
    trail = use_audit_keys(pending_store, keys)
    interrupts = Interrupts()

    async def run() -> None:
        try:
            kit = RoomKit(store=room_store)
            # The file's directory routes the requests: delegations, roles, on-call.
            directory = None if config is None else config.directory
            handler = HumanInputHandler(store=pending_store, directory=directory)
            notifier = None if config is None else config.notifier(handler, link_secret=key)
            try:
                app = create_desk_app(
                    kit,
                    handler=handler,
                    secret=key,
                    data_dir=args.data_dir,
                    notifier=notifier,
                    allowed_origins=origins,
                    allowed_hosts=hosts,
                    limits=limits,
                )
            except (TypeError, ValueError) as error:
                raise Failure(str(error), 2) from None
            try:
                await check_stores(kit, handler)
                sock = listen(host, args.port)
            except StoreError as error:
                raise Failure(f"Cannot start the desk: {error}") from None
            except OSError as error:
                raise Failure(f"Cannot start the desk: {error.strerror or error}") from None
            if new_file is not None:
                notice = (
                    f"created a new store in {printable(new_file, None)}: agents and roomkit "
                    "mcp ask here only with the same --store"
                )
                if args.log_format == "json":
                    # stderr holds JSON lines only: the notice is one of them, a warning
                    # handed to the handlers whatever --log-level passes, as the text notice
                    # is always printed.
                    desk_log = logging.getLogger("roomkit.desk")
                    extra = {"event": "store_created", "path": str(new_file)}
                    desk_log.handle(
                        desk_log.makeRecord(
                            desk_log.name,
                            logging.WARNING,
                            __file__,
                            0,
                            notice,
                            (),
                            None,
                            None,
                            extra,
                        )
                    )
                else:
                    print(f"roomkit desk: {notice}", file=sys.stderr, flush=True)
            port = sock.getsockname()[1]
            token = issue_sign_in_link(key, LINK_ACTOR, admin=True, ttl=args.sign_in_ttl)
            link = sign_in_link(host, port, token)

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
                        f"work here when it runs with --data-dir {quoted(new_key)}",
                        flush=True,
                    )

            server_config = uvicorn.Config(
                app,
                host=host,
                port=port,
                ws_max_size=limits.max_frame,
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
                    server = Server(
                        server_config, on_started=started, head_timeout=limits.head_timeout
                    )
                    interrupts.server = server
                    await server.serve(sockets=[sock])
        finally:
            await close_stores(pending_store, room_store)

    # Ctrl-C is how a served desk stops: by then the server has shut down cleanly.
    return interrupts.run(run)


def _key_is_new(data_dir: Path) -> Path | None:
    """The folder the desk is about to create its key in, ``None`` when it has one already
    (or takes ``ROOMKIT_DESK_SECRET``)."""
    from roomkit.auth.tokens import KEY_FILE

    if os.environ.get(SECRET_ENV) or (data_dir / KEY_FILE).exists():
        return None
    return data_dir


def add_parser(
    commands: argparse._SubParsersAction[argparse.ArgumentParser], data_dir: argparse.ArgumentParser
) -> None:
    """The ``desk`` command's arguments."""
    desk = commands.add_parser(
        "desk",
        parents=[data_dir],
        help="serve the answer desk",
        description="Serve the answer desk. Once it listens, it prints a sign-in link for "
        "its page: the link signs one browser in as admin (who sees and answers everything) "
        "for 12 hours; it works once, and only within --sign-in-ttl seconds. Ctrl-C or SIGTERM "
        "stops it; another while it stops (closing its store) is logged, and a third exits at "
        "once.",
    )
    desk.add_argument(
        "--host",
        default="127.0.0.1",
        help="the address to listen on, or a name that resolves to one (default: loopback; "
        "an IPv6 address as ::1 or [::1])",
    )
    desk.add_argument("--port", type=int, default=8765)
    add_store_option(desk, required=False)
    desk.add_argument(
        "--allowed-origin",
        action="append",
        help="an origin allowed to open the WebSocket: scheme://host[:port], such as "
        "https://app.example.com (or * for any)",
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
    desk.add_argument(
        "--rate",
        type=float,
        default=20.0,
        help="requests a person may make per second, on average (default: 20)",
    )
    desk.add_argument(
        "--burst", type=int, default=40, help="requests a person may make at once (default: 40)"
    )
    desk.add_argument(
        "--admin-rate",
        type=float,
        default=500.0,
        help="requests per second an administrator's batch work may make (default: 500)",
    )
    desk.add_argument(
        "--admin-burst",
        type=int,
        default=1000,
        help="requests an administrator may make at once (default: 1000)",
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
    desk.set_defaults(run=serve, extra=EXTRA)
