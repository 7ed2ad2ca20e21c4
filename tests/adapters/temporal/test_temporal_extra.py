"""Without the Temporal SDK, the adapter's names say which extra to install."""

from __future__ import annotations

import re
import sys

import pytest

import roomkit.adapters.temporal as adapter
from roomkit._extras import install_command


@pytest.mark.parametrize("name", ["ask_person", "activities", "TemporalUpdates", "send_to_room"])
def test_a_missing_sdk_names_the_extra(monkeypatch: pytest.MonkeyPatch, name: str) -> None:
    for module in [m for m in sys.modules if m.split(".")[0] == "temporalio"]:
        monkeypatch.setitem(sys.modules, module, None)
    for module in [m for m in sys.modules if m.startswith("roomkit.adapters.temporal.")]:
        monkeypatch.delitem(sys.modules, module)
    monkeypatch.delitem(vars(adapter), name, raising=False)  # kept once read
    with pytest.raises(ModuleNotFoundError, match=re.escape(install_command("temporal"))):
        getattr(adapter, name)


def test_an_unknown_name_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="no attribute 'ask'"):
        adapter.ask  # noqa: B018
