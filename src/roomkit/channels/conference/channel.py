"""ConferenceChannel: a conference's rooms, with a realtime model and the tools that ask people.

The channel joins the back end's conferences for the rooms it is attached to and follows
them: participants joining go on the room's roster, published audio tracks are subscribed,
and the participant whose audio reaches the channel last is the one the model's calls are
for. With a realtime config plugged, each room runs one session on the config's provider,
started when a participant speaks or when the application asks. The session's tool calls go
through the same pipeline as a voice channel's (declare, validate, gate, serve, report) on
the ``conference`` door: human-input names first, under the handler's own timeout, each
request firing ON_USER_INPUT_REQUIRED for the participant speaking.

The requests still open are withdrawn, and nothing more is submitted to the provider, when
the realtime provider is unplugged, when the channel closes, and when the conference is
detached from a room (for that room).
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING

from roomkit.channels._calls.declare import check_kind, warn_never_offered
from roomkit.channels._voice.live import LiveSession
from roomkit.channels.base import Channel
from roomkit.channels.conference._departures import refuse_departed
from roomkit.channels.conference._follower import Follower, nameable
from roomkit.channels.conference._plugged import Plugged
from roomkit.channels.conference._rooms import ConferenceRoom
from roomkit.channels.conference.config import ConferenceRealtimeConfig
from roomkit.conference.base import ConferenceBackend
from roomkit.core.exceptions import ChannelClosedError, ChannelStateError
from roomkit.models.enums import ChannelType
from roomkit.tools.texts import CHANNEL_CLOSED, DETACHED, SESSION_ENDED, UNPLUGGED
from roomkit.voice.realtime.base import RealtimeSession

if TYPE_CHECKING:
    from roomkit.core.framework import RoomKit

__all__ = ["ConferenceChannel"]

logger = logging.getLogger("roomkit.channels.conference")


class ConferenceChannel(Channel):
    """A conference in rooms, with a realtime model whose tools may ask the participants.

    Args:
        channel_id: the channel's id.
        backend: the conference server the channel joins conferences on.
        realtime: the realtime model and its tools; plugged at once (see
            :meth:`plug_realtime`).
    """

    channel_type = ChannelType.CONFERENCE

    def __init__(
        self,
        channel_id: str,
        *,
        realtime: ConferenceRealtimeConfig | None = None,
        backend: ConferenceBackend,
    ) -> None:
        super().__init__(channel_id)
        check_kind("backend", backend, ConferenceBackend)
        self.backend = backend
        self.closing = False
        """True once ``close()`` started: nothing is joined, plugged or started any more."""
        self._rooms: dict[str, ConferenceRoom] = {}
        self._plugged: Plugged | None = None
        self._warned: set[str] = set()
        self._follower = Follower(self, backend, self._heard, self._left)
        if realtime is not None:
            self.plug_realtime(realtime)

    # -- the realtime config -----------------------------------------------------------------

    @property
    def realtime(self) -> ConferenceRealtimeConfig | None:
        """The plugged realtime config, if any."""
        return self._plugged.config if self._plugged is not None else None

    def set_framework(self, kit: RoomKit) -> None:
        """Wire the channel to ``kit``: its human input to ON_USER_INPUT_REQUIRED."""
        super().set_framework(kit)
        if self._plugged is not None:
            self._route(self._plugged)

    def _route(self, plugged: Plugged) -> None:
        human, kit = plugged.human_input_handler, self._kit
        if human is not None and kit is not None:
            plugged.registration = kit.route_human_input(
                human.handler, self.channel_id, channel_type=ChannelType.CONFERENCE
            )

    def plug_realtime(self, config: ConferenceRealtimeConfig) -> None:
        """Run ``config``'s model in the channel's rooms, serving its tools.

        Sessions start from then on; the human-input handler's requests fire
        ON_USER_INPUT_REQUIRED with ``channel_type=conference``.

        Raises:
            TypeError: ``config`` is not a :class:`ConferenceRealtimeConfig`.
            ChannelStateError: a config is already plugged (unplug it first).
            ChannelClosedError: the channel is closed.
        """
        if not isinstance(config, ConferenceRealtimeConfig):
            raise TypeError(
                f"plug_realtime takes a ConferenceRealtimeConfig, got {type(config).__name__}"
            )
        if self.closing:
            raise ChannelClosedError(f"Channel {self.channel_id} is closed: plug nothing more")
        if self._plugged is not None:
            raise ChannelStateError(
                f"Channel {self.channel_id} already has a realtime provider: "
                "await unplug_realtime() first"
            )
        declared = config.declared_tools()
        human = config.human_input_handler
        if human is not None:
            warn_never_offered(self.channel_id, human.tool_names, declared, self._warned)
        plugged = Plugged(self, config)
        self._route(plugged)
        plugged.listen()
        self._plugged = plugged

    async def unplug_realtime(self) -> None:
        """Stop the realtime model: end every room's session (their requests are withdrawn,
        their calls reported cancelled, nothing more is submitted to the provider). Does
        nothing when no config is plugged."""
        await self._unplug(UNPLUGGED)

    async def _unplug(self, hint: str) -> None:
        plugged = self._plugged
        if plugged is None:
            return
        self._plugged = None
        rooms = [room for room in self._rooms.values() if room.live is not None]
        if rooms:
            await asyncio.gather(*(self._end(room, hint) for room in rooms))
        plugged.deafen()
        human = plugged.human_input_handler
        if human is not None:
            await human.handler.close(channel_id=self.channel_id, registration=plugged.registration)

    # -- sessions ----------------------------------------------------------------------------

    @property
    def sessions(self) -> list[RealtimeSession]:
        """The rooms' realtime sessions taking calls now."""
        return [room.live.session for room in self._rooms.values() if room.live and room.open]

    def realtime_session(self, room_id: str) -> RealtimeSession | None:
        """The realtime session of ``room_id`` while it takes calls, else ``None``."""
        room = self._rooms.get(room_id)
        return room.live.session if room is not None and room.live and room.open else None

    async def start_realtime(self, room_id: str) -> RealtimeSession:
        """Start the realtime session of ``room_id``, or return the one running.

        A participant speaking starts it too. Until someone speaks, its calls are for nobody
        (``actor_id`` is ``None``). A session ended while it starts (unplugged, detached) is
        returned ended.

        Raises:
            ChannelStateError: no realtime config is plugged.
            ChannelNotRegisteredError: the channel is not registered.
            ChannelClosedError: the channel is closed.
            KeyError: no such room, or the channel is not attached to it.
        """
        self._check_open()
        self._realtime_plugged()
        record = await self.attached_room(room_id)
        room = self._rooms.setdefault(room_id, ConferenceRoom(room_id))
        async with room.starting:
            plugged = self._realtime_plugged()
            live = room.live
            if live is not None:
                if live.open and room.plugged is plugged:
                    return live.session
                # A session whose model was lost takes no call: replace it.
                await self._end(room, SESSION_ENDED)
            tools = plugged.config.declared_tools()
            metadata = {"conference_id": room.conference_id} if room.conference_id else None
            session = RealtimeSession.new(room_id, "", self.channel_id, metadata)
            live = LiveSession(session, record, tools)
            # Nobody's audio has reached the new session yet: its calls are for nobody.
            room.live, room.plugged, room.speaker = live, plugged, None
            plugged.rooms[session.id] = room
            try:
                await live.connect(plugged.provider, plugged.config.system_prompt)
            except BaseException as exc:
                if room.live is not live:
                    # Ended while it started (unplugged, detached, closed): the failure was
                    # the ending's doing.
                    if isinstance(exc, Exception):
                        return session
                    raise
                await self._end(room, SESSION_ENDED)
                raise
            return session

    def _realtime_plugged(self) -> Plugged:
        plugged = self._plugged
        if plugged is None or self.closing:
            raise ChannelStateError(
                f"Channel {self.channel_id} has no realtime provider: call plug_realtime()"
            )
        return plugged

    async def end_realtime(self, room_id: str) -> None:
        """End the realtime session of ``room_id``: its requests are withdrawn and nothing
        more is sent to the provider. The next participant to speak starts a new one."""
        room = self._rooms.get(room_id)
        if room is not None:
            await self._end(room, SESSION_ENDED)

    async def _end(self, room: ConferenceRoom, hint: str) -> None:
        live, plugged = room.live, room.plugged
        if live is None or plugged is None:
            return
        room.live = room.plugged = None
        plugged.rooms.pop(live.session.id, None)
        await live.finish(hint, plugged.provider)

    def _check_open(self) -> None:
        self.registered_kit()
        if self.closing:
            raise ChannelClosedError(f"Channel {self.channel_id} is closed: open a new channel")

    # -- conferences -------------------------------------------------------------------------

    @property
    def conferences(self) -> dict[str, str]:
        """The conference joined for each room, by room id."""
        return {r.room_id: r.conference_id for r in self._rooms.values() if r.conference_id}

    async def join(self, room_id: str, *, conference_id: str | None = None) -> None:
        """Join the back end's conference for ``room_id`` (named after the room by default).

        Its participants go on the room's roster, their audio tracks are subscribed, and
        their speech starts the room's realtime session. Joining the same conference again
        does nothing.

        Raises:
            ChannelNotRegisteredError: the channel is not registered.
            ChannelClosedError: the channel is closed.
            ChannelStateError: the room is in another conference already.
            KeyError: no such room, or the channel is not attached to it.
            ValueError: the conference serves another room.
            Exception: whatever the back end's ``join`` raised (the room is not joined).
        """
        self._check_open()
        await self.attached_room(room_id)
        # Closed while the room was read: the closing left no conference to leave.
        self._check_open()
        room = self._rooms.setdefault(room_id, ConferenceRoom(room_id))
        await self._follower.join(room, conference_id or room_id)

    async def leave(self, room_id: str) -> None:
        """Leave the conference of ``room_id`` and end the room's realtime session (its
        requests are withdrawn). Does nothing when the room is in no conference.

        Raises:
            Exception: whatever the back end's ``leave`` raised (the channel has stopped
                following the conference, and the session is ended, all the same).
        """
        room = self._rooms.get(room_id)
        if room is None or room.conference_id is None:
            return
        try:
            # Unfollowed first: speech heard while the session ends starts no new one.
            await self._follower.leave(room)
        finally:
            await self._end(room, SESSION_ENDED)

    async def on_detach(self, room_id: str) -> None:
        """The channel is detached from ``room_id``: end the room's session (its requests are
        withdrawn, nothing more is sent to the provider) and leave its conference.

        The kit calls it when the channel is detached from the room.
        """
        room = self._rooms.pop(room_id, None)
        if room is None:
            return
        await self._end(room, DETACHED)
        await self._follower.quietly_leave(room)

    async def _heard(self, room: ConferenceRoom, participant_id: str) -> None:
        """A participant's audio reached ``room``: start its session, and make its calls
        theirs (for nobody, when no request can name them), unless they left while it
        started."""
        plugged = self._plugged
        if plugged is None or self.closing:
            return
        departures = room.departures.get(participant_id, 0)
        if not (room.open and room.plugged is plugged):
            try:
                await self.start_realtime(room.room_id)
            except Exception:
                logger.exception("Could not start the realtime session of room %s", room.room_id)
                return
        if room.departures.get(participant_id, 0) == departures:
            room.speaker = participant_id if nameable(participant_id) else None

    async def _left(self, room: ConferenceRoom, participant_id: str) -> None:
        """A participant left ``room``'s conference: refuse the requests they were the last
        who could answer."""
        plugged = self._plugged
        human = plugged.human_input_handler if plugged is not None else None
        if human is not None:
            await refuse_departed(
                human.handler, self.channel_id, room.room_id, participant_id, room.present
            )

    # -- closing -----------------------------------------------------------------------------

    async def close(self) -> None:
        """End every room's session (their requests are withdrawn, their calls reported
        cancelled), close the human-input handler for this channel only, and leave every
        conference.

        Called from inside one of its own calls (a hook, a tool), it cuts that call too:
        the closing finishes, and the caller sees ``CancelledError``.
        """
        await self._close_once(self._close)

    async def _close(self) -> None:
        self.closing = True
        await self._unplug(CHANNEL_CLOSED)
        rooms = [room for room in self._rooms.values() if room.conference_id is not None]
        for room in rooms:
            await self._follower.quietly_leave(room)
        self._follower.stop()
