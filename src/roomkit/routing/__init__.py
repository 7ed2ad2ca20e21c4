"""Routing: who decides a request now, through the directory's delegations, roles and
on-call schedules.

The handler builds a :class:`Router` from its directory
(``HumanInputHandler(directory=...)``); the desk and the notifier ask it who may decide a
request, who is told, and what the one who asked reads (``Alice is away until 12 Dec; Carol
is deciding``). On-call schedules come from an iCal feed or file (:class:`ICalOnCall`, the
``oncall`` extra) or PagerDuty's API (:class:`PagerDutyOnCall`, the same extra).
"""

from typing import TYPE_CHECKING, Any

from roomkit.routing._router import ROUTING, Router
from roomkit.routing._standing import Standing

if TYPE_CHECKING:
    from roomkit.routing.ical import ICalOnCall
    from roomkit.routing.pagerduty import PagerDutyOnCall

__all__ = ["ROUTING", "ICalOnCall", "PagerDutyOnCall", "Router", "Standing"]


def __getattr__(name: str) -> Any:
    # The schedules import their optional libraries only when they are used.
    if name == "ICalOnCall":
        from roomkit.routing.ical import ICalOnCall

        return ICalOnCall
    if name == "PagerDutyOnCall":
        from roomkit.routing.pagerduty import PagerDutyOnCall

        return PagerDutyOnCall
    raise AttributeError(f"module 'roomkit.routing' has no attribute {name!r}")
