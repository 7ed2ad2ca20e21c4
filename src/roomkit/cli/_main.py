"""The ``roomkit`` parser, built from each command group's module, and :func:`main`.

Building the parser imports the command modules and nothing optional: each command loads
what it runs on when it runs. A command whose extra is missing prints one line naming the
install command and exits 2, as httpx's command does.
"""

from __future__ import annotations

import argparse
import errno
import os
import sys
from collections.abc import Sequence
from pathlib import Path

from roomkit._interrupts import stopping_until_exit
from roomkit._storable import unencodable_text
from roomkit._streams import printable_streams
from roomkit.auth.tokens import SECRET_ENV
from roomkit.cli import audit, desk, grants, mcp, notify, pending, tokens
from roomkit.cli._common import Failure, default_data_dir, missing_extra, printable

__all__ = ["console", "main"]

_FULL = {errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EIO}
"""Why a write to a file fails for want of room (or of a working disk), not for a mistake."""


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
        help="where the desk's key file lives (default: $ROOMKIT_DESK_DATA or ~/.roomkit/desk; "
        f"unless {SECRET_ENV} is set)",
    )
    desk.add_parser(commands, data_dir)
    tokens.add_parsers(commands, data_dir)
    pending.add_parser(commands)
    mcp.add_parser(commands, data_dir)
    notify.add_parser(commands, data_dir)
    audit.add_parser(commands, data_dir)
    grants.add_parser(commands)
    return parser


def console() -> int:
    """The ``roomkit`` command as its own process runs it: :func:`main`, then, until the
    process exits, a stop signal is one that came while the command stops (logged once, the
    next exits at once), where Python's default would end a command that stopped cleanly as
    killed by it."""
    status = main()
    stopping_until_exit()
    return status


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``roomkit`` command; returns the exit status."""
    printable_streams()
    args = _parser().parse_args(argv)
    if sys.stdout is None:
        # Started with its output closed (`>&-`): what it prints would be lost unseen.
        _say("standard output is closed: send it to a terminal, a file or a pipe")
        return 2
    try:
        _resolve_data_dir(args)
        _check_store(getattr(args, "store", None))
        status: int = args.run(args)
    except Failure as error:
        _say(error)
        return error.code
    except ImportError as error:
        missing = missing_extra(f"roomkit {args.command}", error, getattr(args, "extra", None))
        if missing is None:
            raise
        _say(missing)
        return missing.code
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        # The reader left (`roomkit pending show ID | head`): nothing more to say to it.
        _drop_stdout()
        return 141
    except BaseExceptionGroup as group:
        # The same, from the tasks of a server on stdio (`roomkit mcp` whose client left).
        if group.split(BrokenPipeError)[1] is not None:
            raise
        _drop_stdout()
        return 141
    except OSError as error:
        if error.errno not in _FULL or error.filename is not None:
            raise
        # The output's file system is full (`> export.jsonl`): what it holds is cut short.
        _drop_stdout()
        _say(
            f"cannot write the output ({error.strerror}): it is cut short; make room, then "
            "run the command again"
        )
        return 1
    return status


def _resolve_data_dir(args: argparse.Namespace) -> None:
    """Fill in the default data folder of a command that takes ``--data-dir`` and was given
    none (``args.data_dir_given`` says which), read now rather than as the parser is built:
    ``roomkit --help`` needs no home folder. Exit 2 when the folder names a file, which
    holds no key, or when there is no home folder to find the default in.

    Raises:
        Failure: no folder can be found, or it names something that is not a folder (exit 2).
    """
    if not hasattr(args, "data_dir"):
        return
    args.data_dir_given = args.data_dir is not None
    if args.data_dir is None:
        try:
            args.data_dir = default_data_dir()
        except RuntimeError:
            raise Failure(
                "no home folder to keep the desk's key in (~/.roomkit/desk): pass --data-dir "
                "or set $ROOMKIT_DESK_DATA",
                2,
            ) from None
    data_dir: Path = args.data_dir
    if data_dir.exists() and not data_dir.is_dir():
        raise Failure(
            f"--data-dir (or $ROOMKIT_DESK_DATA) names {printable(data_dir, None)}, which is "
            "not a folder: pass the folder the desk keeps its key in",
            2,
        )


def _check_store(url: str | None) -> None:
    """Exit 2 when ``--store`` names a server with bytes that are not UTF-8 (a file name
    may hold such bytes; a host, user, password or database cannot), or names a folder as a
    SQLite file.

    Raises:
        Failure: the URL is one of those (exit 2).
    """
    if url is None:
        return
    if not url.startswith("sqlite:") and unencodable_text(url) is not None:
        raise Failure(
            "--store holds bytes that are not UTF-8 text: type it again in UTF-8 (check the "
            "terminal's encoding)",
            2,
        )
    path = url.removeprefix("sqlite:///") if url.startswith("sqlite:///") else ""
    try:
        folder = bool(path) and Path(path).is_dir()
    except OSError:
        folder = False  # a name the file system cannot look up: the store says so
    if folder:
        raise Failure(
            f"--store names the folder {printable(Path(path), None)}, not a database file: "
            f"name the file in it, such as sqlite:///{printable(Path(path) / 'desk.db', None)}",
            2,
        )


def _say(error: object) -> None:
    """The one line of a failure on stderr, with any control character in it (from an
    argument, a store's answer, a file) shown as an escape rather than run by the terminal."""
    if sys.stderr is not None:
        print(f"roomkit: {printable(error, None)}", file=sys.stderr)


def _drop_stdout() -> None:
    """Point stdout at nothing: Python's own flush at exit would fail again, on the same
    stream."""
    os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
