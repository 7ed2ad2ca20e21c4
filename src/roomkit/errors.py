"""Every error roomkit raises, in one tree, with the errors of a channel's life.

``roomkit.core.exceptions`` holds the errors of the tool loop, the human-input primitive, the
providers and the stores (its docstring draws them); this module adds the errors a channel
raises when it is used outside its life (not registered yet, closed, asked for a session it
does not run) and re-exports the whole tree, so ``roomkit.errors`` names every error::

    RoomKitError
    ├── ...                          the tree of roomkit.core.exceptions
    └── ChannelStateError           also RuntimeError: the channel cannot do that now
        ├── ChannelNotRegisteredError   not registered with a kit: call kit.register_channel()
        ├── ChannelClosedError          close() started: nothing new starts on the channel
        └── SessionNotOpenError         the session named is not open on the channel

A channel error is a ``RuntimeError`` as well, so code written against the plain
``RuntimeError`` these calls raised before keeps catching them. Each message says what to do.
"""

from __future__ import annotations

from roomkit.core import exceptions as _tree
from roomkit.core.exceptions import *  # noqa: F403 - the whole tree, re-exported as it is
from roomkit.core.exceptions import RoomKitError

__all__ = [
    *_tree.__all__,
    "ChannelClosedError",
    "ChannelNotRegisteredError",
    "ChannelStateError",
    "SessionNotOpenError",
]


class ChannelStateError(RoomKitError, RuntimeError):
    """The channel cannot do what was asked in the state it is in; the message says what to
    do first (plug a realtime config, unplug the one plugged, leave a conference, ...)."""


class ChannelNotRegisteredError(ChannelStateError):
    """The channel is not registered with a kit: call ``kit.register_channel(channel)``."""

    def __init__(self, channel_id: str) -> None:
        super().__init__(f"Channel {channel_id} is not registered: call kit.register_channel()")
        self.channel_id = channel_id
        """The channel asked."""


class ChannelClosedError(ChannelStateError):
    """The channel's ``close()`` started: it starts no session, plugs nothing, joins nothing."""


class SessionNotOpenError(ChannelStateError):
    """The session named is not open on the channel (ended, lost, or never started there)."""
