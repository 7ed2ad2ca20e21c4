"""The import path RoomKit 0.109 code uses for :class:`ChannelBinding`.

The binding is defined in :mod:`roomkit.models.room`, with the other room data; this module
re-exports it, so ``from roomkit.models.channel import ChannelBinding`` keeps working.
"""

from roomkit.models.room import ChannelBinding

__all__ = ["ChannelBinding"]
