"""Moved to :mod:`roomkit.stores._durable_base`; this path keeps working."""

from typing import Any

from roomkit.core.moved import moved_attribute


def __getattr__(name: str) -> Any:
    return moved_attribute("roomkit.stores._durable_base", __name__, name)
