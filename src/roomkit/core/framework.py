"""RoomKit: rooms, their channels, the hook engine and the store, composed.

The kit holds three collaborators: a :class:`~roomkit.core.hooks.HookEngine`, a registry of
channels, and a room store. ``process_inbound`` records a message, runs the room's AI
channels with the sender as the turn's actor, and delivers their replies to the room's
transport channels. On a durable room store the message is recorded together with the turns
it starts, and each turn stores its reply as it ends, so that ``resume_pending`` after a
crash finds every message that still owes a turn and every turn that still owes a reply.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import time
from collections.abc import Awaitable, Callable
from functools import partial
from typing import TYPE_CHECKING, Any, TypeVar, cast

from roomkit.core._answers import settle_answer
from roomkit.core._delivery import check_delivery, deliver_to
from roomkit.core._inbound import channel_room, check_inbound, check_new_room
from roomkit.core._input_required import gate_input_required
from roomkit.core._lanes import TurnLanes
from roomkit.core._leases import Leases
from roomkit.core._resuming import ResumedTurns, resume_turns
from roomkit.core._turns import run_turns
from roomkit.core.hooks import HookEngine, HookRegistrar
from roomkit.core.ports import (
    HumanInputRoute,
    KitChannel,
    announcing_to,
)
from roomkit.core.store import InMemoryStore, RoomStore, turn_journal
from roomkit.models.enums import ChannelType
from roomkit.models.hooks import RoomContext
from roomkit.models.pending_input import PendingInputEvent
from roomkit.models.room import (
    ChannelBinding,
    FrameworkEvent,
    InboundMessage,
    InboundResult,
    Participant,
    Room,
    RoomEvent,
)
from roomkit.models.shown import shown

if TYPE_CHECKING:
    from roomkit.tools.human_input import HumanInputHandler

__all__ = ["RoomKit"]

logger = logging.getLogger("roomkit.framework")

F = TypeVar("F", bound=Callable[..., Any])
Listener = Callable[[FrameworkEvent], Awaitable[None]]


class RoomKit(HookRegistrar):
    """The framework: rooms, channels, hooks and a store.

    Hooks are registered with :meth:`hook` and :meth:`add_hook` (from
    :class:`~roomkit.core.hooks.HookRegistrar`), on the kit's :attr:`hooks` engine.

    Args:
        store: where rooms, rosters, bindings and history live; in memory by default.
        turn_lease: seconds a journalled turn stays leased to this process without a
            renewal (on a durable store; renewed every third of it while the turn runs):
            a process that stops, its turns count as run by no process one lease later.
        clock: seconds since the epoch, read for leases (``time.time``); every process
            sharing the store must agree on it to well within ``turn_lease``.

    Raises:
        ValueError: ``turn_lease`` is not a positive number of seconds.
    """

    def __init__(
        self,
        store: RoomStore | None = None,
        *,
        turn_lease: float = 30.0,
        clock: Callable[[], float] = time.time,
    ) -> None:
        if not turn_lease > 0:
            raise ValueError(f"turn_lease must be more than 0 seconds, got {turn_lease!r}")
        self.store: RoomStore = store if store is not None else InMemoryStore()
        self.leases = Leases(term=turn_lease, clock=clock)
        """The leases of the journalled turns this process runs (read by the doors)."""
        self.resumed = ResumedTurns()
        """The turns ``resume_pending`` re-drives here (a door cuts one it cancels)."""
        self.hooks = HookEngine()
        self._channels: dict[str, KitChannel] = {}
        self._listeners: dict[str, list[Listener]] = {}
        self._human_input: list[HumanInputRoute] = []
        self._lanes = TurnLanes()
        self._closing: asyncio.Task[None] | None = None

    # -- hooks and framework events ----------------------------------------------------------

    def _hook_engine(self) -> HookEngine:
        return self.hooks

    def on(self, event_type: str) -> Callable[[F], F]:
        """Register the decorated ``async def listener(event)`` for a framework event.

        Events: ``"user_input_required"`` (data: pending_id, tool_name, tool_call_id, allowed,
        reason) and ``"before_tool_use"`` (data: tool_name, tool_call_id, allowed, reason).
        """

        def register(fn: F) -> F:
            self._listeners.setdefault(event_type, []).append(fn)
            return fn

        return register

    async def emit(
        self, event_type: str, data: dict[str, Any], *, room_id: str | None = None
    ) -> None:
        """Call the listeners of ``event_type``; a failing listener is logged and skipped."""
        listeners = self._listeners.get(event_type)
        if not listeners:
            return
        event = FrameworkEvent(event_type, data, room_id)
        for listener in list(listeners):
            try:
                await listener(event)
            except Exception:
                logger.exception("Listener %r for %r failed", listener, event_type)

    def has_listeners(self, event_type: str) -> bool:
        """True when someone listens to ``event_type``."""
        return bool(self._listeners.get(event_type))

    # -- channels ----------------------------------------------------------------------------

    def register_channel(self, channel: KitChannel) -> None:
        """Register ``channel`` and wire it to the kit (its human input included).

        A channel that delivers takes ``deliver(event)``, or RoomKit 0.109's
        ``deliver(event, binding, context)``.

        Raises:
            TypeError: ``channel`` is not a channel, or its ``deliver`` takes neither form.
            ValueError: another channel is registered with its id.
        """
        if not isinstance(channel, KitChannel):
            raise TypeError(f"register_channel takes a channel, got {type(channel).__name__}")
        existing = self._channels.get(channel.channel_id)
        if existing is not None and existing is not channel:
            raise ValueError(
                f"A channel with id {channel.channel_id!r} is already registered: "
                "give each channel its own id"
            )
        check_delivery(channel)
        self._channels[channel.channel_id] = channel
        channel.set_framework(self)

    def unregister_channel(self, channel_id: str) -> KitChannel | None:
        """Take the channel with this id out of the registry and return it, or ``None``.

        The channel is not closed (``await channel.close()`` when you are done with it; the
        kit's ``close()`` no longer reaches it) and its room bindings stay. A channel built
        anew and registered under the same id owns the id from then on: the old object's
        ``close()`` withdraws none of the new one's requests.
        """
        return self._channels.pop(channel_id, None)

    def get_channel(self, channel_id: str) -> KitChannel | None:
        """The registered channel with this id, or ``None``."""
        return self._channels.get(channel_id)

    @property
    def channels(self) -> dict[str, KitChannel]:
        """The registered channels, by id."""
        return dict(self._channels)

    def route_human_input(
        self,
        handler: HumanInputRoute,
        channel_id: str,
        *,
        channel_type: ChannelType = ChannelType.AI,
    ) -> int:
        """Send the requests ``handler`` creates for ``channel_id`` to ON_USER_INPUT_REQUIRED.

        Channels given a ``human_input_handler=`` are routed by ``register_channel``; use this
        for a handler you drive yourself (e.g. inside an ``ExternalToolHandler``). Returns the
        registration token for ``handler.close(channel_id=..., registration=token)``.

        Several kits may route one handler under one channel id (a kit per request over a
        shared handler): the last kit to route it takes the id over, and a request created
        in the turn of an earlier kit that is still open goes to that kit's hooks (see
        :meth:`announcing`). Closing a kit withdraws the questions of its own turns and
        leaves the other kits' open.

        Args:
            channel_type: the door of the channel routing the handler. It is checked, not
                kept: each request records the door it came through
                (``PendingInput.channel_type``), and that is what the hooks' ``channel_types``
                filters see, so one handler serving an AI channel and a voice channel fires
                each request with its own door.

        Raises:
            TypeError: ``handler`` is not a human-input handler, or ``channel_type`` is not
                a :class:`~roomkit.models.enums.ChannelType`.
        """
        if not isinstance(handler, HumanInputRoute):
            raise TypeError(
                f"route_human_input takes a HumanInputHandler, got {type(handler).__name__}"
            )
        if not isinstance(channel_type, ChannelType):
            raise TypeError(
                f"channel_type must be a ChannelType (e.g. ChannelType.AI), got {channel_type!r}"
            )
        token = handler.set_on_input_required(channel_id, self._on_input_required)
        if not any(known is handler for known in self._human_input):
            self._human_input.append(handler)
        return token

    def announcing(self) -> contextlib.AbstractContextManager[None]:
        """A context in which new human-input requests go to this kit's hooks.

        A request created inside, on a channel id this kit routes, fires this kit's
        ON_USER_INPUT_REQUIRED even when a later kit routes the same handler under the same
        id. The kit runs its turns (``process_inbound``, ``resume_pending``) and every
        channel its tool calls inside it; enter it yourself around a turn you drive
        outside them. Outside every kit's turn, a request goes to the kit that routed its
        channel id last.
        """
        return announcing_to(self._on_input_required)

    @property
    def human_input_handlers(self) -> list[HumanInputHandler]:
        """The human-input handlers routed in this kit, in the order they were first routed."""
        # The kit holds them by what it needs of them (HumanInputRoute); what is routed is a
        # HumanInputHandler, which is what the callers of this list work with.
        return cast("list[HumanInputHandler]", list(self._human_input))

    async def _on_input_required(self, event: PendingInputEvent) -> bool:
        """Run ON_USER_INPUT_REQUIRED for a new request; ``False`` rejects it."""
        return await gate_input_required(event, self.hooks, self.room_context, self.emit)

    # -- rooms -------------------------------------------------------------------------------

    async def create_room(
        self, room_id: str | None = None, metadata: dict[str, Any] | None = None
    ) -> Room:
        """Create a room (with a fresh id when none is given).

        Raises:
            TypeError: ``room_id`` is neither a ``str`` nor ``None``, or ``metadata`` neither
                a dict nor ``None``.
            InvalidTextError: ``room_id`` holds a lone surrogate.
        """
        check_new_room(room_id, metadata)
        room = Room(room_id or os.urandom(8).hex(), dict(metadata or {}))
        await self.store.create_room(room)
        return room

    async def get_room(self, room_id: str) -> Room:
        """The room with this id.

        Raises:
            KeyError: no such room.
        """
        room = await self.store.get_room(room_id)
        if room is None:
            raise KeyError(f"No room {shown(room_id)}: create it with kit.create_room()")
        return room

    async def attach_channel(
        self,
        room_id: str,
        channel_id: str,
        category: str | None = None,
        metadata: dict[str, Any] | None = None,
        *,
        group: str | None = None,
    ) -> ChannelBinding:
        """Attach a registered channel to a room.

        ``metadata={"tools": [...]}`` offers extra tools to an AI channel's turns in this room.
        ``group`` is kept on the binding (``binding.group``) for the application to read; it
        changes no routing: one binding already serves every speaker in the room.
        """
        if group is not None and not isinstance(group, str):
            raise TypeError(f"group must be a string or None, got {type(group).__name__}")
        await self.get_room(room_id)
        if channel_id not in self._channels:
            raise KeyError(f"No channel {shown(channel_id)}: call kit.register_channel() first")
        binding = ChannelBinding(room_id, channel_id, category, dict(metadata or {}), group)
        await self.store.add_binding(binding)
        return binding

    async def detach_channel(self, room_id: str, channel_id: str) -> bool:
        """Detach a channel from a room; the channel stops its work there.

        A conference detached from a room withdraws that room's open requests. Returns
        ``False`` when the channel was not attached to the room.
        """
        removed = await self.store.remove_binding(room_id, channel_id)
        channel = self._channels.get(channel_id)
        if removed and channel is not None:
            await channel.on_detach(room_id)
        return removed

    async def add_participant(
        self, room_id: str, participant_id: str, *, name: str | None = None
    ) -> Participant:
        """Add someone to a room's roster (senders of inbound messages are added for you)."""
        await self.get_room(room_id)
        participant = Participant(participant_id, room_id, name)
        await self.store.add_participant(participant)
        return participant

    async def room_context(self, room_id: str) -> RoomContext:
        """The room, its roster and bindings, as hooks receive them."""
        room = await self.get_room(room_id)
        return RoomContext(
            room=room,
            participants=tuple(await self.store.list_participants(room_id)),
            bindings=tuple(await self.store.list_bindings(room_id)),
        )

    async def process_inbound(
        self,
        message: InboundMessage,
        *,
        room_id: str | None = None,
        on_recorded: Callable[[RoomEvent], object] | None = None,
        answers: str | None = None,
        text_answers: bool = True,
    ) -> InboundResult:
        """Record ``message``, run the room's AI channels on it, deliver their replies.

        The sender is the turn's actor (``current_tool_actor_id()`` inside tools); an empty
        ``sender_id`` makes an authorless turn. Returns once the turn is done and the replies
        are stored. On a durable room store the message and the turns it starts are stored
        in one write, so a crash at any instant after it leaves them for ``resume_pending``.

        A message from a person an open question waits on may be its answer: when exactly
        one of the sender's open requests in the room takes the text (free text, or one
        option label of a single choice), the message settles it (``aresolve(..., by=
        sender)``), is recorded in the history with ``metadata["answers"]`` set to the
        request's id, and starts no turn (``result.answered``). A channel that runs one turn
        at a time in a room (``AIChannel`` by default) runs this message's turn once the
        turns of the messages before it are done.

        Args:
            on_recorded: called with the message's event once the room store has it, before
                the turn runs (a caller running the turn in the background answers then).
            answers: the id of the open request the message answers, when the sender said.
            text_answers: whether the text may answer one of the sender's open requests
                without ``answers``; ``False`` for a door whose answers come another way
                (an A2A follow-up, an AG-UI resume): the message then starts turns.

        Raises:
            TypeError: ``message`` is no :class:`InboundMessage`, or holds a channel id, a
                sender id or a body that is not a ``str`` (``sender_id=""`` for an authorless
                message); nothing was recorded.
            InvalidTextError: one of those texts holds a lone surrogate; nothing was recorded.
            AmbiguousAnswerError: the text could answer several open requests of the sender
                and ``answers`` names none; nothing was recorded.
            UnknownRequestError, RequestSettledError, InvalidAnswerError: ``answers`` names
                no open request of the sender's that takes this text; nothing was recorded.
        """
        if not isinstance(message, InboundMessage):
            raise TypeError(
                f"process_inbound takes an InboundMessage, got {type(message).__name__}"
            )
        check_inbound(message, room_id)
        if room_id is None:
            room_id = await channel_room(self.store, message.channel_id)
        else:
            await self.get_room(room_id)
        store = self.store
        if message.sender_id:
            await store.add_participant(Participant(message.sender_id, room_id))
        bound = await self._bound_channels(room_id)
        # The surface is the channel's kind ("websocket" for a chat): the history says so.
        door = getattr(self._channels.get(message.channel_id), "channel_type", None)
        answered = None
        if text_answers or answers is not None:
            answered = await settle_answer(
                self._human_input, message, room_id, answers, None if door is None else str(door)
            )
        metadata = (
            message.metadata if answered is None else {**message.metadata, "answers": answered}
        )
        event = RoomEvent(
            room_id, message.channel_id, message.sender_id, message.content, metadata=metadata
        )
        if answered is not None:
            # Stored at once: the turn the settle woke stores its reply after this message.
            await store.add_event(event)
            if on_recorded is not None:
                on_recorded(event)
            await self._deliver(event, bound)
            return InboundResult(event, (), answered=answered)
        responses = await run_turns(
            event,
            bound,
            store=store,
            lanes=self._lanes,
            leases=self.leases,
            deliver=partial(self._deliver, channels=bound),
            announcing=self.announcing,
            on_recorded=on_recorded,
        )
        return InboundResult(event, responses)

    async def resume_pending(self) -> list[RoomEvent]:
        """Re-drive the turns an earlier process left unfinished (call it at start-up).

        With a durable room store (``SQLiteRoomStore``, ``RedisRoomStore``), a message is
        stored together with the turns it starts, each AI turn records its steps as it runs,
        and its reply is stored as it ends. A turn unfinished when the process stopped (even
        killed) runs again from its record: a turn that never started starts from the room's
        history; a turn that was waiting on a person reaches the same tool call, re-attaches
        to the same request by key (the person is not asked twice; an answer given while the
        process was down is used; a question stored but never announced is announced now),
        continues with the answer, and its reply is recorded in the room and delivered like
        any reply. Returns once every re-driven turn is done, which may take as long as the
        people take to answer: run it in a task of its own.
        """
        journal = turn_journal(self.store)
        if journal is None:
            return []
        with self.announcing():
            return await resume_turns(
                journal,
                self._channels,
                self._lanes,
                self._deliver_reply,
                self.leases,
                self.resumed,
            )

    def queued_turns(self, room_id: str, channel_id: str) -> int:
        """How many turns of ``channel_id`` in ``room_id`` run or wait to run (for a
        channel that runs one turn at a time in a room; 0 for any other)."""
        return self._lanes.waiting(room_id, channel_id)

    async def _bound_channels(self, room_id: str) -> list[KitChannel]:
        return [
            self._channels[b.channel_id]
            for b in await self.store.list_bindings(room_id)
            if b.channel_id in self._channels
        ]

    async def _deliver_reply(self, reply: RoomEvent) -> None:
        await self._deliver(reply, await self._bound_channels(reply.room_id))

    async def _deliver(self, event: RoomEvent, channels: list[KitChannel]) -> None:
        await deliver_to(self, event, channels)

    async def close(self) -> None:
        """Close every channel and stop the hook observers.

        The closing runs once, in a task of its own: called from inside a turn it cuts (a
        hook, a tool), it still closes every channel, and the caller sees
        ``CancelledError``. A channel whose ``close()`` raises does not keep the others
        open: each is closed, then the first error is raised.
        """
        closing = self._closing
        if closing is None:
            closing = self._closing = asyncio.get_running_loop().create_task(
                self._close(), name="close:kit"
            )
        await asyncio.shield(closing)

    async def _close(self) -> None:
        failed: BaseException | None = None
        for channel in list(self._channels.values()):
            try:
                await channel.close()
            except Exception as error:
                logger.exception("Channel %r failed to close", channel.channel_id)
                failed = failed or error
        await self.hooks.close()
        self.leases.stop()
        if failed is not None:
            raise failed
