"""Rooms, rosters, bindings, history and the turn journal on a Redis server.

:class:`RedisRoomStore` keeps what :class:`~roomkit.stores.sqlite._rooms.SQLiteRoomStore`
keeps, on a server that processes on many machines share: the agents that run turns, the
desks that read rosters. Each write is one Lua script, so it is atomic on the server
whichever process runs it; the two that must not be split (a message with the turns it
starts, a turn's end with its reply) are one script each, like every other write. The client
sends a command again when a cut connection lost its reply, after the server ran it: each
write finds that it ran already and lands once (:mod:`._room_scripts` says how), so the
caller is told the room it created was created, its turn finished, its binding removed.

The records are as durable as the server is configured to keep them: with ``appendonly yes``
and ``appendfsync always`` a write that returned is on disk and survives a crash of the
server; with ``appendfsync everysec`` (the usual default) up to a second of writes can be
lost, and without persistence a restart loses everything.

The store talks to one server (a primary, with or without replicas): its reads find the
records an index names from the index itself, which Redis Cluster does not allow.

Needs the ``redis`` extra (``pip install -e '.[redis]'`` in roomkit's checkout).
"""

from __future__ import annotations

import secrets
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from roomkit.core.exceptions import TurnNotOpenError
from roomkit.core.lifecycle import Opened
from roomkit.core.store import JournalStep, OpenTurn
from roomkit.models.event_ids import has_event_node, reserve_event_ids
from roomkit.models.room import ChannelBinding, Participant, Room, RoomEvent
from roomkit.models.shown import shown
from roomkit.stores._opening import SharedOpening
from roomkit.stores._url import request_store
from roomkit.stores.redis import _link as link
from roomkit.stores.redis import _room_records as records
from roomkit.stores.redis import _room_scripts as scripts
from roomkit.stores.redis._link import DEFAULT_URL
from roomkit.stores.redis._pools import opening, shut
from roomkit.stores.redis._room_calls import STORE, Refused, RoomScripts

if TYPE_CHECKING:
    from redis.asyncio import Redis

    from roomkit.stores.redis._requests import RedisStore

__all__ = ["DEFAULT_URL", "RedisRoomStore"]

T = TypeVar("T")


class RedisRoomStore(Opened):
    """A :class:`~roomkit.core.store.RoomStore` and turn journal on a Redis server.

    The store connects on first use, or with :meth:`open` / ``async with``; opening it checks
    the format version its keys were written in (claiming an empty database for this one)
    and makes the ids of events created from then on exceed every stored id, so a restarted
    process neither reuses an id nor sorts a new event before an old one; it also gives the
    process the node number that keeps its event ids apart from those of the other processes
    on the store.

    Args:
        url: the server, as a ``redis://``, ``rediss://`` or ``unix://`` URL (the client's
            options such as ``?socket_timeout=2`` go in its query, and so may the store's
            ``timeout``: ``?timeout=2``). The default is ``redis://127.0.0.1:6379/0``.
        client: an existing ``redis.asyncio.Redis`` client to use instead of ``url``; the
            store does not close it. The store reads replies as bytes: given a client made
            with ``decode_responses=True``, it uses a client of its own instead, with the
            same connection settings and a pool of the same kind, which it closes.
        prefix: the first part of every key (``<prefix>:rooms:...``), so that several stores
            share one database; a pending-request store with the same prefix uses other keys.
        timeout: seconds any call waits for the server (connecting and the client's own
            retries included) before it raises StoreUnavailableError saying the server did
            not answer. ``None`` (the default) takes the URL's ``?timeout=``, else 5 s.

    Raises:
        TypeError: both ``url`` and ``client`` are given, or one has the wrong type.
        ValueError: the URL is not a Redis URL, ``prefix`` is empty, ``timeout`` (the
            argument or the URL's) is not a positive number of seconds, or is given both
            ways, or the client decodes replies on a pool the store cannot copy without
            decoding (a subclass of redis-py's pools): pass one made with
            ``decode_responses=False``.

    ::

        kit = RoomKit(store=RedisRoomStore("redis://cache.internal:6379/2"))
    """

    durable = True
    """Rooms, history and open turns outlive the process."""

    def __init__(
        self,
        url: str | None = None,
        *,
        client: Redis | None = None,
        prefix: str = "roomkit",
        timeout: float | None = None,
    ) -> None:
        if not isinstance(prefix, str) or not prefix:
            raise ValueError(f"prefix must be a non-empty str, got {prefix!r}")
        url, timeout = link.store_timeout(url, timeout)
        self.timeout = timeout
        """Seconds a call waits for the server before it counts as not answering."""
        self._client, self._owned = link.connect(url, client, store="RedisRoomStore")
        self.prefix = prefix
        """The first part of every key."""
        self._where = link.describe(self._client)
        self._keys = records.Layout(prefix)
        self._run = RoomScripts(
            self._client, where=self._where, prefix=prefix, timeout=self.timeout
        )
        self._opened = False
        self._opening = SharedOpening()

    @classmethod
    def beside(cls, store: RedisStore) -> RedisRoomStore:
        """The room store on ``store``'s client, key prefix and timeout.

        The two stores share one client, and so one pool of connections (what
        :func:`roomkit.stores.open_url` opens); the client stays ``store``'s: closing the
        room store leaves it open, and :meth:`~RedisStore.close` closes it.

        Args:
            store: the pending-request store whose client and prefix the room store uses.

        Raises:
            TypeError: ``store`` is not a :class:`~roomkit.stores.redis.RedisStore`.
        """
        from roomkit.stores.redis._requests import RedisStore

        store = request_store(store, RedisStore)
        # The back end's parts share its client.
        return cls(client=store._client, prefix=store.prefix, timeout=store.timeout)

    @property
    def where(self) -> str:
        """The server, as a URL without its password."""
        return self._where

    # -- lifecycle ---------------------------------------------------------------------------

    async def open(self) -> None:
        """Check the store's format version and reserve event ids; does nothing when open.

        Raises:
            StoreFormatError: the keys under this prefix were written in another format.
            StoreUnavailableError: the server cannot be reached.
        """
        if self._owned:
            # Open again: the connections given back from now on stay in the pool.
            shut(self._client, False)
        if not self._opened:
            await self._opening.join(self._open_once)

    async def _open_once(self) -> None:
        """The opening itself: the keys' format checked, the event ids reserved. One that
        fails leaves no connection of the store's own open."""
        # A node for this process's event ids is taken only when it has none yet.
        take = "0" if has_event_node() else "1"
        keys = [self._keys.last_event, self._keys.event_nodes]
        async with opening(self._client, owned=self._owned):
            [_, last_event_id, node] = await self._run.write(scripts.OPEN, keys, [take])
        reserve_event_ids(int(last_event_id), node=int(node) if take == "1" else None)
        self._opened = True

    async def close(self) -> None:
        """Disconnect the store's own client (made from the URL, or beside a given client
        that decodes replies; a given client stays open); a later call connects again."""
        self._opened = False
        if self._owned:
            # A call in flight goes on, and gives back its connection once it ends: closed
            # then. A client the store was given is its owner's to close, pool and all.
            shut(self._client, True)
            await self._client.aclose(close_connection_pool=True)

    async def _read(self, source: str, keys: list[str], args: list[Any]) -> list[Any]:
        await self.open()
        return await self._run.read(source, keys, args)

    # -- rooms, rosters, bindings --------------------------------------------------------------

    async def create_room(self, room: Room) -> None:
        """Store a new room.

        Raises:
            ValueError: a room with this id exists.
            TypeError: the metadata is not JSON-ready.
        """
        record = records.encode_room(room, secrets.token_hex(8))
        await self.open()
        keys = [self._keys.all, self._keys.seq, self._keys.room(room.id)]
        try:
            await self._run.write(scripts.CREATE_ROOM, keys, [room.id, record])
        except Refused:
            raise ValueError(f"Room {room.id!r} already exists") from None

    async def get_room(self, room_id: str) -> Room | None:
        """The room with this id, or ``None``.

        Raises:
            StoreUnavailableError: the server cannot be reached.
        """
        await self.open()
        async with link.guard(self._where, within=self.timeout, store=STORE):
            raw = await self._client.get(self._keys.room(room_id))
        return None if raw is None else records.decode_room(raw, room_id)

    async def add_participant(self, participant: Participant) -> None:
        """Add someone to a room's roster; the first record of a participant is kept.

        Raises:
            KeyError: no such room.
        """
        room_id = participant.room_id
        record = records.encode_participant(participant)
        await self.open()
        keys = [self._keys.all, self._keys.seq, *self._keys.roster(room_id)]
        await self._under_room(
            scripts.ADD_PARTICIPANT, keys, [room_id, participant.id, record], room_id
        )

    async def list_participants(self, room_id: str) -> list[Participant]:
        """The room's roster, in the order people joined.

        Raises:
            StoreUnavailableError: the server cannot be reached.
        """
        return await self._ordered(self._keys.roster(room_id), records.decode_participant, room_id)

    async def add_binding(self, binding: ChannelBinding) -> None:
        """Attach a channel to a room; attaching it again replaces the binding in place.

        Raises:
            KeyError: no such room.
            TypeError: the metadata is not JSON-ready.
        """
        room_id, channel_id = binding.room_id, binding.channel_id
        record = records.encode_binding(binding)
        await self.open()
        keys = [
            self._keys.all,
            self._keys.seq,
            *self._keys.bindings(room_id),
            self._keys.channel(channel_id),
        ]
        await self._under_room(scripts.ADD_BINDING, keys, [room_id, channel_id, record], room_id)

    async def remove_binding(self, room_id: str, channel_id: str) -> bool:
        """Detach a channel from a room; ``False`` when it was not attached.

        Raises:
            StoreUnavailableError: the server cannot be reached.
        """
        await self.open()
        keys = [*self._keys.bindings(room_id), self._keys.channel(channel_id)]
        reply = await self._run.write(
            scripts.REMOVE_BINDING, keys, [room_id, channel_id], once=True
        )
        return bool(int(reply[1]))

    async def list_bindings(self, room_id: str) -> list[ChannelBinding]:
        """The room's bindings, in the order the channels were first attached.

        Raises:
            StoreUnavailableError: the server cannot be reached.
        """
        return await self._ordered(self._keys.bindings(room_id), records.decode_binding, room_id)

    async def rooms_for_channel(self, channel_id: str) -> list[str]:
        """The ids of the rooms the channel is attached to, oldest room first.

        Raises:
            StoreUnavailableError: the server cannot be reached.
        """
        await self.open()
        async with link.guard(self._where, within=self.timeout, store=STORE):
            found = await self._client.zrange(self._keys.channel(channel_id), 0, -1)
        return [link.text(room_id) for room_id in found]

    async def _ordered(
        self, keys: tuple[str, str], decode: Callable[[Any, str], T], room_id: str
    ) -> list[T]:
        """A room's roster or bindings (``keys``: the records' hash and their order), decoded
        in the order they were first added."""
        hashed, order = keys
        found = await self._read(scripts.READ_ORDERED, [order, hashed], [])
        return [decode(raw, room_id) for raw in found]

    async def _under_room(
        self, source: str, keys: list[str], args: list[Any], room_id: str, *, once: bool = False
    ) -> list[Any]:
        """Run a write whose room must exist (once per token when ``once``); ``KeyError``
        when it does not."""
        try:
            return await self._run.write(source, keys, args, once=once)
        except Refused:
            raise KeyError(_no_room(room_id)) from None

    # -- history -------------------------------------------------------------------------------

    async def add_event(self, event: RoomEvent) -> None:
        """Append an event to its room's history; it keeps its id.

        Raises:
            KeyError: no such room.
            TypeError: the metadata is not JSON-ready.
        """
        record = records.encode_event(event)
        await self.open()
        keys = [self._keys.all, self._keys.events(event.room_id), self._keys.last_event]
        args = [event.room_id, event.id, record]
        await self._under_room(scripts.ADD_EVENT, keys, args, event.room_id, once=True)

    async def list_events(self, room_id: str, offset: int = 0, limit: int = 50) -> list[RoomEvent]:
        """The room's events, oldest first, from ``offset``, at most ``limit``.

        Raises:
            StoreUnavailableError: the server cannot be reached.
        """
        if limit <= 0:
            return []
        offset = max(offset, 0)
        return await self._events(room_id, offset, offset + limit - 1)

    async def recent_events(self, room_id: str, limit: int) -> list[RoomEvent]:
        """The last ``limit`` events of the room, oldest first (a read of ``limit``).

        Raises:
            StoreUnavailableError: the server cannot be reached.
        """
        if limit <= 0:
            return []
        return await self._events(room_id, -limit, -1)

    async def _events(self, room_id: str, first: int, last: int) -> list[RoomEvent]:
        await self.open()
        async with link.guard(self._where, within=self.timeout, store=STORE):
            found = await self._client.lrange(self._keys.events(room_id), first, last)
        return [records.decode_event(raw, room_id) for raw in found]

    # -- turn journal --------------------------------------------------------------------------

    async def record_inbound(self, event: RoomEvent, turns: Sequence[OpenTurn]) -> None:
        """Append ``event`` to its room's history and begin ``turns``, in one script.

        Raises:
            KeyError: no such room (nothing is written).
            TypeError: the metadata or a turn's state is not JSON-ready.
        """
        args: list[Any] = [event.room_id, event.id, records.encode_event(event)]
        turn_keys: list[str] = []
        for turn in turns:
            args += [turn.turn_id, records.encode_turn(turn)]
            turn_keys.append(self._keys.turn(turn.turn_id))
        await self.open()
        keys = [
            self._keys.all,
            self._keys.events(event.room_id),
            self._keys.last_event,
            self._keys.turns,
            self._keys.seq,
            *turn_keys,
        ]
        await self._under_room(scripts.RECORD_INBOUND, keys, args, event.room_id, once=True)

    async def begin_turn(self, turn: OpenTurn) -> None:
        """Record a turn as started.

        A turn begun again (re-driven after a restart) has its record replaced and keeps its
        place among the open turns and the steps already recorded.

        Raises:
            TypeError: the state is not JSON-ready.
        """
        record = records.encode_turn(turn)
        await self.open()
        keys = [self._keys.turns, self._keys.seq, self._keys.turn(turn.turn_id)]
        await self._run.write(scripts.BEGIN_TURN, keys, [turn.turn_id, record])

    async def record_step(self, turn_id: str, step: JournalStep) -> None:
        """Record a step; a step with the same index is replaced.

        Raises:
            TurnNotOpenError: the turn was not begun, or has ended (also a ``KeyError``).
            TypeError: the payload is not JSON-ready.
        """
        record = records.encode_step(step)
        await self.open()
        keys = [self._keys.turns, self._keys.steps(turn_id)]
        try:
            await self._run.write(scripts.RECORD_STEP, keys, [turn_id, step.index, record])
        except Refused:
            raise TurnNotOpenError(turn_id) from None

    async def steps(self, turn_id: str) -> list[JournalStep]:
        """The turn's steps, by index.

        Raises:
            StoreUnavailableError: the server cannot be reached.
        """
        await self.open()
        async with link.guard(self._where, within=self.timeout, store=STORE):
            found: dict[Any, Any] = await self._client.hgetall(self._keys.steps(turn_id))
        steps = [records.decode_step(index, raw, turn_id) for index, raw in found.items()]
        return sorted(steps, key=lambda step: step.index)

    async def finish_turn(self, turn_id: str, reply: RoomEvent | None) -> bool:
        """End the turn and append ``reply`` (if any), in one script.

        Returns ``False``, writing nothing, when the turn is not open.

        Raises:
            KeyError: the reply's room does not exist (nothing is written).
            TypeError: the reply's metadata is not JSON-ready.
        """
        keys = [self._keys.turns, self._keys.turn(turn_id), self._keys.steps(turn_id)]
        args: list[Any] = [turn_id]
        if reply is not None:
            args += [reply.room_id, reply.id, records.encode_event(reply)]
            keys += [self._keys.all, self._keys.events(reply.room_id), self._keys.last_event]
        await self.open()
        if reply is None:
            done = await self._run.write(scripts.FINISH_TURN, keys, args, once=True)
        else:
            done = await self._under_room(scripts.FINISH_TURN, keys, args, reply.room_id, once=True)
        return bool(int(done[1]))

    async def renew_turns(self, turns: Sequence[OpenTurn]) -> frozenset[str]:
        """Replace each open turn's state with its ``state`` here (the lease of the process
        running it), in one script; the ids of the turns renewed. A turn not open is left
        out, written nothing; no turns, no write.

        Raises:
            TypeError: a turn's state is not JSON-ready (nothing is written).
            StoreUnavailableError: the server cannot be reached.
        """
        args: list[Any] = []
        for turn in turns:
            args += [turn.turn_id, records.encode_turn(turn)]
        if not args:
            return frozenset()
        await self.open()
        keys = [self._keys.turns, *(self._keys.turn(turn.turn_id) for turn in turns)]
        renewed = await self._run.write(scripts.RENEW_TURNS, keys, args)
        return frozenset(link.text(turn_id) for turn_id in renewed[1:])

    async def end_turn(self, turn_id: str) -> None:
        """Forget the turn and its steps without a reply; an unknown id is ignored.

        Raises:
            StoreUnavailableError: the server cannot be reached.
        """
        await self.open()
        keys = [self._keys.turns, self._keys.turn(turn_id), self._keys.steps(turn_id)]
        await self._run.write(scripts.END_TURN, keys, [turn_id])

    async def open_turns(self) -> list[OpenTurn]:
        """The turns begun and not ended, oldest first.

        Raises:
            StoreUnavailableError: the server cannot be reached.
        """
        found = await self._read(scripts.READ_TURNS, [self._keys.turns], [self._keys.turn("")])
        return [records.decode_turn(raw) for raw in found]


def _no_room(room_id: str) -> str:
    return f"No room {shown(room_id)} in the store: create it first"
