"""The import paths the spec's code uses resolve to the right objects."""

import roomkit
from roomkit.core import exceptions
from roomkit.tools.human_input import HumanInputHandler, HumanInputToolHandler


def test_top_level_exports_the_primitive() -> None:
    assert roomkit.HumanInputHandler is HumanInputHandler
    assert roomkit.HumanInputToolHandler is HumanInputToolHandler


def test_every_error_is_under_the_root() -> None:
    for name in exceptions.__all__:
        assert issubclass(getattr(exceptions, name), exceptions.RoomKitError)


def test_errors_keep_the_standard_types_the_spec_promises() -> None:
    assert issubclass(roomkit.HumanInputRejectedError, RuntimeError)
    assert issubclass(roomkit.HumanInputTimeoutError, TimeoutError)
    assert issubclass(roomkit.UnknownRequestError, ValueError)
    assert issubclass(roomkit.RequestWithdrawnError, RuntimeError)
    assert not issubclass(roomkit.RequestWithdrawnError, roomkit.HumanInputRejectedError)
