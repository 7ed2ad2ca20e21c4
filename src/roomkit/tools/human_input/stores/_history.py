"""Moved to :mod:`roomkit.stores._history` (``MemoryHistory`` to
:mod:`roomkit.stores.memory._history`); this path keeps working."""

from typing import Any

from roomkit.core.moved import moved_attribute


def __getattr__(name: str) -> Any:
    if name == "MemoryHistory":
        return moved_attribute("roomkit.stores.memory._history", __name__, name)
    return moved_attribute("roomkit.stores._history", __name__, name)
