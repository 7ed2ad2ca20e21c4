"""The import path RoomKit 0.109 code uses for :class:`RoomContext`.

The context hooks receive is defined in :mod:`roomkit.models.hooks`; this module re-exports
it, so ``from roomkit.models.context import RoomContext`` keeps working.
"""

from roomkit.models.hooks import RoomContext

__all__ = ["RoomContext"]
