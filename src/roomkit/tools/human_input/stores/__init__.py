"""Stores behind :class:`~roomkit.tools.human_input.HumanInputHandler`.

``MemoryStore`` is the default. ``SQLiteStore`` (``roomkit.tools.human_input.stores.sqlite``)
and ``RedisStore`` (``roomkit.tools.human_input.stores.redis``) are durable and shared by
processes; import them from their modules (they need the ``sqlite`` / ``redis`` extras).
"""

from roomkit.tools.human_input.stores._history import (
    HistoryLog,
    MemoryHistory,
    broken_link,
    chain_text,
    check_entry,
    deadline_entry,
    entry_text,
    first_prev,
    link_digest,
    new_entry,
    read_entry,
    settled_entry,
)
from roomkit.tools.human_input.stores._ledger import MemoryLedger
from roomkit.tools.human_input.stores.base import (
    DurableStore,
    PendingChange,
    PendingChangeKind,
    PendingStore,
    SpendLedger,
)
from roomkit.tools.human_input.stores.memory import MemoryStore

__all__ = [
    "DurableStore",
    "HistoryLog",
    "MemoryHistory",
    "MemoryLedger",
    "MemoryStore",
    "PendingChange",
    "PendingChangeKind",
    "PendingStore",
    "SpendLedger",
    "broken_link",
    "chain_text",
    "check_entry",
    "deadline_entry",
    "entry_text",
    "first_prev",
    "link_digest",
    "new_entry",
    "read_entry",
    "settled_entry",
]
