"""The one error tree, with the errors of a channel's life."""

from __future__ import annotations

import roomkit
from roomkit.core import exceptions as errors


def test_every_error_is_a_roomkit_error_exported_from_roomkit() -> None:
    for name in errors.__all__:
        error = getattr(errors, name)
        assert issubclass(error, errors.RoomKitError)
    for name in (
        "ChannelStateError",
        "ChannelNotRegisteredError",
        "ChannelClosedError",
        "SessionNotOpenError",
        "InvalidTextError",
    ):
        assert getattr(roomkit, name) is getattr(errors, name)


def test_a_channel_error_is_still_a_runtime_error() -> None:
    """Code that caught the plain ``RuntimeError`` of a channel's lifecycle still does."""
    for error in (
        errors.ChannelStateError,
        errors.ChannelNotRegisteredError,
        errors.ChannelClosedError,
        errors.SessionNotOpenError,
    ):
        assert issubclass(error, RuntimeError)
        assert issubclass(error, errors.ChannelStateError)


def test_not_registered_names_the_channel_and_the_call_to_make() -> None:
    error = errors.ChannelNotRegisteredError("agent")

    assert str(error) == "Channel agent is not registered: call kit.register_channel()"
    assert error.channel_id == "agent"
