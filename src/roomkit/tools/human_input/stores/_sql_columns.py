"""Moved to :mod:`roomkit.stores._sql_columns`; this path keeps working."""

from typing import Any

from roomkit.core.moved import moved_attribute


def __getattr__(name: str) -> Any:
    return moved_attribute("roomkit.stores._sql_columns", __name__, name)
