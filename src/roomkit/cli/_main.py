"""The ``roomkit`` parser, built from each command group's module, and :func:`main`.

Building the parser imports the command modules and nothing optional: each command loads
what it runs on when it runs. A command whose extra is missing prints one line naming the
install command and exits 2, as httpx's command does.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from pathlib import Path

from roomkit._streams import printable_streams
from roomkit.auth.tokens import SECRET_ENV
from roomkit.cli import audit, desk, grants, mcp, notify, pending, tokens
from roomkit.cli._common import Failure, default_data_dir, missing_extra

__all__ = ["main"]


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
        default=default_data_dir(),
        help=f"where the desk's key file lives (unless {SECRET_ENV} is set)",
    )
    desk.add_parser(commands, data_dir)
    tokens.add_parsers(commands, data_dir)
    pending.add_parser(commands)
    mcp.add_parser(commands, data_dir)
    notify.add_parser(commands, data_dir)
    audit.add_parser(commands, data_dir)
    grants.add_parser(commands)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``roomkit`` command; returns the exit status."""
    printable_streams()
    args = _parser().parse_args(argv)
    try:
        status: int = args.run(args)
    except Failure as error:
        print(f"roomkit: {error}", file=sys.stderr)
        return error.code
    except ImportError as error:
        missing = missing_extra(f"roomkit {args.command}", error, getattr(args, "extra", None))
        if missing is None:
            raise
        print(f"roomkit: {missing}", file=sys.stderr)
        return missing.code
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        # The reader left (`roomkit pending show ID | head`): nothing more to say to it.
        # Python's own flush at exit would fail again, on the same pipe: point it elsewhere.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141
    return status
