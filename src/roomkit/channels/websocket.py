"""WebSocketChannel: delivers a room's events to registered connections."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable

from roomkit.channels.base import TransportChannel
from roomkit.core.callables import is_async_callable
from roomkit.models.enums import ChannelType
from roomkit.models.room import RoomEvent

__all__ = ["SendFn", "WebSocketChannel"]

logger = logging.getLogger("roomkit.channels.websocket")

SendFn = Callable[[str, RoomEvent], Awaitable[None]]
"""``async send(connection_id, event)``: push one event to one connection."""


class WebSocketChannel(TransportChannel):
    """Pushes each event of a room to the connections registered for that room.

    A connection whose send fails or takes longer than ``send_timeout`` seconds is dropped
    (logged), so a client that stops reading never holds up the room.
    """

    channel_type = ChannelType.WEBSOCKET

    def __init__(self, channel_id: str, *, send_timeout: float = 5.0) -> None:
        super().__init__(channel_id)
        if not send_timeout > 0:
            raise ValueError(
                f"send_timeout must be a positive number of seconds, got {send_timeout}"
            )
        self.send_timeout = send_timeout
        self._connections: dict[str, tuple[str, SendFn]] = {}

    def register_connection(self, connection_id: str, send_fn: SendFn, *, room_id: str) -> None:
        """Deliver ``room_id``'s events to ``send_fn(connection_id, event)`` from now on."""
        if not is_async_callable(send_fn):
            raise TypeError(
                "send_fn must be an async function: async def send(connection_id, event): ..."
            )
        self._connections[connection_id] = (room_id, send_fn)

    def unregister_connection(self, connection_id: str, *, send_fn: SendFn | None = None) -> None:
        """Stop delivering to ``connection_id``.

        Args:
            connection_id: the connection.
            send_fn: unregister it only while ``send_fn`` is the function registered for
                it: a client going away then leaves alone a newer client registered under the
                same id (the same person reconnecting before the old socket closed).
        """
        registered = self._connections.get(connection_id)
        if registered is not None and (send_fn is None or registered[1] is send_fn):
            del self._connections[connection_id]

    def connections(self, room_id: str) -> list[str]:
        """The ids of the connections registered for ``room_id``."""
        return [cid for cid, (rid, _) in self._connections.items() if rid == room_id]

    async def deliver(self, event: RoomEvent) -> None:
        """Send ``event`` to every connection of its room, all at once.

        The sends run concurrently, so a stalled client costs the room at most
        ``send_timeout`` and never delays the other clients.
        """
        targets = [
            (cid, send) for cid, (rid, send) in self._connections.items() if rid == event.room_id
        ]
        if len(targets) == 1:
            await self._send(*targets[0], event)
        elif targets:
            await asyncio.gather(*(self._send(cid, send, event) for cid, send in targets))

    async def _send(self, connection_id: str, send: SendFn, event: RoomEvent) -> None:
        try:
            async with asyncio.timeout(self.send_timeout):
                await send(connection_id, event)
        except Exception as exc:  # a broken client must not break the room
            logger.warning("WebSocket send failed for %s: %r; dropping it", connection_id, exc)
            registered = self._connections.get(connection_id)
            # The connection may have been registered again meanwhile: keep the new one.
            if registered is not None and registered[1] is send:
                del self._connections[connection_id]

    async def close(self) -> None:
        self._connections.clear()
