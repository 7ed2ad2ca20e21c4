"""How often each policy allowed, denied, asked or abstained, per tool, in this process.

The desk's ``/metrics`` shows these counts as ``roomkit_policy_decisions{policy, tool,
decision, enforced}``, and its policy page lists them: a shadow policy's counts say how
often it *would* have allowed, denied or asked before it is enforced.
"""

from __future__ import annotations

import threading
from collections import Counter
from dataclasses import dataclass

__all__ = ["PolicyCount", "count", "counts", "reset"]

_COUNTS: Counter[tuple[str, str, str, bool]] = Counter()
_LOCK = threading.Lock()


@dataclass(frozen=True, slots=True)
class PolicyCount:
    """How many calls to one tool one policy decided one way."""

    policy: str
    tool: str
    decision: str
    """``allow``, ``deny``, ``ask`` or ``abstain``."""
    enforced: bool
    """``False`` for a shadow policy's decisions."""
    calls: int


def count(policy: str, tool: str, decision: str, *, enforced: bool) -> None:
    """Count one decision."""
    with _LOCK:
        _COUNTS[(policy, tool, decision, enforced)] += 1


def counts() -> list[PolicyCount]:
    """Every count so far, sorted by policy, tool and decision."""
    with _LOCK:
        items = sorted(_COUNTS.items())
    return [PolicyCount(*key, calls) for key, calls in items]


def reset() -> None:
    """Forget every count (a test's fresh start)."""
    with _LOCK:
        _COUNTS.clear()
