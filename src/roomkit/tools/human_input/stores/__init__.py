"""Stores behind :class:`~roomkit.tools.human_input.HumanInputHandler`."""

from roomkit.tools.human_input.stores.base import PendingStore
from roomkit.tools.human_input.stores.memory import MemoryStore

__all__ = ["MemoryStore", "PendingStore"]
