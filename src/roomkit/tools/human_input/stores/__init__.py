"""Stores behind :class:`~roomkit.tools.human_input.HumanInputHandler`.

``MemoryStore`` is the default. ``SQLiteStore`` (``roomkit.tools.human_input.stores.sqlite``)
and ``RedisStore`` (``roomkit.tools.human_input.stores.redis``) are durable and shared by
processes; import them from their modules (they need the ``sqlite`` / ``redis`` extras).
"""

from roomkit.tools.human_input.stores._audit_keys import (
    AUDIT_KEY_ENV,
    AuditKeys,
    create_audit_key,
    load_audit_keys,
)
from roomkit.tools.human_input.stores._checkpoints import checkpointing
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
from roomkit.tools.human_input.stores._memory_trail import AnchoredHistory, CarriedTrail
from roomkit.tools.human_input.stores._quorum import (
    Ballot,
    Judgement,
    approved_by,
    declined,
    judge,
    widened,
)
from roomkit.tools.human_input.stores._trail import CheckpointReport, StoreTrail, Trail
from roomkit.tools.human_input.stores._trail_check import TrailReport, check_trail, first_break
from roomkit.tools.human_input.stores.base import (
    DurableStore,
    PendingChange,
    PendingChangeKind,
    PendingStore,
    SpendLedger,
)
from roomkit.tools.human_input.stores.memory import MemoryStore

__all__ = [
    "AUDIT_KEY_ENV",
    "AnchoredHistory",
    "AuditKeys",
    "Ballot",
    "CarriedTrail",
    "CheckpointReport",
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
    "StoreTrail",
    "Trail",
    "TrailReport",
    "approved_by",
    "asked_entry",
    "broken_link",
    "chain_text",
    "check_entry",
    "check_trail",
    "checkpointing",
    "create_audit_key",
    "deadline_entry",
    "declined",
    "entry_text",
    "entry_time",
    "first_break",
    "first_prev",
    "judge",
    "link_digest",
    "linked_chain",
    "linked_text",
    "load_audit_keys",
    "new_entry",
    "read_entry",
    "settled_entry",
    "widened",
]
