"""The import path RoomKit 0.109 code uses for a room's events and their text.

They are defined in :mod:`roomkit.models.room`, with the other room data; this module
re-exports them, so ``from roomkit.models.event import RoomEvent, TextContent`` keeps working.
"""

from roomkit.models.room import RoomEvent, TextContent

__all__ = ["RoomEvent", "TextContent"]
