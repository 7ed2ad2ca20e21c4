"""The first notice goes first, and the others in ladder order: no reminder, escalation or
edit reaches a person before the notices of the request's earlier steps have reached them
through the same surface.

A request's steps, in ladder order (:func:`ladder_place`), are its announcement, the steps
added with it or later (a ladder's in its order) and its ending. A notifier works out one
request's steps one at a time, in that order; a late one finds them all due at once, and
an announcement it owes is due before the rest (:data:`OWED`), so that it is claimed first.
Across notifiers, or when the announcement reaches the outbox late (a lost or slow change),
the order of a claim cannot tell: :func:`announced_first` holds every other step of an open
request back until its announcement is worked out, since an announcement worked out after an
escalation tells the people it added of the request a second time.

Each delivery then runs in a task of its own, and nothing else orders their sends. So a
follow-up delivery first reads the request's outbox: it goes once the announcement step is
planned and the delivery of each earlier step to its surface and recipient is done (sent,
given up or skipped), or when there is none (someone the request was escalated to hears of
it first by the escalation). Otherwise the notifier hands it back for later.
"""

from __future__ import annotations

from roomkit.stores.outbox import ENDING, STEPS, Outbox, OutboxItem, step_id

__all__ = [
    "FOLLOW_UPS",
    "OWED",
    "announced_first",
    "earlier_notices_out",
    "first_notice_out",
    "ladder_place",
]

FOLLOW_UPS = frozenset({"question_reminder", "question_escalated", "question_edited"})
"""The notices that follow an announcement to the same person."""

OWED = 0.0
"""When an announcement a notifier finds owed as it starts is due: before every step of the
request on any store's clock, whose ladder steps are due from its creation."""


def ladder_place(item: OutboxItem) -> tuple[int, float, int]:
    """Where an item comes among those of its request: deliveries first (they are sent side
    by side), then the steps in ladder order: the announcement; the steps added with it or
    later, by when they were added, a ladder's by its place in it (``remind0``,
    ``escalate1``, ...); the ending.

    A claimed step's due time cannot tell: a durable store gives the lease's end.
    """
    if item.lane != STEPS:
        return (0, 0.0, 0)
    job = str(item.body.get("job"))
    if job in ("announce", ENDING):
        return (1 if job == "announce" else 3, 0.0, 0)
    index = item.item_id.removeprefix(step_id(item.pending_id, job))
    return (2, item.created, int(index) if index.isdecimal() else 0)


async def _owed(outbox: Outbox, pending_id: str, due: float, now: float) -> None:
    """Add the announcement step of the open request ``pending_id``, which the outbox has
    not heard of (a lost change, a notifier that started between the request and its hint):
    the request is owed one, and the step's id makes a second one impossible."""
    announce = step_id(pending_id, "announce")
    await outbox.add([OutboxItem(announce, pending_id, due, {"job": "announce"}, created=now)])


async def announced_first(outbox: Outbox, item: OutboxItem, now: float) -> bool:
    """Whether the step ``item`` of an open request (a reminder, an escalation, an edit, a
    reassignment) may be worked out: the request's announcement step is done.

    Its people are those asked when the announcement is worked out: after an escalation, it
    would tell the person the request was escalated to of it a second time, as a new
    question. An announcement step the outbox never heard of is added, due before every
    step (:data:`OWED`).
    """
    announce = step_id(item.pending_id, "announce")
    for earlier in await outbox.items_for(item.pending_id):
        if earlier.item_id == announce:
            return earlier.done
    await _owed(outbox, item.pending_id, OWED, now)
    return False


async def first_notice_out(outbox: Outbox, item: OutboxItem, now: float) -> bool:
    """Whether the follow-up delivery ``item`` may be sent: the announcement is planned, and
    the notices of the steps before its own are out to its surface and recipient.

    An announcement step the outbox never heard of is added, due at ``now``.
    """
    pending_id = item.pending_id
    announce = step_id(pending_id, "announce")
    body = item.body
    to = f".{body.get('surface')}.{body.get('recipient') or '-'}"
    known = {earlier.item_id: earlier for earlier in await outbox.items_for(pending_id)}
    step = known.get(announce)
    if step is None:
        await _owed(outbox, pending_id, now, now)
        return False
    own = known.get(item.item_id.removesuffix(to), step)
    before = [s for s in known.values() if s.lane == STEPS and ladder_place(s) < ladder_place(own)]
    told = (known.get(earlier.item_id + to) for earlier in (step, *before))
    return step.done and all(notice is None or notice.done for notice in told)


async def earlier_notices_out(outbox: Outbox, item: OutboxItem) -> bool:
    """Whether the ending delivery ``item`` may be sent: no earlier notice to its surface
    and recipient is still on its way. A reminder sent while the request settled would
    otherwise land after the ending, and the ending could not update the message it left
    (a Slack message saying "Still waiting")."""
    body = item.body
    return not any(
        not earlier.done
        and earlier.item_id != item.item_id
        and earlier.body.get("job") == "deliver"
        and earlier.body.get("type") != "question_settled"
        and earlier.body.get("surface") == body.get("surface")
        and earlier.body.get("recipient") == body.get("recipient")
        for earlier in await outbox.items_for(item.pending_id)
    )
