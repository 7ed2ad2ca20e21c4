"""Moved to :mod:`roomkit.stores.postgres._history`; this path keeps working."""

from typing import Any

from roomkit.core.moved import moved_attribute


def __getattr__(name: str) -> Any:
    return moved_attribute("roomkit.stores.postgres._history", __name__, name)
