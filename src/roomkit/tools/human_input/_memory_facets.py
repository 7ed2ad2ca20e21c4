"""The spend ledger and the outbox of a handler whose store keeps neither (the memory store).

Both live in this process as long as the handler does, so each holds what the store holds
requests for, not what a week of requests leaves: the ledger forgets the ``shown`` marks of
the requests the store let go (:mod:`roomkit.tools.human_input._shown_marks`), and the
outbox keeps what became of the notices of as many finished requests as the store keeps
histories of, and at least :data:`~roomkit.stores.memory.FINISHED_KEPT`.
"""

from __future__ import annotations

from roomkit.stores.memory import FINISHED_KEPT, MemoryLedger, MemoryOutbox
from roomkit.tools.human_input._shown_marks import stale_marks

__all__ = ["memory_ledger", "memory_outbox"]


def memory_ledger(memory: object | None) -> MemoryLedger:
    """The ledger of a handler on ``memory`` (``None``: a store that says nothing of what
    it holds)."""
    holds = getattr(memory, "holds", None)
    return MemoryLedger(forgets=stale_marks(holds if callable(holds) else None))


def memory_outbox(memory: object | None) -> MemoryOutbox:
    """The outbox of a handler on ``memory``."""
    histories = getattr(memory, "audit_retention", None)
    kept = max(FINISHED_KEPT, histories) if isinstance(histories, int) else FINISHED_KEPT
    return MemoryOutbox(finished=kept)
