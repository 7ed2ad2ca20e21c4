"""Rooms, rosters, bindings, history and the turn journal in a PostgreSQL database.

:class:`PostgresRoomStore` keeps what :class:`~roomkit.core.sqlite_store.SQLiteRoomStore`
keeps, in tables of a PostgreSQL schema, and records the turns in flight
(:class:`~roomkit.core.store.TurnJournal`) so that a restarted process can finish them. Any
number of processes share it (agents writing, a desk reading rosters), and the schema may be
the one a :class:`~roomkit.tools.human_input.stores.postgres.PostgresStore` uses: the
tables here are prefixed ``roomkit_`` and none is shared.

Every write commits before it returns (autocommit on a pooled connection); the two writes
that must not be split (a message with the turns it starts, a turn's end with its reply) are
one transaction each.

Needs the ``postgres`` extra (``pip install roomkit-hitl[postgres]``)::

    async with PostgresRoomStore("postgresql://app:secret@db.internal/app") as rooms:
        kit = RoomKit(store=rooms)
"""

from __future__ import annotations

from collections.abc import Sequence
from types import TracebackType
from typing import Any, Self

import psycopg
from psycopg import AsyncConnection
from psycopg_pool import AsyncConnectionPool

from roomkit.core import _sqlite_rows as rows
from roomkit.core._postgres_rooms import VERSION, RoomStatements
from roomkit.core.postgres_link import Link, check_dsn, check_schema_name, migrate
from roomkit.core.store import JournalStep, OpenTurn
from roomkit.models import room as room_model
from roomkit.models.room import ChannelBinding, Participant, Room, RoomEvent

__all__ = ["PostgresRoomStore"]


class PostgresRoomStore:
    """A :class:`~roomkit.core.store.RoomStore` and turn journal in a PostgreSQL database.

    The store connects on first use, or with :meth:`open` / ``async with``; the tables are
    created (or migrated) then. Events keep their ids and are listed in the order they were
    added; opening the store makes the ids of events created from then on exceed every
    stored id.

    Args:
        dsn_or_pool: a ``postgresql://`` / ``postgres://`` URL or ``key=value`` string (the
            store's own pool), or a ``psycopg_pool.AsyncConnectionPool`` (borrowed).
        schema: the PostgreSQL schema of the tables; created if missing.
        pool_size: the most connections the store's own pool opens.
        connect_timeout: seconds a connection may take to open, and, after a fault, a call
            may wait for one of the pool's (a busy pool lets calls queue for longer).

    Raises:
        TypeError, ValueError: an argument is not one the store takes.
    """

    durable = True
    """Rooms, history and open turns outlive the process."""

    def __init__(
        self,
        dsn_or_pool: str | AsyncConnectionPool[Any],
        *,
        schema: str = "public",
        pool_size: int = 8,
        connect_timeout: float = 5.0,
    ) -> None:
        target = (
            dsn_or_pool if isinstance(dsn_or_pool, AsyncConnectionPool) else check_dsn(dsn_or_pool)
        )
        if isinstance(pool_size, bool) or not isinstance(pool_size, int) or pool_size < 1:
            raise ValueError(f"pool_size must be an int >= 1, got {pool_size!r}")
        self.schema = check_schema_name(schema)
        """The PostgreSQL schema of the tables."""
        self._sql = RoomStatements(self.schema)
        self._link = Link(
            target, self._prepare, pool_size=pool_size, connect_timeout=connect_timeout
        )
        self.where = self._link.where
        """The server and database, without the password."""

    # -- lifecycle ---------------------------------------------------------------------------

    async def open(self) -> None:
        """Connect, and create or migrate the tables; does nothing when open.

        Raises:
            StoreError: the server, the user, the password or the database is wrong.
            StoreFormatError: the tables were made by a newer version of roomkit.
        """
        await self._link.open()

    async def close(self) -> None:
        """Close the store's own pool; a later call opens it again."""
        await self._link.close()

    async def __aenter__(self) -> Self:
        await self.open()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        await self.close()

    async def _prepare(self, db: AsyncConnection[Any], where: str) -> None:
        await migrate(db, self._sql, where=where, version=VERSION)
        cursor = await db.execute(self._sql.last_event_id)
        row = await cursor.fetchone()
        room_model.reserve_event_ids(int(row[0]) if row is not None else 0)

    async def _run(
        self, statement: str, params: Sequence[Any] = (), *, missing: str = ""
    ) -> list[Any]:
        """Run one statement, committed on its own, and return its rows.

        Raises:
            KeyError: a parent row is missing; ``missing`` says which (nothing is written).
            StoreUnavailableError: the server did not answer.
        """
        try:
            async with self._link.connection() as db:
                cursor = await db.execute(statement, params)
                return list(await cursor.fetchall()) if cursor.description else []
        except psycopg.errors.ForeignKeyViolation:
            raise KeyError(missing) from None

    # -- rooms, rosters, bindings --------------------------------------------------------------

    async def create_room(self, room: Room) -> None:
        """Store a new room.

        Raises:
            ValueError: a room with this id exists.
            TypeError: the metadata is not JSON-ready.
        """
        try:
            await self._run(self._sql.insert_room, rows.room_params(room))
        except psycopg.errors.UniqueViolation:
            raise ValueError(f"Room {room.id!r} already exists") from None

    async def get_room(self, room_id: str) -> Room | None:
        """The room with this id, or ``None``."""
        found = await self._run(self._sql.get_room, (room_id,))
        return rows.room_from(found[0]) if found else None

    async def add_participant(self, participant: Participant) -> None:
        """Add someone to a room's roster; the first record of a participant is kept.

        Raises:
            KeyError: no such room.
        """
        params = rows.participant_params(participant)
        await self._run(self._sql.insert_participant, params, missing=_no_room(participant.room_id))

    async def list_participants(self, room_id: str) -> list[Participant]:
        """The room's roster, in the order people joined."""
        found = await self._run(self._sql.list_participants, (room_id,))
        return [rows.participant_from(r) for r in found]

    async def add_binding(self, binding: ChannelBinding) -> None:
        """Attach a channel to a room; attaching it again replaces the binding in place.

        Raises:
            KeyError: no such room.
            TypeError: the metadata is not JSON-ready.
        """
        params = rows.binding_params(binding)
        await self._run(self._sql.upsert_binding, params, missing=_no_room(binding.room_id))

    async def remove_binding(self, room_id: str, channel_id: str) -> bool:
        """Detach a channel from a room; ``False`` when it was not attached."""
        return bool(await self._run(self._sql.delete_binding, (room_id, channel_id)))

    async def list_bindings(self, room_id: str) -> list[ChannelBinding]:
        """The room's bindings, in the order the channels were first attached."""
        return [rows.binding_from(r) for r in await self._run(self._sql.list_bindings, (room_id,))]

    async def rooms_for_channel(self, channel_id: str) -> list[str]:
        """The ids of the rooms the channel is attached to, oldest room first."""
        return [r[0] for r in await self._run(self._sql.rooms_for_channel, (channel_id,))]

    # -- history -------------------------------------------------------------------------------

    async def add_event(self, event: RoomEvent) -> None:
        """Append an event to its room's history; it keeps its id.

        Raises:
            KeyError: no such room.
            TypeError: the metadata is not JSON-ready.
        """
        params = rows.event_params(event)
        await self._run(self._sql.insert_event, params, missing=_no_room(event.room_id))

    async def list_events(self, room_id: str, offset: int = 0, limit: int = 50) -> list[RoomEvent]:
        """The room's events, oldest first, from ``offset``, at most ``limit``."""
        if limit <= 0:
            return []
        found = await self._run(self._sql.list_events, (room_id, limit, max(offset, 0)))
        return [rows.event_from(r) for r in found]

    async def recent_events(self, room_id: str, limit: int) -> list[RoomEvent]:
        """The last ``limit`` events of the room, oldest first."""
        if limit <= 0:
            return []
        newest_first = await self._run(self._sql.recent_events, (room_id, limit))
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
        try:
            async with self._link.connection() as db, db.transaction():
                await db.execute(self._sql.insert_event, params)
                for turn in begun:
                    await db.execute(self._sql.upsert_turn, turn)
        except psycopg.errors.ForeignKeyViolation:
            raise KeyError(_no_room(event.room_id)) from None

    async def begin_turn(self, turn: OpenTurn) -> None:
        """Record a turn as started; begun again, it keeps its place and its steps.

        Raises:
            TypeError: the state is not JSON-ready.
        """
        await self._run(self._sql.upsert_turn, rows.turn_params(turn))

    async def record_step(self, turn_id: str, step: JournalStep) -> None:
        """Record a step; a step with the same index is replaced.

        Raises:
            KeyError: the turn was not begun, or has ended.
            TypeError: the payload is not JSON-ready.
        """
        missing = f"No open turn {turn_id!r}: call begin_turn() first"
        await self._run(self._sql.upsert_step, rows.step_params(turn_id, step), missing=missing)

    async def steps(self, turn_id: str) -> list[JournalStep]:
        """The turn's steps, by index."""
        found = await self._run(self._sql.list_steps, (turn_id,))
        return [rows.step_from(r, turn_id) for r in found]

    async def finish_turn(self, turn_id: str, reply: RoomEvent | None) -> bool:
        """End the turn and append ``reply`` (if any), in one transaction.

        Returns ``False``, writing nothing, when the turn is not open.

        Raises:
            KeyError: the reply's room does not exist (nothing is written).
            TypeError: the reply's metadata is not JSON-ready.
        """
        params = None if reply is None else rows.event_params(reply)
        try:
            async with self._link.connection() as db, db.transaction():
                cursor = await db.execute(self._sql.delete_turn, (turn_id,))
                if await cursor.fetchone() is None:
                    return False
                if params is not None:
                    await db.execute(self._sql.insert_event, params)
        except psycopg.errors.ForeignKeyViolation:
            raise KeyError(_no_room(reply.room_id if reply is not None else "")) from None
        return True

    async def end_turn(self, turn_id: str) -> None:
        """Forget the turn and its steps without a reply; an unknown id is ignored."""
        await self._run(self._sql.delete_turn, (turn_id,))

    async def open_turns(self) -> list[OpenTurn]:
        """The turns begun and not ended, oldest first."""
        return [rows.turn_from(r) for r in await self._run(self._sql.open_turns)]


def _no_room(room_id: str) -> str:
    return f"No room {room_id!r} in the store: create it first"
