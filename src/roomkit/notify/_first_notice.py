"""The first notice goes first: no reminder, escalation or edit reaches a person before the
announcement of the same request has reached them through the same surface.

A ladder's steps are recorded with the request, due from its creation; the announcement is
added when a notifier hears of the request, and each delivery runs in a task of its own. On
a busy or late notifier both can be due at once, and nothing else orders their sends. So a
follow-up delivery first reads the request's outbox: it goes once the announcement step is
planned and its delivery to this surface and recipient is done (sent, given up or skipped),
or when there is none (someone the request was escalated to hears of it first by the
escalation). Otherwise the notifier hands it back for later.
"""

from __future__ import annotations

from roomkit.stores.outbox import Outbox, OutboxItem, step_id

__all__ = ["FOLLOW_UPS", "first_notice_out"]

FOLLOW_UPS = frozenset({"question_reminder", "question_escalated", "question_edited"})
"""The notices that follow an announcement to the same person."""


async def first_notice_out(outbox: Outbox, item: OutboxItem, now: float) -> bool:
    """Whether the follow-up delivery ``item`` may be sent: the announcement it follows is
    out to its surface and recipient.

    An announcement step the outbox never heard of (a lost change, a notifier that started
    between the request and its hint) is added, due at ``now``: the request is open, so it
    is owed one, and the step's id makes a second one impossible.
    """
    pending_id = item.pending_id
    announce = step_id(pending_id, "announce")
    body = item.body
    first = f"{announce}.{body.get('surface')}.{body.get('recipient') or '-'}"
    known = {earlier.item_id: earlier for earlier in await outbox.items_for(pending_id)}
    step = known.get(announce)
    if step is None:
        await outbox.add([OutboxItem(announce, pending_id, now, {"job": "announce"}, created=now)])
        return False
    told = known.get(first)
    return step.done and (told is None or told.done)
