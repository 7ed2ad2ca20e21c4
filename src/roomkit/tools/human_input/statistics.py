"""What a handler holds in this process at one moment, as :meth:`HumanInputHandler.statistics`
reports it, and how often its waits on a durable store have read it so far: for tests that
wait for a state, and for the desk's ``/metrics``."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["HandlerStatistics"]


@dataclass(frozen=True, slots=True)
class HandlerStatistics:
    """A snapshot of one handler's figures in this process."""

    active_requests: int
    """Requests held here: open, or settled and not yet collected by their ``wait()``. On a
    durable store, those created in this process (every process's open requests are in
    ``list_pending()``)."""
    parked_waits: int
    """``wait()`` calls blocked on an answer (on a durable store, those waiting for the
    store to answer again before their first read too)."""
    armed_deadlines: int
    """Deadlines this process watches: it times the request out when one passes."""
    running_notifications: int
    """Notification callbacks (ON_USER_INPUT_REQUIRED) still running."""
    deadline_timers: int = 0
    """Loop timers scheduled for the deadlines: at most one, shared by every deadline of the
    memory store. It is left to fire once after the last deadline went (it then finds
    nothing due): arming and cancelling a timer per request costs more. Always 0 on a
    durable store, whose waits' sweeper watches the deadlines."""
    backstop_looks: int = 0
    """Times so far the waits on a durable store asked it which requests changed since they
    last asked: their backstop, once every ``backstop_interval`` while waits are parked, one
    cheap read of the store's change log each. Always 0 on the memory store."""
    records_read: int = 0
    """Request records the waits on a durable store have read so far to learn an outcome or
    a deadline: those a change hint, the backstop or a resync named. It stays still while
    nothing changes, however many waits are parked. Always 0 on the memory store."""
    rereads: int = 0
    """Times the waits on a durable store read every waited request at once, since the store
    could not tell which changed (its change feed reconnected and asked for a resync, or its
    change log could not answer a look). Rare; always 0 on the memory store."""
