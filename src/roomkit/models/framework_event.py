"""The import path RoomKit 0.109 code uses for :class:`FrameworkEvent`.

The event ``kit.on(...)`` handlers receive is defined in :mod:`roomkit.models.room`; this
module re-exports it, so ``from roomkit.models.framework_event import FrameworkEvent`` keeps
working.
"""

from roomkit.models.room import FrameworkEvent

__all__ = ["FrameworkEvent"]
