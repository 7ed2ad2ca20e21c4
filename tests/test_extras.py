"""A lazy import of an optional library fails with one line naming the extra to install."""

from __future__ import annotations

import pytest

from roomkit._extras import missing_module, requires_extra


def test_a_missing_library_names_its_extra_and_keeps_the_cause() -> None:
    with pytest.raises(ImportError) as caught, requires_extra("roomkit.notify.slack", "slack"):
        import roomkit_no_such_library  # type: ignore[import-not-found]  # noqa: F401

    error = caught.value
    assert str(error) == (
        "roomkit.notify.slack needs the slack extra (roomkit_no_such_library is not "
        "installed): pip install -e '.[slack]' in roomkit's checkout"
    )
    assert error.name == "roomkit_no_such_library"
    assert isinstance(error.__cause__, ModuleNotFoundError)
    assert missing_module(error) == "roomkit_no_such_library"


def test_imports_that_succeed_pass_through() -> None:
    with requires_extra("roomkit.notify.slack", "slack"):
        import json

    assert json.dumps([]) == "[]"
