"""The handler's routing: a :class:`~roomkit.routing.Router` over its directory, on the
store's clock, and the routing a request gets when it is made."""

from __future__ import annotations

import logging
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from roomkit.models.clock import utcnow
from roomkit.models.pending_input import PendingInput
from roomkit.people import Directory
from roomkit.routing import Router
from roomkit.tools.human_input._at_once import at_once

if TYPE_CHECKING:
    from roomkit.tools.human_input.handler import HumanInputHandler

__all__ = ["answered_for", "opening", "routed"]

logger = logging.getLogger("roomkit.tools.human_input")


def routed(handler: HumanInputHandler, directory: Directory | None) -> Router | None:
    """The router of ``handler`` over ``directory`` (``None`` without one).

    Its clock is the store's on a durable store (so every process sharing it agrees on
    who is away), the wall clock otherwise.

    Raises:
        TypeError: ``directory`` is not a :class:`Directory`.
    """
    if directory is None:
        return None
    if not isinstance(directory, Directory):
        raise TypeError(f"directory must be a Directory, got {type(directory).__name__}")

    def clock() -> datetime:
        if handler.durable:
            return datetime.fromtimestamp(float(handler.store.clock()), UTC)  # type: ignore[union-attr]
        return utcnow()

    return Router(directory, handler, clock)


async def opening(router: Router | None, request: PendingInput) -> list[dict[str, Any]]:
    """The routing entries the approval ``request`` starts its history with (its on-call
    schedules' and rotation roles' first assignments), written with it; none without a
    router, or for a call a policy settles as it is made (routed to no one). A failure is
    logged: the request is made, and routed at its first notice, ladder step or answer."""
    if router is None or at_once() is not None:
        return []
    try:
        return await router.opening(request)
    except Exception:
        logger.exception("could not route %s", request.pending_id)
        return []


async def answered_for(
    handler: HumanInputHandler, pending_id: str, by: str | None
) -> dict[str, Any] | None:
    """Whom ``by`` answers the question ``pending_id`` for, as its ``settled`` entry
    names it (``on_behalf_of``, ``delegation_id``), when they stand in for its actor;
    ``None`` otherwise. An approval's decision names it in its ``decided`` entry instead."""
    router = handler.router
    if router is None or by is None:
        return None
    request = await handler.get_request(pending_id)
    if request is None or request.kind == "approval" or not router.routes(request):
        return None
    standing = await router.standing(request, by)
    if not standing or standing[0].delegation_id is None:
        return None
    return {"on_behalf_of": standing[0].on_behalf_of, "delegation_id": standing[0].delegation_id}
