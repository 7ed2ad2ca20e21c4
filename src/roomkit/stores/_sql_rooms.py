"""The room-store methods that are one statement each, shared by the SQL room stores.

:class:`SQLRooms` serves rosters, bindings, history and the turn journal from statements a
store names (:class:`RoomSQL`), run by the store's :meth:`~SQLRooms._read` and
:meth:`~SQLRooms._write`; the SQLite and PostgreSQL room stores differ only in how they
connect, create rooms and run the writes that are one transaction.
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Awaitable, Callable, Sequence
from contextlib import AbstractAsyncContextManager
from typing import Any, Protocol

from roomkit.core.exceptions import TurnNotOpenError
from roomkit.core.lifecycle import Opened
from roomkit.core.store import JournalStep, OpenTurn
from roomkit.models.room import ChannelBinding, Participant, Room, RoomEvent
from roomkit.models.shown import shown
from roomkit.stores import _sql_rows as rows

__all__ = ["RoomSQL", "Run", "SQLRooms", "no_room"]

Run = Callable[[str, Any], Awaitable[list[Any]]]
"""Runs one statement of a transaction and returns its rows."""


class RoomSQL(Protocol):
    """The statements of :class:`SQLRooms`, in a store's SQL dialect."""

    insert_room: str
    get_room: str
    insert_participant: str
    list_participants: str
    upsert_binding: str
    delete_binding: str
    list_bindings: str
    rooms_for_channel: str
    insert_event: str
    list_events: str
    recent_events: str
    upsert_turn: str
    upsert_step: str
    list_steps: str
    renew_turn: str
    renew_turns: str | None
    """One statement renewing many turns, given their ids and their states as two lists;
    ``None`` runs ``renew_turn`` once per turn, in one transaction."""
    delete_turn: str
    open_turns: str


class SQLRooms(Opened):
    """A :class:`~roomkit.core.store.RoomStore` and turn journal whose calls are SQL
    statements; a subclass connects, creates rooms and writes in transactions."""

    durable = True
    """Rooms, history and open turns outlive the process."""

    _sql: RoomSQL
    _taken: type[Exception]
    """What the driver raises when an insert meets a row with the same key."""

    @abstractmethod
    async def _read(self, statement: str, params: Any = ()) -> list[Any]:
        """Run one read and return its rows.

        Raises:
            StoreUnavailableError: the database did not answer.
        """

    @abstractmethod
    async def _write(self, statement: str, params: Any, *, missing: str = "") -> list[Any]:
        """Run one write, committed on its own, and return its rows.

        Raises:
            KeyError: a parent row is missing; ``missing`` says which (nothing is written).
            StoreUnavailableError: the database did not answer.
        """

    @abstractmethod
    def _transaction(self, missing: str) -> AbstractAsyncContextManager[Run]:
        """One write transaction, whose statements run through what it yields: committed
        when the block ends, else rolled back.

        Raises:
            KeyError: a parent row is missing; ``missing`` says which (nothing is written).
            StoreUnavailableError: the database did not answer.
        """

    # -- rooms, rosters, bindings --------------------------------------------------------------

    async def create_room(self, room: Room) -> None:
        """Store a new room.

        Raises:
            ValueError: a room with this id exists.
            TypeError: the metadata is not JSON-ready.
        """
        try:
            await self._write(self._sql.insert_room, rows.room_params(room))
        except self._taken:
            raise ValueError(f"Room {room.id!r} already exists") from None

    async def get_room(self, room_id: str) -> Room | None:
        """The room with this id, or ``None``.

        Raises:
            StoreUnavailableError: the database cannot be reached (the message says why).
        """
        found = await self._read(self._sql.get_room, (room_id,))
        return rows.room_from(found[0]) if found else None

    async def add_participant(self, participant: Participant) -> None:
        """Add someone to a room's roster; the first record of a participant is kept.

        Raises:
            KeyError: no such room.
        """
        missing = no_room(participant.room_id)
        await self._write(
            self._sql.insert_participant, rows.participant_params(participant), missing=missing
        )

    async def list_participants(self, room_id: str) -> list[Participant]:
        """The room's roster, in the order people joined.

        Raises:
            StoreUnavailableError: the database cannot be reached (the message says why).
        """
        found = await self._read(self._sql.list_participants, (room_id,))
        return [rows.participant_from(r) for r in found]

    async def add_binding(self, binding: ChannelBinding) -> None:
        """Attach a channel to a room; attaching it again replaces the binding in place.

        Raises:
            KeyError: no such room.
            TypeError: the binding's metadata is not JSON-ready.
        """
        params = rows.binding_params(binding)
        await self._write(self._sql.upsert_binding, params, missing=no_room(binding.room_id))

    async def remove_binding(self, room_id: str, channel_id: str) -> bool:
        """Detach a channel from a room; ``False`` when it was not attached.

        Raises:
            StoreUnavailableError: the database cannot be reached (the message says why).
        """
        return bool(await self._write(self._sql.delete_binding, (room_id, channel_id)))

    async def list_bindings(self, room_id: str) -> list[ChannelBinding]:
        """The room's bindings, in the order the channels were first attached.

        Raises:
            StoreUnavailableError: the database cannot be reached (the message says why).
        """
        return [rows.binding_from(r) for r in await self._read(self._sql.list_bindings, (room_id,))]

    async def rooms_for_channel(self, channel_id: str) -> list[str]:
        """The ids of the rooms the channel is attached to, oldest room first.

        Raises:
            StoreUnavailableError: the database cannot be reached (the message says why).
        """
        return [r[0] for r in await self._read(self._sql.rooms_for_channel, (channel_id,))]

    # -- history -------------------------------------------------------------------------------

    async def add_event(self, event: RoomEvent) -> None:
        """Append an event to its room's history; it keeps its id.

        Raises:
            KeyError: no such room.
            TypeError: the metadata is not JSON-ready.
        """
        params = rows.event_params(event)
        await self._write(self._sql.insert_event, params, missing=no_room(event.room_id))

    async def list_events(self, room_id: str, offset: int = 0, limit: int = 50) -> list[RoomEvent]:
        """The room's events, oldest first, from ``offset``, at most ``limit``.

        Raises:
            StoreUnavailableError: the database cannot be reached (the message says why).
        """
        if limit <= 0:
            return []
        found = await self._read(self._sql.list_events, (room_id, limit, max(offset, 0)))
        return [rows.event_from(r) for r in found]

    async def recent_events(self, room_id: str, limit: int) -> list[RoomEvent]:
        """The last ``limit`` events of the room, oldest first (an index read of ``limit``).

        Raises:
            StoreUnavailableError: the database cannot be reached (the message says why).
        """
        if limit <= 0:
            return []
        newest_first = await self._read(self._sql.recent_events, (room_id, limit))
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
        async with self._transaction(no_room(event.room_id)) as run:
            await run(self._sql.insert_event, params)
            for turn in begun:
                await run(self._sql.upsert_turn, turn)

    async def begin_turn(self, turn: OpenTurn) -> None:
        """Record a turn as started.

        A turn begun again (re-driven after a restart) has its record replaced and keeps its
        place among the open turns and the steps already recorded.

        Raises:
            TypeError: the state is not JSON-ready.
        """
        await self._write(self._sql.upsert_turn, rows.turn_params(turn))

    async def record_step(self, turn_id: str, step: JournalStep) -> None:
        """Record a step; a step with the same index is replaced.

        Raises:
            TurnNotOpenError: the turn was not begun, or has ended (also a ``KeyError``).
            TypeError: the payload is not JSON-ready.
        """
        try:
            await self._write(self._sql.upsert_step, rows.step_params(turn_id, step))
        except KeyError:
            raise TurnNotOpenError(turn_id) from None

    async def steps(self, turn_id: str) -> list[JournalStep]:
        """The turn's steps, by index.

        Raises:
            StoreUnavailableError: the database cannot be reached (the message says why).
        """
        found = await self._read(self._sql.list_steps, (turn_id,))
        return [rows.step_from(r, turn_id) for r in found]

    async def finish_turn(self, turn_id: str, reply: RoomEvent | None) -> bool:
        """End the turn and append ``reply`` (if any), in one transaction.

        Returns ``False``, writing nothing, when the turn is not open.

        Raises:
            KeyError: the reply's room does not exist (nothing is written).
            TypeError: the reply's metadata is not JSON-ready.
        """
        params = None if reply is None else rows.event_params(reply)
        missing = no_room(reply.room_id if reply is not None else "")
        async with self._transaction(missing) as run:
            if not await run(self._sql.delete_turn, (turn_id,)):
                return False
            if params is not None:
                await run(self._sql.insert_event, params)
        return True

    async def renew_turns(self, turns: Sequence[OpenTurn]) -> frozenset[str]:
        """Replace each open turn's state with its ``state`` here (the lease of the process
        running it), in one transaction; the ids of the turns renewed. A turn not open is
        left out, written nothing; no turns, no write.

        Raises:
            TypeError: a turn's state is not JSON-ready (nothing is written).
            StoreUnavailableError: the database cannot be reached (the message says why).
        """
        renewals = [rows.renew_params(turn) for turn in turns]
        if not renewals:
            return frozenset()
        if self._sql.renew_turns is not None:
            ids, states = [params[1] for params in renewals], [params[0] for params in renewals]
            return frozenset(
                row[0] for row in await self._write(self._sql.renew_turns, (ids, states))
            )
        renewed: set[str] = set()
        async with self._transaction("") as run:
            for params in renewals:
                renewed.update(row[0] for row in await run(self._sql.renew_turn, params))
        return frozenset(renewed)

    async def end_turn(self, turn_id: str) -> None:
        """Forget the turn and its steps without a reply, in one statement; an unknown id
        is ignored.

        Raises:
            StoreUnavailableError: the database cannot be reached (the message says why).
        """
        await self._write(self._sql.delete_turn, (turn_id,))

    async def open_turns(self) -> list[OpenTurn]:
        """The turns begun and not ended, oldest first.

        Raises:
            StoreUnavailableError: the database cannot be reached (the message says why).
        """
        return [rows.turn_from(r) for r in await self._read(self._sql.open_turns)]


def no_room(room_id: str) -> str:
    """What a ``KeyError`` says when the room ``room_id`` is not stored."""
    return f"No room {shown(room_id)} in the store: create it first"
