"""The import path RoomKit 0.109 code uses for :class:`Participant`.

The participant is defined in :mod:`roomkit.models.room`, with the other room data; this
module re-exports it, so ``from roomkit.models.participant import Participant`` keeps working.
"""

from roomkit.models.room import Participant

__all__ = ["Participant"]
