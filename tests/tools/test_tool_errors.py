"""The errors that steer the tool loop, and the human-input errors' standard types."""

from __future__ import annotations

import pytest

import roomkit
from roomkit.core.exceptions import (
    ChannelRefusalError,
    HandlerClosedError,
    HumanInputRejectedError,
    HumanInputTimeoutError,
    RequestWithdrawnError,
    RoomKitError,
    ToolFailedError,
    ToolRefusedError,
    ToolTimeoutError,
    UnknownRequestError,
    UnservedToolCallError,
)


@pytest.mark.parametrize("error", [ToolRefusedError, ToolFailedError, ChannelRefusalError])
def test_loop_signals_carry_the_text_the_model_reads(error: type[ToolRefusedError]) -> None:
    raised = error('{"error": "no"}')

    assert raised.message == '{"error": "no"}'
    assert str(raised) == '{"error": "no"}'
    assert isinstance(raised, RoomKitError)


def test_a_channel_refusal_is_a_refusal() -> None:
    assert issubclass(ChannelRefusalError, ToolRefusedError)
    assert not issubclass(UnservedToolCallError, ToolRefusedError | ToolFailedError)


def test_a_tool_timeout_names_the_tool_and_the_bound() -> None:
    error = ToolTimeoutError("x", 10.0)

    assert str(error) == "tool 'x' did not answer within 10 s"
    assert (error.name, error.timeout) == ("x", 10.0)
    assert str(ToolTimeoutError("x", 2.5)) == "tool 'x' did not answer within 2.5 s"
    assert isinstance(error, TimeoutError)


def test_human_input_errors_keep_their_standard_types() -> None:
    assert issubclass(HumanInputRejectedError, RuntimeError)
    assert issubclass(HumanInputTimeoutError, TimeoutError)
    assert issubclass(UnknownRequestError, ValueError)
    assert issubclass(RequestWithdrawnError, RuntimeError)
    assert issubclass(HandlerClosedError, RequestWithdrawnError)
    for error in (RequestWithdrawnError, HandlerClosedError, HumanInputTimeoutError):
        assert not issubclass(error, HumanInputRejectedError)


def test_the_errors_are_exported_from_roomkit() -> None:
    for error in (
        HumanInputRejectedError,
        ToolFailedError,
        ToolRefusedError,
        UnservedToolCallError,
        ToolTimeoutError,
        ChannelRefusalError,
    ):
        assert getattr(roomkit, error.__name__) is error
