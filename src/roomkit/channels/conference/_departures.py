"""Departures: the requests a participant leaving a conference leaves nobody to answer.

A request of the room's session is for the participant who spoke (``actor_id``), or for
anyone in the conference when nobody had spoken yet (``actor_id`` is ``None``); an approval
names its approvers. When the participant who leaves is the last who may answer (the one
asked, the sole approver, the last one present for a request for anyone), the request is
refused at once, so that the model reads why instead of waiting for the deadline: the
request keeps the reason, and its history records the refusal by nobody in person, through
the ``conference`` surface. A request someone else may still answer (another
approver, another participant) stays open. A quorum's vote needs a voter, so a quorum
approval is left to its deadline.
"""

from __future__ import annotations

import logging
from collections.abc import Set

from roomkit.models.pending_input import PendingInput
from roomkit.tools.human_input import HumanInputHandler
from roomkit.tools.texts import PARTICIPANT_LEFT

__all__ = ["SURFACE", "refuse_departed"]

SURFACE = "conference"
"""The surface a departure's refusal is recorded through."""

logger = logging.getLogger("roomkit.channels.conference")


async def refuse_departed(
    handler: HumanInputHandler,
    channel_id: str,
    room_id: str,
    participant_id: str,
    present: Set[str],
) -> None:
    """Refuse the open requests of ``room_id`` on ``channel_id`` that ``participant_id``,
    who has left, was the last who could answer; ``present`` is who is still there."""
    try:
        requests = await handler.list_pending(room_id=room_id, channel_id=channel_id)
    except Exception:
        logger.exception("Could not read the open requests of room %s", room_id)
        return
    for request in requests:
        if not _orphaned(request, participant_id, present):
            continue
        try:
            await handler.areject(request.pending_id, PARTICIPANT_LEFT, surface=SURFACE)
        except Exception:
            logger.exception("Could not refuse request %s, whose person left", request.pending_id)


def _orphaned(request: PendingInput, participant_id: str, present: Set[str]) -> bool:
    """Whether nobody but ``participant_id`` could answer ``request``."""
    if request.quorum is not None:
        return False
    if request.approvers:
        return set(request.approvers) == {participant_id}
    if request.actor_id is None:
        return not present
    return request.actor_id == participant_id
