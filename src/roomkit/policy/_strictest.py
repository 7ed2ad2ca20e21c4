"""The one ask a failed policy's call is held under, when the policy might have asked on any
of several terms (the ``ask:`` policies of a Cedar set that might apply to the tool).

A fallback is never more lenient than an ask it stands in for: it asks the approvers of them
all, with a quorum no approval meets without meeting each ask's own quorum among that ask's
own approvers. Of ``S`` approvers in all, an ask naming ``A`` of them with a quorum ``q`` is
met by any ``q + |S - A|`` of them (at worst, every one it does not name is among them), so
the quorum is the largest such count: one ask alone keeps its own terms; asks naming nobody
in common need every approver. A term an ask leaves out is the tool's rule's (its approvers,
its quorum, else one approval), as it would be had the ask been made. An ask whose approvers
would be the default one, the call's own actor, adds no one: a call the policy could not
decide is never put to its own actor while someone else is named.
"""

from __future__ import annotations

from collections.abc import Iterable

from roomkit.policy.decisions import Ask
from roomkit.tools.approvals import Approval

__all__ = ["strictest"]


def strictest(asks: Iterable[Ask], rule: Approval | None, reason: str) -> Ask:
    """One ask at least as strict as each of ``asks`` under the tool's ``rule``: their
    approvers, a quorum each ask's own terms hold in (see the module), and the longest
    timeout any names; ``Ask(reason=reason)`` (the rule's terms) when none names anyone."""
    base = rule if rule is not None else Approval()
    every: dict[str, None] = {}
    terms: list[tuple[int, int]] = []  # each ask's quorum, and how many approvers it names
    timeouts: list[float] = []
    ruled = base.quorum.n if base.quorum is not None else 1
    for ask in asks:
        named = dict.fromkeys(ask.approvers if ask.approvers is not None else base.approvers)
        if not named:
            continue
        quorum = ask.quorum if ask.quorum is not None else ruled
        terms.append((min(quorum, len(named)), len(named)))
        every.update(named)
        timeout = ask.timeout if ask.timeout is not None else base.timeout
        if timeout is not None:
            timeouts.append(timeout)
    if not terms:
        return Ask(reason=reason)
    # Each ask's approvers are among ``every``: the ones it does not name are the others.
    quorum = max(own + len(every) - count for own, count in terms)
    return Ask(
        list(every),
        # One approval is what an ask with no quorum of its own needs, the rule having none.
        quorum if quorum > 1 or base.quorum is not None else None,
        max(timeouts, default=None),
        reason,
    )
