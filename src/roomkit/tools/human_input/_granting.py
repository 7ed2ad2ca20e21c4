"""An approval's standing grants, looked for as it is made: a grant that covers the call
settles it at once, and nobody is asked.

On most stores the live grants on the call's tool are read first, and the request is held
when none covers it. A store that keeps its grants in the file of its requests
(:class:`~roomkit.stores.grants.InsertsUngranted`: SQLite) looks for live grants on the tool
in the write that inserts the request instead, one trip to the file rather than two: when
there are none, that write made the request; when there are some, it wrote nothing, and the
grants are read and used as on any other store. The look runs only where the request's
history starts with no routing entries (those are worked out once, for the request that is
made), and never for a call a policy decides as it is made (no grant is spent on it).

The grants that may cover a call are found among every live grant on its tool, however many
(:func:`~roomkit.stores.grants.every_live_grant`); the first still live at its use settles
the call, its use counted with the request's insert (:mod:`._granted`).
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import TYPE_CHECKING

from roomkit.core.context_vars import bound
from roomkit.models.pending_input import PendingInput
from roomkit.stores.grants import Grant, GrantStore, InsertsUngranted, every_live_grant
from roomkit.tools.human_input._at_once import at_once
from roomkit.tools.human_input._decisions import Decisions, also_created_with
from roomkit.tools.human_input._granted import settle_cited, settle_granted
from roomkit.tools.human_input._routed import opening

if TYPE_CHECKING:
    from roomkit.routing import Router

__all__ = [
    "GrantsOnTool",
    "covering_grants",
    "hold_unless_granted",
    "inserts_ungranted",
    "looking_for_grants",
]

logger = logging.getLogger("roomkit.policy.grants")

_LOOKING: ContextVar[bool] = ContextVar("roomkit_looking_for_grants", default=False)
_UNGRANTED: dict[type, bool] = {}
"""Whether each class of store met so far inserts ungranted: an isinstance against a
protocol costs microseconds at every call, a class's methods do not change."""


class GrantsOnTool(Exception):
    """The store holds live grants on the call's tool, and wrote nothing: one may cover it.

    Never leaves :func:`hold_unless_granted`, which reads and uses the grants then.
    """


def looking_for_grants() -> bool:
    """Whether the approval being inserted now looks for live grants in its insert."""
    return _LOOKING.get()


def inserts_ungranted(store: object) -> bool:
    """Whether ``store`` looks for live grants in the write that inserts a request
    (:class:`~roomkit.stores.grants.InsertsUngranted`), decided once per class of store."""
    kind = type(store)
    known = _UNGRANTED.get(kind)
    if known is None:
        known = _UNGRANTED[kind] = isinstance(store, InsertsUngranted)
    return known


@contextmanager
def _looking() -> Iterator[None]:
    with bound(_LOOKING, True):
        yield


async def covering_grants(grants: GrantStore, request: PendingInput) -> list[Grant]:
    """The grants that cover the approval ``request`` among every live grant on its tool,
    newest first (however many there are). Grants that cannot be read cover nothing: the
    failure is logged, and a person is asked."""
    # Imported here: the policy package sits beside the tools, not under them.
    from roomkit.policy.grants import covers

    try:
        live = await every_live_grant(grants, request.tool_name)
    except Exception:
        # A grant only spares a question: without the grants, the person is asked.
        logger.exception("The grants of %r could not be read: asking a person", request.tool_name)
        return []
    return [grant for grant in live if covers(grant, request) is None]


async def hold_unless_granted(
    decisions: Decisions,
    grants: GrantStore,
    router: Router | None,
    store: object,
    request: PendingInput,
    timeout: float | None,
    *,
    surface: str | None,
    about: str | None,
) -> PendingInput:
    """Settle the approval ``request`` with a live grant that covers it, or hold it for a
    person (its created entry, and its first routing assignments, written with it)."""
    # A call a policy decides as it is made is nobody's to approve: no grant is spent.
    look = at_once() is None
    routes = router is not None and router.routes(request)
    # A request its key re-attaches to may cite a use its process counted, and never settled.
    cited = settle_cited(decisions, request) if look and request.key is not None else None
    if look and not routes and inserts_ungranted(store):
        try:
            with _looking():
                return await decisions.hold(
                    request, timeout, surface=surface, about=about, reattaching=cited
                )
        except GrantsOnTool:
            pass  # live grants on the tool, read below: one may cover the call
    covering = await covering_grants(grants, request) if look else []
    if covering:
        settled = await settle_granted(
            decisions, grants, request, timeout, covering, surface=surface, about=about
        )
        if settled is not None:
            return settled
    # Its created entry goes in with it, before whatever the announcement leads to, and
    # so do its first assignments (on call, a rotation), read by every process.
    routing = await opening(router, request)
    written = False
    try:
        with also_created_with(*routing):
            held = await decisions.hold(
                request, timeout, surface=surface, about=about, reattaching=cited
            )
        # A rotation's pick is marked once its assignment is written with the request (not
        # with one its key re-attached to): a process killed before skips no one.
        written = held.pending_id == request.pending_id
        return held
    finally:
        if router is not None and routing:
            await router.opened(routing, written=written)
