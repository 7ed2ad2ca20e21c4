"""What the handler's directory adds to a request's view: who decides it now, and why.

A request routed by the directory (a delegate deciding for someone away, a role, whoever is
on call) is decided by people its ``approvers`` do not name. Its view says who they are
(``deciding``: the page offers them the decision) and what the one who asked reads
(``routing``: ``Alice is away until 12 Dec; Carol is deciding``). A request the directory
does not touch, or one settled, keeps its plain view: nothing is read for it.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from roomkit.desk.shapes import view_of
from roomkit.models.pending_input import PendingInput, PendingInputStatus
from roomkit.routing import Router
from roomkit.tools.human_input import HumanInputHandler

__all__ = ["routed_view", "routed_views"]


async def routed_view(handler: HumanInputHandler, request: PendingInput) -> dict[str, Any]:
    """``request``'s view, with ``deciding`` and ``routing`` when the directory routes it."""
    view = view_of(request)
    # A stand-in handler (a test double, a wrapper) may have no routing at all.
    router: Router | None = getattr(handler, "router", None)
    if router is None or request.status is not PendingInputStatus.PENDING:
        return view
    if not router.routes(request):
        return view
    standings = await router.standings(request)
    view["deciding"] = list(dict.fromkeys(standing.actor for standing in standings))
    view["routing"] = await router.status(request)
    return view


async def routed_views(
    handler: HumanInputHandler, requests: Iterable[PendingInput]
) -> list[dict[str, Any]]:
    """:func:`routed_view` of each request, in order."""
    return [await routed_view(handler, request) for request in requests]
