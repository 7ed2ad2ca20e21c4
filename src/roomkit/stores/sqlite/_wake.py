"""Wake-up hints between processes sharing a SQLite file: a Unix datagram socket each.

SQLite tells no other process of a commit, so the change feed polls. To spare a waiter in
another process the poll's delay, every store whose feed runs binds a datagram socket in a
folder beside the database (``kit.db.wake/``), and every store that commits a change sends
one byte to each socket there (it lists the folder again only once the folder changed).
The byte means only "look now": the feed polls at once and reads from the file what moved,
so a hint that is lost, late or forged costs one poll and changes nothing else. The poll
every backstop interval stays, and catches what a hint missed.

A folder path too long for a Unix socket moves under the temporary directory, named by a
hash of the database's real path, so that every process on the file finds the same one;
that spare folder is removed with the last socket in it.
A folder that cannot be made or written, or a path too long even there, leaves the store
polling, with one WARNING. The socket of a process that died refuses the next hint, and
its sender removes it. The folder and the sockets take the database file's permissions, as
SQLite's ``-wal`` and ``-shm`` files do (when the file exists as the first listener binds),
so that the processes that may write the file may wake each other.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import logging
import os
import re
import secrets
import socket
import stat
import sys
import tempfile
import time

__all__ = ["WakeHints", "wake_folder"]

logger = logging.getLogger("roomkit.tools.human_input.stores.sqlite")

_HINT = b"!"
_NAME = re.compile(r"[0-9]+-[0-9a-f]{8}\.sock")
"""A listener's socket: its process id and a random tag. Nothing else in the folder is ours."""
_NAME_ROOM = 24
"""Bytes a socket's name takes at most: a 7-digit process id, a dash, 8 hex digits, .sock."""
_PATH_LIMIT = (104 if sys.platform == "darwin" or "bsd" in sys.platform else 108) - 1
"""Bytes the path of a Unix socket may take: ``sun_path`` less its terminating NUL."""
_DRAIN = 256
"""Hints read per wake of the loop at most, so that a flood cannot hold the loop."""
_NO_FILE = {"", ":memory:"}
"""Databases that live in one connection's memory: no other process can share them."""
_SETTLED_NS = 100_000_000
"""How long (in nanoseconds) before a listing the folder must have last changed for the
listing to be kept: a file system stamps changes with a coarse clock, so a socket bound
just after a listing may leave the folder's time as it was, but not once that clock has
moved on."""


def wake_folder(database: str) -> tuple[str, bool] | None:
    """Where the listeners on ``database`` bind their sockets, and whether it is the spare.

    The folder is ``<real path>.wake`` beside the file; when a socket path there would be
    too long, a folder under the temporary directory named by a hash of the real path (the
    spare, ``True``); ``None`` when even that is too long.
    """
    real = os.path.realpath(database)
    beside = real + ".wake"
    if _fits(beside):
        return beside, False
    digest = hashlib.sha256(os.fsencode(real)).hexdigest()[:24]
    spare = os.path.join(tempfile.gettempdir(), f"roomkit-wake-{digest}")
    return (spare, True) if _fits(spare) else None


def _fits(folder: str) -> bool:
    return len(os.fsencode(folder)) + 1 + _NAME_ROOM <= _PATH_LIMIT


class WakeHints:
    """This store's socket while its feed runs, and the hints it sends after each commit.

    Nothing here raises: a hint that cannot be sent or heard only leaves the poll to find
    the change. Every method returns at once; :meth:`ring` runs on the thread that committed
    (one commit at a time), the others on the event loop's thread.

    Args:
        database: the database file, as the store was given it.
        where: how to name the store in log messages.
    """

    def __init__(self, database: str, *, where: str) -> None:
        self._database = database
        self._where = where
        self._usable = database not in _NO_FILE and hasattr(socket, "AF_UNIX")
        self._listenable = self._usable
        self._folder: tuple[str, bool] | None = None
        self._located = False
        self._listener: socket.socket | None = None
        self._path = ""
        self._loop: asyncio.AbstractEventLoop | None = None
        self._rung: asyncio.Event | None = None
        self._sender: socket.socket | None = None
        self._warned = False
        # The folder's entries as last listed, kept with the folder's time of change.
        self._listed: tuple[str, int, list[str]] | None = None

    # -- hearing -------------------------------------------------------------------------------

    def listen(self) -> None:
        """Bind this store's socket, unless it is bound already or cannot be.

        The first failure logs one WARNING and leaves the store polling from then on.
        """
        if self._listener is not None:
            if self._loop is asyncio.get_running_loop():
                return
            # Bound for a loop that no longer runs this store: bind afresh for this one.
            self.unlisten()
        if not self._listenable:
            return
        folder = self._locate()
        if folder is None:
            self._give_up(
                f"the path of {self._database!r} is too long for a Unix socket, even under "
                f"{tempfile.gettempdir()!r}"
            )
            return
        directory, spare = folder
        path = os.path.join(directory, f"{os.getpid()}-{secrets.token_hex(4)}.sock")
        listener: socket.socket | None = None
        bound = False
        try:
            listener = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
            listener.setblocking(False)
            mode = self._make(directory, spare)
            try:
                listener.bind(path)
            except FileNotFoundError:
                if not spare:
                    raise
                # The last listener of another process removed the spare folder between
                # its making and this bind: make it again.
                mode = self._make(directory, spare)
                listener.bind(path)
            bound = True
            if mode is not None:
                os.chmod(path, mode)
            loop = asyncio.get_running_loop()
            loop.add_reader(listener.fileno(), self._drain)
        except (OSError, NotImplementedError) as error:
            # NotImplementedError: a loop that cannot watch a socket (the proactor).
            if listener is not None:
                listener.close()
            if bound:
                with contextlib.suppress(OSError):
                    os.unlink(path)
            self._give_up(f"cannot listen at {path!r} ({error or type(error).__name__})")
            return
        self._listener, self._path, self._loop = listener, path, loop
        self._rung = asyncio.Event()

    async def wait(self, timeout: float) -> bool:
        """Return once a hint arrives (``True``) or after ``timeout`` seconds (``False``)."""
        rung = self._rung
        if rung is None:
            await asyncio.sleep(timeout)
            return False
        if not rung.is_set():
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(timeout):
                    await rung.wait()
        hinted = rung.is_set()
        # Cleared before the caller looks: a hint that arrives while it looks rings again.
        rung.clear()
        return hinted

    def unlisten(self) -> None:
        """Close this store's socket and remove its file; idempotent."""
        listener, self._listener = self._listener, None
        loop, self._loop = self._loop, None
        self._rung = None
        if listener is None:
            return
        if loop is not None and not loop.is_closed():
            loop.remove_reader(listener.fileno())
        listener.close()
        with contextlib.suppress(OSError):
            os.unlink(self._path)
        folder = self._folder
        if folder is not None and folder[1]:
            # The spare folder under the shared temporary directory goes with the last
            # socket in it (removing a folder that is not empty fails); the next listener
            # makes it again.
            with contextlib.suppress(OSError):
                os.rmdir(folder[0])

    def close(self) -> None:
        """Stop hearing and close the socket hints are sent from; idempotent.

        A hint rung after this opens a sender afresh: close again once no commit runs.
        """
        self.unlisten()
        sender, self._sender = self._sender, None
        if sender is not None:
            sender.close()

    def _drain(self) -> None:
        listener = self._listener
        if listener is None:
            return
        for _ in range(_DRAIN):
            try:
                listener.recv(64)
            except OSError:
                # BlockingIOError: read them all. Anything else: the poll still runs.
                break
        if self._rung is not None:
            self._rung.set()

    # -- ringing -------------------------------------------------------------------------------

    def ring(self) -> None:
        """Tell every other listener on the file to look now."""
        if not self._usable:
            return
        folder = self._locate()
        if folder is None:
            return
        directory = folder[0]
        try:
            names = self._names(directory)
        except (FileNotFoundError, NotADirectoryError):
            return  # no one listens, or no one can
        except OSError as error:
            self._warn(f"cannot read {directory!r} ({error}); other processes poll for changes")
            return
        own = os.path.basename(self._path) if self._listener is not None else None
        for name in names:
            if name != own and _NAME.fullmatch(name):
                self._send(os.path.join(directory, name))

    def _names(self, directory: str) -> list[str]:
        """The entries of ``directory``: listed again only when it changed since the last
        listing, or changed so shortly before it that a later change may share its time."""
        changed = os.stat(directory).st_mtime_ns
        listed = self._listed
        if listed is not None and listed[0] == directory and listed[1] == changed:
            return listed[2]
        names = os.listdir(directory)
        settled = time.time_ns() - changed > _SETTLED_NS
        self._listed = (directory, changed, names) if settled else None
        return names

    def _send(self, path: str) -> None:
        try:
            # Read once: :meth:`close` may clear it on the loop's thread meanwhile.
            sender = self._sender
            if sender is None:
                sender = self._sender = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
                sender.setblocking(False)
            sender.sendto(_HINT, path)
        except (ConnectionRefusedError, FileNotFoundError):
            # No socket is bound there: its process died without removing it.
            _remove_stale(path)
        except BlockingIOError:
            pass  # its queue is full: it has hints to read already
        except PermissionError as error:
            self._warn(f"cannot wake {path!r} ({error}); that process polls for changes")
        except OSError as error:
            logger.debug("no wake-up hint to %s: %s", path, error)

    # -- the folder ----------------------------------------------------------------------------

    def _locate(self) -> tuple[str, bool] | None:
        if not self._located:
            self._folder, self._located = wake_folder(self._database), True
        return self._folder

    def _make(self, directory: str, spare: bool) -> int | None:
        """Make the folder if it is missing; the mode the socket takes, or ``None``.

        Raises:
            OSError: the folder cannot be made, its path is taken by something else, or
                the spare folder under the shared temporary directory is another user's.
        """
        if spare:
            with contextlib.suppress(FileExistsError):
                os.mkdir(directory, 0o700)
            info = os.lstat(directory)
            if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.geteuid():
                raise PermissionError(f"{directory!r} is not a folder of this user's")
            return None
        try:
            mode: int | None = os.stat(self._database).st_mode & 0o777
        except OSError:
            mode = None
        try:
            os.mkdir(directory)
        except FileExistsError:
            if not os.path.isdir(directory):
                raise NotADirectoryError(f"{directory!r} is taken by a file") from None
        else:
            if mode is not None:
                # A folder is searched where the file is read.
                os.chmod(directory, mode | (mode & 0o444) >> 2)
        return mode

    def _give_up(self, reason: str) -> None:
        self._listenable = False
        self._warn(f"{reason}; changes made by other processes arrive by polling instead")

    def _warn(self, message: str) -> None:
        if not self._warned:
            self._warned = True
            logger.warning("wake-up hints of SQLite store %s: %s", self._where, message)


def _remove_stale(path: str) -> None:
    with contextlib.suppress(OSError):
        if stat.S_ISSOCK(os.lstat(path).st_mode):
            os.unlink(path)
