"""The handler's routing: a :class:`~roomkit.routing.Router` over its directory, on the
store's clock, the approvers it takes, and the routing a request gets when it is made."""

from __future__ import annotations

import logging
from collections.abc import Iterable
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from roomkit.models.clock import utcnow
from roomkit.models.json_limits import check_approver_count
from roomkit.models.pending_input import PendingInput
from roomkit.people import Directory, reference_of
from roomkit.routing import Router
from roomkit.tools.human_input._at_once import at_once
from roomkit.tools.human_input._decisions import check_actors

if TYPE_CHECKING:
    from roomkit.tools.human_input.handler import HumanInputHandler

__all__ = ["answered_for", "check_approvers", "checked_approvers", "opening", "routed"]

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


def checked_approvers(
    router: Router | None, actors: Iterable[str], *, name: str = "approvers"
) -> tuple[str, ...]:
    """``actors`` as :func:`check_actors` takes them, each role and on-call schedule among
    them one the directory has. Without a directory a group is taken, with a warning: a
    process on the same store whose handler has the directory may route it.

    Raises:
        TypeError: as :func:`check_actors`.
        ValueError: as :func:`check_actors`; or a role or schedule the directory lacks
            (a misspelt name would leave the request to nobody).
    """
    chosen = check_actors(actors, name=name)
    for actor in chosen:
        reference = reference_of(actor)
        if reference is None:
            continue
        if router is None:
            kind, group = reference
            logger.warning(
                "%s name the %s %r, and this handler has no directory: only a handler "
                "with one routes it; give it HumanInputHandler(directory=...)",
                name,
                "role" if kind == "role" else "on-call schedule",
                group,
            )
            continue
        _check_known(router.directory, reference, name)
    return chosen


def check_approvers(
    actors: Iterable[str], *, actor_id: str | None = None, directory: Directory | None = None
) -> tuple[str, ...]:
    """Refuse the approvers that :meth:`HumanInputHandler.add_approvers` would refuse once
    a new question asked of ``actor_id`` is made, before anything is stored: for code that
    makes the question and adds its approvers in two steps (Temporal's create activity).

    The question lists its actor first among its approvers, so the actor counts towards
    :data:`~roomkit.models.json_limits.MAX_APPROVERS`. Each role and on-call schedule
    among ``actors`` must be one ``directory`` has (without one, any is taken: the
    handler warns when it adds them). Returns ``actors`` as ``add_approvers`` lists them.

    Raises:
        TypeError: ``actors`` is one string.
        ValueError: an id is empty or no string, or longer than
            :data:`~roomkit.models.json_limits.MAX_ID_CHARS` characters; with the actor
            they are more than :data:`~roomkit.models.json_limits.MAX_APPROVERS`; or a role
            or schedule ``directory`` lacks. The message says which.
    """
    chosen = check_actors(actors, name="approvers")
    if chosen and isinstance(actor_id, str):
        check_approver_count(len(dict.fromkeys((actor_id, *chosen))), "approvers and the actor")
    if directory is not None:
        for actor in chosen:
            reference = reference_of(actor)
            if reference is not None:
                _check_known(directory, reference, "approvers")
    return chosen


def _check_known(directory: Directory, reference: tuple[str, str], name: str) -> None:
    """Refuse the role or on-call schedule ``reference`` (its kind and its name) when
    ``directory`` lacks it: a misspelt name would leave the request to nobody."""
    kind, group = reference
    known = directory.roles if kind == "role" else directory.on_call
    if group in known:
        return
    what = "role" if kind == "role" else "on-call schedule"
    has = ", ".join(repr(n) for n in sorted(known)) or "none"
    where = "roles" if kind == "role" else "on_call"
    raise ValueError(
        f"{name}: the directory has no {what} {group!r} (it has {has}): correct the "
        f"name, or add it to Directory({where}=...)"
    )


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
