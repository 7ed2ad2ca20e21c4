"""``roomkit mcp``: serve the human-input tools to MCP clients, over stdio or HTTP.

The server itself is :mod:`roomkit.mcp.command`; this module gives it its arguments and
turns what it raises into one line. Needs the ``mcp`` extra.
"""

from __future__ import annotations

import argparse
import sys

from roomkit.cli._common import Failure, add_store_option, missing_extra

__all__ = ["add_parser", "run"]

EXTRA = "mcp"


def run(args: argparse.Namespace) -> int:
    """``roomkit mcp``: serve until the client leaves (stdio) or Ctrl-C (HTTP)."""
    from roomkit.core.exceptions import StoreError

    if args.http is None and sys.stdin is None:
        raise Failure(
            "roomkit mcp talks to its client on standard input and output, and its input is "
            "closed: let the MCP client start it (or serve HTTP with --http PORT)",
            2,
        )
    try:
        # Imported here, inside the try: without the extra, this is what fails.
        from roomkit.mcp.command import run_command

        return run_command(args)
    except ImportError as error:
        raise missing_extra("roomkit mcp", error, EXTRA) or Failure(str(error), 2) from None
    except ValueError as error:
        raise Failure(str(error), 2) from None
    except (StoreError, OSError) as error:
        detail = error.strerror if isinstance(error, OSError) and error.strerror else error
        raise Failure(f"Cannot start the MCP server: {detail}") from None


def add_parser(
    commands: argparse._SubParsersAction[argparse.ArgumentParser], data_dir: argparse.ArgumentParser
) -> None:
    """The ``mcp`` command's arguments."""
    mcp = commands.add_parser(
        "mcp",
        parents=[data_dir],
        help="serve the human-input tools to MCP clients",
        description="Serve the human-input tools to MCP clients, on stdio or (--http) over "
        "streamable HTTP. Ctrl-C or SIGTERM stops it; another while it stops (closing its "
        "store) is logged, and a third exits at once.",
    )
    add_store_option(mcp)
    mcp.add_argument("--actor", help="who is asked over stdio (over HTTP, the token says)")
    mcp.add_argument("--room", default="mcp", help="the room of every request (default: mcp)")
    mcp.add_argument("--timeout", type=float, default=300.0, help="seconds to answer")
    mcp.add_argument("--http", type=int, metavar="PORT", help="serve streamable HTTP on PORT")
    mcp.add_argument(
        "--host",
        default="127.0.0.1",
        help="the HTTP address, or a name that resolves to one (default: loopback; an IPv6 "
        "address as ::1 or [::1])",
    )
    mcp.add_argument("--hold", type=float, default=20.0, help="seconds one round is held")
    mcp.add_argument(
        "--max-open-calls",
        type=int,
        default=64,
        metavar="N",
        help="calls one client may have waiting at once (default: 64)",
    )
    mcp.add_argument("--desk-url", help="the desk's address, for answer links (URL mode)")
    mcp.set_defaults(run=run, extra=EXTRA)
