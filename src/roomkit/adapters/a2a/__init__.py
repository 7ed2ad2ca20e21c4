"""A2A: a RoomKit agent as an A2A agent, its held requests as ``input-required`` tasks.

:class:`RoomKitExecutor` is an ``AgentExecutor`` for the SDK's request handler and routes;
:class:`A2AGate` puts those routes behind a person's desk token, whose subject asks and
answers. A task whose turn waits for a person enters ``input-required``; a follow-up message
on it answers as the caller. Needs the ``a2a`` extra.
"""

from roomkit._extras import requires_extra

with requires_extra("roomkit.adapters.a2a", "a2a"):
    import a2a  # noqa: F401  (the extra's presence, checked once)

from roomkit.adapters.a2a.executor import A2AChannel, RoomKitExecutor
from roomkit.adapters.a2a.gate import A2AGate
from roomkit.adapters.a2a.push import A2APush

__all__ = ["A2AChannel", "A2AGate", "A2APush", "RoomKitExecutor"]
