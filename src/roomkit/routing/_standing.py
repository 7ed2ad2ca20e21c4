"""Who may decide a request, and for whom (:class:`Standing`), and who of them is told of it
(:func:`told`)."""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass

__all__ = ["Standing", "told"]

logger = logging.getLogger("roomkit.routing")


@dataclass(frozen=True, slots=True)
class Standing:
    """Why one actor may decide a request: for which approver of record, and how."""

    actor: str
    principal: str
    """The approver of record the decision counts for (an actor id, ``role:...`` or
    ``on-call:...``); on a quorum, one vote per principal."""
    delegation_id: str | None = None
    """The delegation it goes through, when the actor stands in for someone away."""
    on_behalf_of: str | None = None
    """The person of record the actor decides for, when it is not the actor themself."""


def told(
    pending_id: str, standings: Sequence[Standing], reaches: Callable[[str], bool] | None
) -> tuple[str, ...]:
    """Who of ``standings`` is told of the request ``pending_id``: for each approver of
    record, the one deciding (the last delegate of a chain in force, else the person); a
    delegate ``reaches`` says no surface reaches is passed over for the one before them."""
    chains: dict[str, list[str]] = {}
    for standing in standings:
        # A delegate replaces the person they stand in for; a role's members are each told.
        key = standing.actor
        if standing.delegation_id is not None and standing.on_behalf_of is not None:
            key = standing.on_behalf_of
        chains.setdefault(key, []).append(standing.actor)
    deciders: list[str] = []
    for person, chain in chains.items():
        deciding = chain[-1]
        if reaches is not None and not reaches(deciding):
            heard = [actor for actor in chain if reaches(actor)]
            if heard:
                logger.warning(
                    "routing: no surface reaches %s, who decides %s in %s's place; %s is "
                    "told instead: check the delegation's name, or give them a contact point",
                    ascii(deciding),
                    pending_id,
                    ascii(person),
                    ascii(heard[-1]),
                )
                deciding = heard[-1]
        deciders.append(deciding)
    return tuple(dict.fromkeys(deciders))
