"""Stores behind :class:`~roomkit.tools.human_input.HumanInputHandler`.

``MemoryStore`` is the default. ``SQLiteStore`` (``roomkit.tools.human_input.stores.sqlite``)
and ``RedisStore`` (``roomkit.tools.human_input.stores.redis``) are durable and shared by
processes; import them from their modules (they need the ``sqlite`` / ``redis`` extras).
"""

from roomkit.tools.human_input.stores._history import (
    HistoryLog,
    MemoryHistory,
    asked_entry,
    broken_link,
    chain_text,
    check_entry,
    deadline_entry,
    entry_text,
    entry_time,
    first_prev,
    link_digest,
    linked_chain,
    linked_text,
    new_entry,
    read_entry,
    settled_entry,
)
from roomkit.tools.human_input.stores._ledger import MemoryLedger
from roomkit.tools.human_input.stores._quorum import (
    Ballot,
    Judgement,
    approved_by,
    declined,
    judge,
    widened,
)
from roomkit.tools.human_input.stores.base import (
    DurableStore,
    PendingChange,
    PendingChangeKind,
    PendingStore,
    SpendLedger,
)
from roomkit.tools.human_input.stores.memory import MemoryStore

__all__ = [
    "Ballot",
    "DurableStore",
    "HistoryLog",
    "Judgement",
    "MemoryHistory",
    "MemoryLedger",
    "MemoryStore",
    "PendingChange",
    "PendingChangeKind",
    "PendingStore",
    "SpendLedger",
    "approved_by",
    "asked_entry",
    "broken_link",
    "chain_text",
    "check_entry",
    "deadline_entry",
    "declined",
    "entry_text",
    "entry_time",
    "first_prev",
    "judge",
    "link_digest",
    "linked_chain",
    "linked_text",
    "new_entry",
    "read_entry",
    "settled_entry",
    "widened",
]
