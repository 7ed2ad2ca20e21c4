"""Rooms, rosters, bindings, history and the turn journal in a SQLite file.

:class:`SQLiteRoomStore` keeps what :class:`~roomkit.core.store.InMemoryStore` keeps, on
disk, and records the turns in flight (:class:`~roomkit.core.store.TurnJournal`) so that a
restarted process can finish them. Several processes may open the same file (an agent process
writing, a desk process reading rosters), and the file may be the one a SQLite pending-request
store uses: the tables here are prefixed ``roomkit_`` and none is shared.

Every write is committed on its own, in WAL mode with ``synchronous=FULL``: a write that
returned is on disk, and another process sees it at its next read. Most writes are one
statement; the two that must not be split (a message with the turns it starts, a turn's end
with its reply) are one transaction each. Before and
after each write (and at most every 50 ms before a read) the store checks that its files are
still the ones it opened (:class:`~roomkit.core.sqlite_connect.FileWatch`): when one was
deleted or replaced, what the connection's log holds is copied into the database file, the
connection is dropped, and the call is refused; a write during which a file moved is
acknowledged only once it was copied in with the rest.
"""

from __future__ import annotations

import asyncio
import logging
import os
import sqlite3
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager, suppress
from typing import TYPE_CHECKING, Any, NoReturn

from roomkit.core import _sqlite_rows as rows
from roomkit.core.lifecycle import Opened
from roomkit.core.sqlite_connect import FileWatch, connect, unavailable
from roomkit.core.store import JournalStep, OpenTurn
from roomkit.models.room import ChannelBinding, Participant, Room, RoomEvent

if TYPE_CHECKING:
    import aiosqlite

__all__ = ["SQLiteRoomStore"]

logger = logging.getLogger("roomkit.core.sqlite_store")


class SQLiteRoomStore(Opened):
    """A :class:`~roomkit.core.store.RoomStore` and turn journal in one SQLite file.

    The database opens on first use, or with :meth:`open` / ``async with``; the tables are
    created when missing. Events keep their ids and are listed in the order they were added,
    and opening the store makes the ids of events created from then on exceed every stored
    id, so a restarted process neither reuses an id nor sorts a new event before an old one.

    Args:
        path: the database file (created when missing; its directory must exist).
        busy_timeout: seconds a statement waits for another connection's write lock
            before the store reports :class:`~roomkit.core.exceptions.StoreUnavailableError`.

    Raises:
        ValueError: ``busy_timeout`` is negative.
    """

    durable = True
    """Rooms, history and open turns outlive the process."""

    def __init__(self, path: str | os.PathLike[str], *, busy_timeout: float = 5.0) -> None:
        if busy_timeout < 0:
            raise ValueError(f"busy_timeout must be 0 or more seconds, got {busy_timeout!r}")
        self.path = os.fspath(path)
        """The database file."""
        self.busy_timeout = busy_timeout
        """Seconds a statement waits for another connection's write lock."""
        self._db: aiosqlite.Connection | None = None
        self._watch: FileWatch | None = None
        self._opening = asyncio.Lock()
        # The connection is shared: a transaction holds it, so that no other statement
        # slips in between its BEGIN and its COMMIT.
        self._using = asyncio.Lock()

    # -- lifecycle ---------------------------------------------------------------------------

    async def open(self) -> None:
        """Connect and create the tables that are missing; does nothing when open.

        Raises:
            StoreUnavailableError: the file cannot be opened or written.
        """
        await self._connection()

    async def close(self) -> None:
        """Close the connection; a later call opens it again."""
        db, self._db, self._watch = self._db, None, None
        if db is not None:
            await db.close()

    async def _connection(self) -> tuple[aiosqlite.Connection, FileWatch]:
        async with self._opening:
            if self._db is None or self._watch is None:
                self._db = await connect(self.path, self.busy_timeout)
                self._watch = FileWatch(self.path)
            return self._db, self._watch

    @asynccontextmanager
    async def _held(
        self, *, for_read: bool = False
    ) -> AsyncIterator[tuple[aiosqlite.Connection, FileWatch]]:
        """The connection, held for one statement or one transaction, its files checked.

        Raises:
            StoreUnavailableError: a file of the database moved (what the connection's log
                held is saved first).
        """
        db, watch = (
            (self._db, self._watch)
            if self._db is not None and self._watch is not None
            else await self._connection()
        )
        async with self._using:
            moved = watch.moved(for_read=for_read)
            if moved is not None:
                await self._refuse(db, watch, moved)
            yield db, watch

    async def _run(
        self, sql: str, params: Sequence[Any] = (), *, read: bool = False
    ) -> list[rows.Row]:
        """Run one statement (committed on its own when it writes) and return its rows.

        Raises:
            StoreUnavailableError: SQLite failed, or a file of the database moved.
        """
        async with self._held(for_read=read) as (db, watch):
            try:
                found = list(await db.execute_fetchall(sql, params))
            except (sqlite3.IntegrityError, sqlite3.ProgrammingError):
                raise
            except sqlite3.DatabaseError as error:
                raise unavailable(self.path, self.busy_timeout, error) from error
            if not read:
                await self._keep(db, watch)
        return found

    @asynccontextmanager
    async def _transaction(self, missing: str) -> AsyncIterator[aiosqlite.Connection]:
        """One write transaction: committed when the block ends, else rolled back.

        Raises:
            KeyError: a parent row is missing; ``missing`` says which (nothing is written).
            StoreUnavailableError: SQLite failed, or a file of the database moved.
        """
        async with self._held() as (db, watch):
            try:
                await db.execute_fetchall("BEGIN IMMEDIATE")
                try:
                    yield db
                    await db.execute_fetchall("COMMIT")
                except BaseException:
                    # A COMMIT cut short may have landed already: then there is nothing to undo.
                    with suppress(sqlite3.Error):
                        await db.execute_fetchall("ROLLBACK")
                    raise
            except sqlite3.IntegrityError as error:
                if "FOREIGN KEY" not in str(error):
                    raise
                raise KeyError(missing) from None
            except sqlite3.ProgrammingError:
                raise
            except sqlite3.DatabaseError as error:
                raise unavailable(self.path, self.busy_timeout, error) from error
            await self._keep(db, watch)

    async def _keep(self, db: aiosqlite.Connection, watch: FileWatch) -> None:
        """After a write: when a file moved while it ran, keep it only if it is copied in."""
        moved = watch.moved()
        if moved is None:
            return
        if not await watch.rescue(db, moved):
            await self._refuse(db, watch, moved)
        logger.warning(
            "%r moved while room store %r wrote to it; the write was copied into the "
            "database file and the store reopens its files at its next use",
            moved,
            self.path,
        )
        await self._drop(db)

    async def _refuse(self, db: aiosqlite.Connection, watch: FileWatch, moved: str) -> NoReturn:
        """Save what the connection's log holds, drop the connection, and refuse the call."""
        rescued = await watch.rescue(db, moved)
        await self._drop(db)
        raise watch.refusal(moved, rescued=rescued, store="Room store")

    async def _drop(self, db: aiosqlite.Connection) -> None:
        """Close ``db`` unless another call replaced it already; the next call reconnects."""
        async with self._opening:
            if self._db is not db:
                return
            self._db = self._watch = None
        # Statements queued on it before run first; a close that fails changes nothing.
        with suppress(sqlite3.Error, ValueError):
            await db.close()

    async def _run_under(self, sql: str, params: Sequence[Any], missing: str) -> None:
        """Run a write whose parent row must exist; ``KeyError(missing)`` when it does not."""
        try:
            await self._run(sql, params)
        except sqlite3.IntegrityError as error:
            if "FOREIGN KEY" not in str(error):
                raise
            raise KeyError(missing) from None

    # -- rooms, rosters, bindings --------------------------------------------------------------

    async def create_room(self, room: Room) -> None:
        """Store a new room.

        Raises:
            ValueError: a room with this id exists.
            TypeError: the metadata is not JSON-ready.
        """
        try:
            await self._run(rows.INSERT_ROOM, rows.room_params(room))
        except sqlite3.IntegrityError:
            raise ValueError(f"Room {room.id!r} already exists") from None

    async def get_room(self, room_id: str) -> Room | None:
        """The room with this id, or ``None``."""
        found = await self._run(rows.GET_ROOM, (room_id,), read=True)
        return rows.room_from(found[0]) if found else None

    async def add_participant(self, participant: Participant) -> None:
        """Add someone to a room's roster; the first record of a participant is kept.

        Raises:
            KeyError: no such room.
        """
        await self._run_under(
            rows.INSERT_PARTICIPANT,
            rows.participant_params(participant),
            _no_room(participant.room_id),
        )

    async def list_participants(self, room_id: str) -> list[Participant]:
        """The room's roster, in the order people joined."""
        return [
            rows.participant_from(r)
            for r in await self._run(rows.LIST_PARTICIPANTS, (room_id,), read=True)
        ]

    async def add_binding(self, binding: ChannelBinding) -> None:
        """Attach a channel to a room; attaching it again replaces the binding in place.

        Raises:
            KeyError: no such room.
            TypeError: the metadata is not JSON-ready.
        """
        params = rows.binding_params(binding)
        await self._run_under(rows.UPSERT_BINDING, params, _no_room(binding.room_id))

    async def remove_binding(self, room_id: str, channel_id: str) -> bool:
        """Detach a channel from a room; ``False`` when it was not attached."""
        return bool(await self._run(rows.DELETE_BINDING, (room_id, channel_id)))

    async def list_bindings(self, room_id: str) -> list[ChannelBinding]:
        """The room's bindings, in the order the channels were first attached."""
        return [
            rows.binding_from(r) for r in await self._run(rows.LIST_BINDINGS, (room_id,), read=True)
        ]

    async def rooms_for_channel(self, channel_id: str) -> list[str]:
        """The ids of the rooms the channel is attached to, oldest room first."""
        return [r[0] for r in await self._run(rows.ROOMS_FOR_CHANNEL, (channel_id,), read=True)]

    # -- history -------------------------------------------------------------------------------

    async def add_event(self, event: RoomEvent) -> None:
        """Append an event to its room's history; it keeps its id.

        Raises:
            KeyError: no such room.
            TypeError: the metadata is not JSON-ready.
        """
        params = rows.event_params(event)
        await self._run_under(rows.INSERT_EVENT, params, _no_room(event.room_id))

    async def list_events(self, room_id: str, offset: int = 0, limit: int = 50) -> list[RoomEvent]:
        """The room's events, oldest first, from ``offset``, at most ``limit``."""
        if limit <= 0:
            return []
        found = await self._run(rows.LIST_EVENTS, (room_id, limit, max(offset, 0)), read=True)
        return [rows.event_from(r) for r in found]

    async def recent_events(self, room_id: str, limit: int) -> list[RoomEvent]:
        """The last ``limit`` events of the room, oldest first (an index read of ``limit``)."""
        if limit <= 0:
            return []
        newest_first = await self._run(rows.RECENT_EVENTS, (room_id, limit), read=True)
        return [rows.event_from(r) for r in reversed(newest_first)]

    # -- turn journal --------------------------------------------------------------------------

    async def record_inbound(self, event: RoomEvent, turns: Sequence[OpenTurn]) -> None:
        """Append ``event`` to its room's history and begin ``turns``, in one transaction.

        Raises:
            KeyError: no such room (nothing is written).
            TypeError: the metadata or a turn's state is not JSON-ready.
        """
        params = rows.event_params(event)
        begun = [rows.turn_params(turn) for turn in turns]
        async with self._transaction(_no_room(event.room_id)) as db:
            await db.execute_fetchall(rows.INSERT_EVENT, params)
            for turn in begun:
                await db.execute_fetchall(rows.UPSERT_TURN, turn)

    async def begin_turn(self, turn: OpenTurn) -> None:
        """Record a turn as started.

        A turn begun again (re-driven after a restart) has its record replaced and keeps its
        place among the open turns and the steps already recorded.

        Raises:
            TypeError: the state is not JSON-ready.
        """
        await self._run(rows.UPSERT_TURN, rows.turn_params(turn))

    async def record_step(self, turn_id: str, step: JournalStep) -> None:
        """Record a step; a step with the same index is replaced.

        Raises:
            KeyError: the turn was not begun, or has ended.
            TypeError: the payload is not JSON-ready.
        """
        missing = f"No open turn {turn_id!r}: call begin_turn() first"
        await self._run_under(rows.UPSERT_STEP, rows.step_params(turn_id, step), missing)

    async def steps(self, turn_id: str) -> list[JournalStep]:
        """The turn's steps, by index."""
        return [
            rows.step_from(r, turn_id)
            for r in await self._run(rows.LIST_STEPS, (turn_id,), read=True)
        ]

    async def finish_turn(self, turn_id: str, reply: RoomEvent | None) -> bool:
        """End the turn and append ``reply`` (if any), in one transaction.

        Returns ``False``, writing nothing, when the turn is not open.

        Raises:
            KeyError: the reply's room does not exist (nothing is written).
            TypeError: the reply's metadata is not JSON-ready.
        """
        params = None if reply is None else rows.event_params(reply)
        missing = _no_room(reply.room_id if reply is not None else "")
        async with self._transaction(missing) as db:
            if not await db.execute_fetchall(rows.DELETE_TURN, (turn_id,)):
                return False
            if params is not None:
                await db.execute_fetchall(rows.INSERT_EVENT, params)
        return True

    async def end_turn(self, turn_id: str) -> None:
        """Forget the turn and its steps without a reply, in one statement; an unknown id
        is ignored."""
        await self._run(rows.DELETE_TURN, (turn_id,))

    async def open_turns(self) -> list[OpenTurn]:
        """The turns begun and not ended, oldest first."""
        return [rows.turn_from(r) for r in await self._run(rows.OPEN_TURNS, read=True)]


def _no_room(room_id: str) -> str:
    return f"No room {room_id!r} in the store: create it first"
