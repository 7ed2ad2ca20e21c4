"""The import path RoomKit 0.109 code uses for an inbound message and its result.

They are defined in :mod:`roomkit.models.room`, with the other room data; this module
re-exports them, so ``from roomkit.models.delivery import InboundMessage`` keeps working.
"""

from roomkit.models.room import InboundMessage, InboundResult

__all__ = ["InboundMessage", "InboundResult"]
