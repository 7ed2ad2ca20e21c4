"""Moved to :mod:`roomkit.stores.sqlite._trail`; this path keeps working."""

from typing import Any

from roomkit.core.moved import moved_attribute


def __getattr__(name: str) -> Any:
    return moved_attribute("roomkit.stores.sqlite._trail", __name__, name)
