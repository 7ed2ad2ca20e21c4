"""A call nobody is asked about, on record: the request a policy's decision settles at once.

A call the policy allows or refuses without anyone (or that a shadow policy leaves to a rule
asking no one) is still recorded as an approval request: nobody is told about it, its
history starts with ``created`` and the policy's ``policy_decided`` in the insert's own
write, and it is settled at once, approved or rejected with the policy's reason, by
``policy:<name>`` (``decided`` and ``settled``). No standing grant is spent on it. A run
then goes through the same bound, spend-once path as an approved call (``executed``), so
``roomkit audit verify`` vouches for the chain of a call that ran without anyone.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from roomkit.models.decisions import Decision
from roomkit.tools.approvals import approve, reject
from roomkit.tools.human_input import created_with, decided_at_once, unannounced

if TYPE_CHECKING:
    from roomkit.policy.ruling import Ruling

__all__ = ["POLICY", "settling", "unasked"]

POLICY = "policy"
"""The surface of what a policy does on its own (its requests, its decisions)."""

_APPROVED = approve()
"""A decision cannot change: one serves every call."""


def settling(ruling: Ruling) -> Decision:
    """The decision a call nobody is asked about is settled with under ``ruling``:
    approved, or rejected with the policy's refusal."""
    return _APPROVED if ruling.refusal is None else reject(ruling.refusal)


@contextmanager
def unasked(
    ruling: Ruling, refusal: str | None, *, history: Sequence[dict[str, Any]] = ()
) -> Iterator[None]:
    """Approvals created inside record a call nobody is asked about, as ``ruling`` has it:
    settled at once, approved, or rejected with ``refusal`` when it is not ``None``; their
    history holds ``history`` after the policy's decision, in the same write."""
    entry = ruling.evidence
    evidence = (entry, *history) if entry is not None else tuple(history)
    decision = _APPROVED if refusal is None else reject(refusal)
    with (
        unannounced(),
        created_with(*evidence),
        decided_at_once(decision, by=ruling.by, surface=POLICY),
    ):
        yield
