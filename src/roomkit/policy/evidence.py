"""A policy's decision as its ``policy_decided`` history entry records it, made when read.

:class:`PolicyEvidence` holds what the entry is made of: the policy's name and version, the
call as the policy read it, the decision and its reason, whether it was enforced, whether
the policy failed, and when it decided. :meth:`PolicyEvidence.entry` makes the entry, with
its ``input_digest`` (:func:`input_digest`). A call nobody is asked about, recorded on the
memory store, keeps the evidence itself in its history, which the store links when it is
read: the input is digested then, from the call the evidence holds, to the value it has
when the entry is made at once (as every other path makes it, when it records it).
"""

from __future__ import annotations

import hashlib
import json
from typing import TYPE_CHECKING, Any, NamedTuple

from roomkit.stores import check_entry, stamp_time

if TYPE_CHECKING:
    from roomkit.policy.decisions import DecisionName, PolicyCall

__all__ = ["PolicyEvidence", "input_digest"]

_CANONICAL = json.JSONEncoder(
    sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str
)
"""What :func:`input_digest` encodes with: ``json.dumps`` with options makes one per call."""

_PLAIN_CHARS = 4096
"""The texts of evidence this long at most, in ASCII, make an entry any history takes."""


def input_digest(call: PolicyCall) -> str:
    """The SHA-256 hex digest of the call as the policy reads it (canonical JSON)."""
    text = _CANONICAL.encode(call.to_input())
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class PolicyEvidence(NamedTuple):
    """A policy's decision on one call: what its ``policy_decided`` entry is made of."""

    policy: str
    """The policy's name."""
    version: str | None
    """Which text of the policy decided, if it says."""
    call: PolicyCall
    """The call as the policy read it (``input_digest`` is its digest)."""
    decision: DecisionName
    """What it decided."""
    reason: str | None
    """Why, as the policy said (or the failure that decided for it)."""
    enforced: bool
    """``False`` in shadow mode."""
    failed: bool
    """``True`` when the policy failed and ``on_error`` decided."""
    at: int
    """When, in nanoseconds since the epoch (``time.time_ns()``)."""

    def entry(self) -> dict[str, Any]:
        """The ``policy_decided`` entry, made now from the evidence: the same every time."""
        entry = {
            "type": "policy_decided",
            "at": stamp_time(self.at),
            "actor": f"policy:{self.policy}",
            "surface": "policy",
            "policy": self.policy,
            "version": self.version,
            "input_digest": input_digest(self.call),
            "decision": self.decision,
            "reason": self.reason,
            "enforced": self.enforced,
            "automatic": True,
        }
        if self.failed:
            entry["error"] = True
        return entry

    def checked(self) -> PolicyEvidence:
        """The evidence, once its entry is known to be one any history takes.

        Raises:
            TypeError, ValueError, InvalidTextError: as
                :func:`~roomkit.stores.check_entry` on its entry.
        """
        policy, version, reason = self.policy, self.version, self.reason
        texts = policy
        if version is not None:
            texts = texts + version if type(version) is str else ""
        if reason is not None:
            texts = texts + reason if type(reason) is str else ""
        # Its own fields are ASCII (the digest, the decision, the time) and of their types;
        # ASCII texts of the policy's, short enough, keep the entry short and storable.
        if not (type(policy) is str and texts and texts.isascii() and len(texts) <= _PLAIN_CHARS):
            check_entry(self.entry())
        return self
