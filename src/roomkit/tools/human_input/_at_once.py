"""Approvals decided as they are made: a call a policy settles without asking anyone.

Inside :func:`decided_at_once`, an approval the handler creates is nobody's to decide: it
is stored unannounced, no standing grant is spent on it, and it is settled with the given
decision (its ``decided`` and ``settled`` entries) as it is stored: in the same step on the
memory store, in the insert's own write on a durable one that can
(:class:`~roomkit.stores.base.InsertsSettled`: a process stopped there leaves it settled or
not stored, never open with nobody to answer it), else with one more write. Its history
then reads ``created``, whatever :func:`created_with` adds (the policy's ``policy_decided``),
``decided``, ``settled``: the evidence of a call that ran, or was refused, without anyone.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import NamedTuple

from roomkit.core.context_vars import bound
from roomkit.tools.approvals import Decision

__all__ = ["AtOnce", "at_once", "decided_at_once"]


class AtOnce(NamedTuple):
    """The decision an approval created now is settled with, and by whom."""

    decision: Decision
    by: str | None
    surface: str | None


_AT_ONCE: ContextVar[AtOnce | None] = ContextVar("roomkit_decided_at_once", default=None)


@contextmanager
def decided_at_once(
    decision: Decision, *, by: str | None, surface: str | None = None
) -> Iterator[None]:
    """Approvals created inside are settled with ``decision`` by ``by`` (through
    ``surface``) as they are made, unannounced and without a standing grant."""
    with bound(_AT_ONCE, AtOnce(decision, by, surface)):
        yield


def at_once() -> AtOnce | None:
    """The decision approvals created now are settled with, or ``None`` (a person decides)."""
    return _AT_ONCE.get()
