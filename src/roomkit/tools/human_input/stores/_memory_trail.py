"""Moved to :mod:`roomkit.stores.memory._trail`; this path keeps working."""

from typing import Any

from roomkit.core.moved import moved_attribute


def __getattr__(name: str) -> Any:
    return moved_attribute("roomkit.stores.memory._trail", __name__, name)
