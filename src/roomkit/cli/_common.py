"""What the ``roomkit`` commands share: the failure they exit with, the desk's key and data
folder, the ``--store`` option and the stores its URL names, and the line a missing extra
prints.

Nothing here imports an optional library: ``roomkit --help`` and every ``roomkit CMD --help``
load this module and the command modules, and each command loads what it runs on when it runs.
"""

from __future__ import annotations

import argparse
import asyncio
import math
import os
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

from roomkit._extras import extra_missing, extra_of, missing_module
from roomkit.auth.tokens import SECRET_ENV, data_folder

if TYPE_CHECKING:
    from roomkit.core.store import RoomStore
    from roomkit.stores import DurableStore, PendingStore

__all__ = [
    "SECRET_ENV",
    "Failure",
    "add_store_option",
    "check_ttl",
    "close_stores",
    "default_data_dir",
    "existing_secret",
    "missing_extra",
    "on_stores",
    "open_stores",
    "printable",
    "quoted",
    "refuse_missing_file",
    "secret",
]

_T = TypeVar("_T")


class Failure(Exception):
    """A command failed: ``str(error)`` is the line to print, ``code`` the exit status.

    It never leaves :func:`roomkit.cli.main`, which turns it into that line and status.
    """

    def __init__(self, message: str, code: int = 1) -> None:
        super().__init__(message)
        self.code = code


def missing_extra(command: str, error: ImportError, extra: str | None = None) -> Failure | None:
    """The exit-2 failure for ``command`` when ``error`` is an optional library missing,
    ``None`` when it is something else (a bug, which keeps its traceback).

    Args:
        command: the command as typed: ``roomkit mcp``.
        error: what the import raised.
        extra: the command's own extra, which wins for a library it installs too.
    """
    name = missing_module(error)
    found = extra_of(name, extra)
    if found is not None:
        return Failure(extra_missing(command, found, name), 2)
    text = str(error)
    if "pip install" in text:
        # An import that words its own failure (a store naming its extra) is already one line.
        return Failure(text, 2)
    return None


def printable(text: object, limit: int | None = 120) -> str:
    """One line of text safe for a terminal: control characters (escapes), line breaks and
    invisible format characters are shown, not run; cut to ``limit`` characters (``None``:
    never cut)."""
    line = "".join(ch if ch.isprintable() else repr(ch)[1:-1] for ch in str(text))
    return line if limit is None or len(line) <= limit else line[: limit - 3] + "..."


def default_data_dir() -> Path:
    """``$ROOMKIT_DESK_DATA``, else ``~/.roomkit/desk``: where the desk keeps its key."""
    return data_folder()


def secret(data_dir: Path) -> bytes:
    """The desk's secret (``ROOMKIT_DESK_SECRET``, or the key in ``data_dir``, created when
    missing); one that cannot be read exits 1."""
    from roomkit.auth.tokens import resolve_secret

    try:
        return resolve_secret(data_dir=data_dir)
    except (ValueError, OSError) as error:
        raise Failure(f"Cannot use the desk secret: {error}") from None


def existing_secret(data_dir: Path) -> bytes:
    """The secret of a desk that exists: ``ROOMKIT_DESK_SECRET``, or the key in ``data_dir``,
    which must be a folder already (a token signed with a brand-new key opens no desk)."""
    if not os.environ.get(SECRET_ENV) and not data_dir.is_dir():
        raise Failure(
            f"The folder {data_dir} does not exist, so it holds no desk's key: pass the "
            "--data-dir the desk runs with (or set ROOMKIT_DESK_SECRET to its secret)",
            2,
        )
    return secret(data_dir)


def quoted(path: Path) -> str:
    """``path`` as a shell would take it back."""
    import shlex

    return shlex.quote(str(path))


def check_ttl(option: str, ttl: float, about: str = "") -> None:
    """Exit 2 unless ``ttl`` is a positive, finite number of seconds, at most ten years."""
    from roomkit.auth.tokens import MAX_TTL

    if not (math.isfinite(ttl) and 0 < ttl <= MAX_TTL):
        raise Failure(
            f"{option} must be a positive number of seconds, at most {MAX_TTL:.0f} (ten "
            f"years){about}",
            2,
        )


def add_store_option(parser: argparse.ArgumentParser, *, required: bool = True) -> None:
    """Add ``--store``, the URL of the desk's store, to ``parser``: required, or ``memory``
    (a store that lives as long as the command) by default when not ``required``."""
    urls = "sqlite:///x.db, redis://... or postgresql://..."
    if required:
        parser.add_argument("--store", required=True, help=f"the desk's store: {urls}")
    else:
        parser.add_argument(
            "--store", default="memory", help=f"the desk's store: memory (the default), {urls}"
        )


def refuse_missing_file(url: str) -> None:
    """Exit 2 when ``url`` is ``sqlite:///`` naming a file that does not exist: opening it
    would create an empty database, which a command reading the desk's store would report on
    as if it were the desk's.

    Raises:
        Failure: the file does not exist (exit 2).
    """
    prefix = "sqlite:///"
    if not url.startswith(prefix) or not url[len(prefix) :]:
        return
    path = Path(url[len(prefix) :])
    try:
        found = path.exists()
    except OSError as error:
        # A name too long for the file system, or one it cannot look up at all.
        raise Failure(
            f"{printable(str(path))} cannot be a database file ({error.strerror}): name the "
            "file the desk keeps its requests in (its `roomkit desk --store` URL)",
            2,
        ) from None
    if not found:
        raise Failure(
            f"{printable(str(path))} does not exist: name the file the desk keeps its requests "
            "in (its `roomkit desk --store` URL)",
            2,
        )


def open_stores(
    url: str, command: str, *, create: bool = True
) -> tuple[PendingStore | DurableStore, RoomStore]:
    """The pending-request and room stores ``--store`` names; a wrong URL, or a store whose
    extra is missing, exits 2 with one line. ``create=False``: the store must be there
    already (:func:`roomkit.stores.open_url`)."""
    from roomkit.stores import open_url

    try:
        return open_url(url, create=create)
    except ValueError as error:
        raise Failure(str(error), 2) from None
    except ImportError as error:
        raise missing_extra(command, error) or Failure(str(error), 2) from None


async def close_stores(*stores: object) -> None:
    """Close what :func:`open_stores` opened (each store once)."""
    from roomkit.stores import close_stores as close

    await close(*stores)


def on_stores(
    url: str,
    command: str,
    work: Callable[[PendingStore | DurableStore], Awaitable[_T]],
    failing: str,
    *,
    create: bool = True,
) -> _T:
    """Run ``work`` on the pending-request store ``url`` names, then close what was opened.

    Args:
        url: the ``--store`` URL.
        command: the command, as an error about a missing extra names it.
        work: what to do with the store.
        failing: what could not be done, as the line of a fault of the store starts.
        create: ``False`` for a command that only reads the store (or changes what is in
            it): a SQLite file, PostgreSQL schema or Redis database that holds no roomkit
            store, or one made by an earlier version, is refused, and left as it was.

    Raises:
        Failure: the URL is wrong, its extra missing, or (``create=False``) it names no
            store or one made by an earlier version (exit 2); or the store failed (exit 1).
    """
    from roomkit.core.exceptions import StoreError, StoreNotFoundError, StoreOutdatedError

    pending_store, room_store = open_stores(url, command, create=create)

    async def run() -> _T:
        try:
            return await work(pending_store)
        finally:
            await close_stores(pending_store, room_store)

    try:
        return asyncio.run(run())
    except StoreNotFoundError:
        # A server's URL is named without its password.
        place, kind = getattr(pending_store, "where", None), "store"
        if place is None:
            place, kind = url.removeprefix("sqlite:///"), "file"
        raise Failure(
            f"{printable(place, 300)} holds no roomkit store (it was left as it was): name "
            f"the {kind} the desk keeps its requests in (its `roomkit desk --store` URL)",
            2,
        ) from None
    except StoreOutdatedError as error:
        place = getattr(pending_store, "where", None) or url.removeprefix("sqlite:///")
        raise Failure(
            f"{printable(place, 300)} holds a roomkit store made by an earlier version "
            f"({printable(error.found, 300)}), which this command only reads: it was left as "
            "it was. Start `roomkit desk` once with the same --store, which brings the store "
            "up to date, then run this command again",
            2,
        ) from None
    except StoreError as error:
        raise Failure(f"{failing}: {error}") from None
