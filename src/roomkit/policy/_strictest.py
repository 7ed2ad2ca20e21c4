"""The one ask a failed policy's call is held under, when the policy might have asked on any
of several terms (the ``ask:`` policies of a Cedar set that might apply to the tool).

A fallback is never more lenient than an ask it stands in for: it asks the approvers of them
all, with a quorum no approval meets without meeting each ask's own quorum among that ask's
own approvers. Of ``S`` approvers in all, an ask naming ``A`` of them with a quorum ``q`` is
met by any ``q + |S - A|`` of them (at worst, every one it does not name is among them), so
the quorum is the largest such count: one ask alone keeps its own terms; asks naming nobody
in common need every approver. A term an ask leaves out is the tool's rule's (its approvers,
its quorum, else one approval), as it would be had the ask been made; and an ask naming no
quorum and fewer approvers than the rule's quorum stands for the rule's terms, under which
it would be held had it been made. An ask whose approvers would be the default one, the
call's own actor, adds no one: a call the policy could not decide is never put to its own
actor while someone else is named.

Several asks that all apply to one call (the ``ask:`` policies of a Cedar set) are combined
the same way: the call needs each one's approval. The policy cannot know the tool's rule, so
it decides an :class:`Asks`, their combination under no rule, holding the asks themselves,
which the ruling combines again under the rule.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from roomkit.policy.decisions import Ask
from roomkit.tools.approvals import Approval

__all__ = ["Asks", "each", "strictest"]


@dataclass(frozen=True, slots=True, init=False)
class Asks(Ask):
    """Several asks applying to one call, each to be met: its own terms are their
    combination under no rule (:func:`strictest`), and the ruling combines :attr:`asks`
    again under the tool's rule (a term an ask leaves out is the rule's).

    Args:
        asks: the asks, in the order their policies are written.
    """

    asks: tuple[Ask, ...]
    """The asks that applied, each on its own terms."""

    def __init__(
        self,
        approvers: str | Iterable[str] | None = None,
        quorum: int | None = None,
        timeout: float | None = None,
        reason: str = "",
        asks: Iterable[Ask] = (),
    ) -> None:
        # Not super(): the slotted dataclass is a new class, which its methods' super() misses.
        Ask.__init__(self, approvers, quorum, timeout, reason)
        object.__setattr__(self, "asks", tuple(asks))


def each(asks: Sequence[Ask], reason: str) -> Ask:
    """The ask of a call ``asks`` (one at least) all apply to: the one alone, else an
    :class:`Asks` met only by an approval meeting each; ``reason`` either way."""
    if len(asks) == 1:
        (ask,) = asks
        return Ask(ask.approvers, ask.quorum, ask.timeout, reason)
    combined = strictest(asks, None, reason)
    return Asks(combined.approvers, combined.quorum, combined.timeout, reason, asks)


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
        quorum = ask.quorum if ask.quorum is not None else ruled
        if ask.quorum is None and quorum > len(named):
            # Fewer approvers than the rule's quorum: made alone, the ask is held under the
            # rule's terms (it cannot be met), so it stands for them here too.
            named = dict.fromkeys(base.approvers)
        if not named:
            continue
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
