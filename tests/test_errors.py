"""The one error tree, with the errors of a channel's life."""

from __future__ import annotations

import logging

import pytest

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


async def test_an_error_quoting_a_lone_surrogate_still_prints_and_logs(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """An id holding a lone surrogate, quoted in the error: the error's text escapes it, so
    writing it as UTF-8 (a terminal, a log file) works; its args keep what was given."""
    from roomkit.core.exceptions import UnknownRequestError
    from roomkit.tools.human_input import HumanInputHandler

    with pytest.raises(UnknownRequestError) as caught:
        await HumanInputHandler().wait("\ud800")
    text = str(caught.value)
    assert text == "No pending request with id \\ud800"
    assert text.encode("utf-8")
    assert "\ud800" in caught.value.args[0]
    logging.getLogger("roomkit.test").error("failed: %s", caught.value)
    assert caplog.records[-1].getMessage().encode("utf-8")
