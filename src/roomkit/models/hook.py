"""The import path RoomKit 0.109 code uses for :class:`HookResult`.

What a hook returns is defined in :mod:`roomkit.models.hooks`, with the other hook data; this
module re-exports it, so ``from roomkit.models.hook import HookResult`` keeps working.
"""

from roomkit.models.hooks import HookResult

__all__ = ["HookResult"]
