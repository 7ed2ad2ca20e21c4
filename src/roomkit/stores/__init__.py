"""Where the library keeps what must outlive a call: requests, rooms, histories, ledger, outbox.

One package per back end, each with the same private modules, so that one database's code
reads beside another's:

- :mod:`roomkit.stores.memory`: this process's memory (the default; nothing to install);
- :mod:`roomkit.stores.sqlite`: one SQLite file, shared by the processes of one machine
  (the ``sqlite`` extra);
- :mod:`roomkit.stores.redis`: a Redis server (the ``redis`` extra);
- :mod:`roomkit.stores.postgres`: a PostgreSQL database (the ``postgres`` extra).

This package holds what every back end shares: the contracts a store implements
(:mod:`roomkit.stores.base`), the history chain and its trail, the spend-once ledger's checks
and the notification outbox's items (:mod:`roomkit.stores.outbox`).
:func:`open_url` opens the request store and the room store a URL names; on Redis and
PostgreSQL the room store rides on the request store's client or pool (``beside``). The
back ends' modules load only when used (they need their extras), and every name here
loads on first use, with only the modules it lives in: a command that opens one store loads
that store's code alone.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from roomkit._lazy import lazy_exports

if TYPE_CHECKING:
    from roomkit.stores._audit_keys import (
        AUDIT_KEY_ENV,
        AUDIT_KEY_FILE,
        AuditKeys,
        create_audit_key,
        load_audit_keys,
    )
    from roomkit.stores._checkpoints import checkpointing
    from roomkit.stores._history import (
        MAX_ARGUMENTS_CHARS,
        MAX_ENTRY_CHARS,
        asked_entry,
        broken_link,
        chain_text,
        check_entry,
        deadline_entry,
        detached,
        entry_text,
        entry_time,
        first_prev,
        link_digest,
        linked_chain,
        linked_text,
        new_entry,
        read_entry,
        settled_entry,
        stamp_time,
    )
    from roomkit.stores._history_stores import (
        AfterSettleHistory,
        GuardedHistory,
        HistoryLog,
        NoticedHistory,
    )
    from roomkit.stores._ledger import MemoryLedger
    from roomkit.stores._quorum import (
        Ballot,
        Judgement,
        MakesGrant,
        VoteGrant,
        approved_by,
        declined,
        judge,
        widened,
    )
    from roomkit.stores._trail import ChainRead, CheckpointReport, StoreTrail, Trail, TrailPages
    from roomkit.stores._trail_check import TrailChecker, TrailReport, check_trail, first_break
    from roomkit.stores._url import close_stores, extra_of_url, new_sqlite_file, open_url
    from roomkit.stores.base import (
        DurableStore,
        PendingChange,
        PendingChangeKind,
        PendingStore,
        SpendLedger,
    )
    from roomkit.stores.memory import AnchoredHistory, CarriedTrail, MemoryHistory, MemoryStore

__all__ = [
    "AUDIT_KEY_ENV",
    "AUDIT_KEY_FILE",
    "MAX_ARGUMENTS_CHARS",
    "MAX_ENTRY_CHARS",
    "AfterSettleHistory",
    "AnchoredHistory",
    "AuditKeys",
    "Ballot",
    "CarriedTrail",
    "ChainRead",
    "CheckpointReport",
    "DurableStore",
    "GuardedHistory",
    "HistoryLog",
    "Judgement",
    "MakesGrant",
    "MemoryHistory",
    "MemoryLedger",
    "MemoryStore",
    "NoticedHistory",
    "PendingChange",
    "PendingChangeKind",
    "PendingStore",
    "SpendLedger",
    "StoreTrail",
    "Trail",
    "TrailChecker",
    "TrailPages",
    "TrailReport",
    "VoteGrant",
    "approved_by",
    "asked_entry",
    "broken_link",
    "chain_text",
    "check_entry",
    "check_trail",
    "checkpointing",
    "close_stores",
    "create_audit_key",
    "deadline_entry",
    "declined",
    "detached",
    "entry_text",
    "entry_time",
    "extra_of_url",
    "first_break",
    "first_prev",
    "judge",
    "link_digest",
    "linked_chain",
    "linked_text",
    "load_audit_keys",
    "new_entry",
    "new_sqlite_file",
    "open_url",
    "read_entry",
    "settled_entry",
    "stamp_time",
    "widened",
]

# Each name with the module it lives in, relative to the package.
_HOMES = {
    "AUDIT_KEY_ENV": "_audit_keys",
    "AUDIT_KEY_FILE": "_audit_keys",
    "AuditKeys": "_audit_keys",
    "create_audit_key": "_audit_keys",
    "load_audit_keys": "_audit_keys",
    "checkpointing": "_checkpoints",
    "MAX_ARGUMENTS_CHARS": "_history",
    "MAX_ENTRY_CHARS": "_history",
    "GuardedHistory": "_history_stores",
    "HistoryLog": "_history_stores",
    "NoticedHistory": "_history_stores",
    "AfterSettleHistory": "_history_stores",
    "asked_entry": "_history",
    "broken_link": "_history",
    "chain_text": "_history",
    "check_entry": "_history",
    "deadline_entry": "_history",
    "detached": "_history",
    "entry_text": "_history",
    "entry_time": "_history",
    "first_prev": "_history",
    "link_digest": "_history",
    "linked_chain": "_history",
    "linked_text": "_history",
    "new_entry": "_history",
    "read_entry": "_history",
    "settled_entry": "_history",
    "stamp_time": "_history",
    "MemoryLedger": "_ledger",
    "Ballot": "_quorum",
    "Judgement": "_quorum",
    "MakesGrant": "_quorum",
    "VoteGrant": "_quorum",
    "approved_by": "_quorum",
    "declined": "_quorum",
    "judge": "_quorum",
    "widened": "_quorum",
    "ChainRead": "_trail",
    "CheckpointReport": "_trail",
    "StoreTrail": "_trail",
    "Trail": "_trail",
    "TrailChecker": "_trail_check",
    "TrailPages": "_trail",
    "TrailReport": "_trail_check",
    "check_trail": "_trail_check",
    "first_break": "_trail_check",
    "close_stores": "_url",
    "extra_of_url": "_url",
    "new_sqlite_file": "_url",
    "open_url": "_url",
    "DurableStore": "base",
    "PendingChange": "base",
    "PendingChangeKind": "base",
    "PendingStore": "base",
    "SpendLedger": "base",
    "AnchoredHistory": "memory",
    "CarriedTrail": "memory",
    "MemoryHistory": "memory",
    "MemoryStore": "memory",
}

__getattr__ = lazy_exports(__name__, _HOMES)


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
