"""Who may see (and so answer) a request, and follow a room's messages.

:class:`Access` applies the rule: the actor a request names; for a request with no actor,
the participants of its room; an approval's approvers; an administrator, everything; an
answer link, its one request. Deciding an approval takes being one of its approvers; a
question the directory routes is answered by whoever decides it now and by those who see it
without the directory, never by someone it was routed to before. Every surface that shows
people requests (the desk, Slack, the AG-UI and A2A endpoints) asks it.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable
from typing import TYPE_CHECKING

from roomkit.auth.principal import Principal
from roomkit.models.pending_input import PendingInput

if TYPE_CHECKING:
    from roomkit.core.framework import RoomKit

__all__ = ["Access"]


class Access:
    """Applies who-sees-what, reading rosters from the kit's room store."""

    def __init__(
        self,
        kit: RoomKit,
        routed: Callable[[PendingInput, str], Awaitable[bool]] | None = None,
        stands_in: Callable[[PendingInput, str], Awaitable[bool]] | None = None,
        routes: Callable[[PendingInput], bool] | None = None,
    ) -> None:
        self._kit = kit
        # The handler's routing: a delegate, a role's member, whoever is on call (and
        # whoever was, before the shift changed) sees the request too.
        self._routed = routed
        # And who, of those, stands in for an approver now (and so may decide).
        self._stands_in = stands_in
        # Whether the directory changes who decides a request at all.
        self._routes = routes

    @classmethod
    def of(cls, kit: RoomKit, handler: object) -> Access:
        """The access rule over ``kit``'s rooms and ``handler``'s routing, if it routes."""
        router = getattr(handler, "router", None)
        if router is None:
            return cls(kit)
        return cls(kit, router.may_see, router.may_decide, router.routes)

    async def participants(self, room_id: str) -> set[str]:
        """The ids on the room's roster (empty for an unknown room)."""
        if not room_id:
            return set()
        return {participant.id for participant in await self._kit.store.list_participants(room_id)}

    async def can_see(self, principal: Principal, request: PendingInput) -> bool:
        """True when ``principal`` may read, answer and reject ``request``."""
        if principal.request_id is not None:
            return request.pending_id == principal.request_id
        if principal.admin or _listed(principal, request):
            return True
        if self._routed is not None and await self._routed(request, principal.actor_id):
            return True
        if request.actor_id is not None:
            return request.actor_id == principal.actor_id
        return principal.actor_id in await self.participants(request.room_id)

    async def visible(
        self, principal: Principal, requests: Iterable[PendingInput]
    ) -> list[PendingInput]:
        """The requests ``principal`` may see, in order; each room's roster read once."""
        rosters: dict[str, set[str]] = {}
        seen: list[PendingInput] = []
        routed = self._routed
        mine = principal.request_id is None and not principal.admin
        for request in requests:
            if routed is not None and mine and await routed(request, principal.actor_id):
                seen.append(request)
                continue
            if (
                principal.request_id is not None
                or principal.admin
                or request.actor_id is not None
                or _listed(principal, request)
            ):
                if await self.can_see(principal, request):
                    seen.append(request)
                continue
            roster = rosters.get(request.room_id)
            if roster is None:
                roster = rosters[request.room_id] = await self.participants(request.room_id)
            if principal.actor_id in roster:
                seen.append(request)
        return seen

    async def may_decide(self, principal: Principal, request: PendingInput) -> bool:
        """True when ``principal``, who may see ``request``, may decide it too: an approval
        that lists approvers is decided by them (or by whoever stands in for one now, a
        delegate, a role's member, whoever is on call); a question the directory routes, by
        whoever stands in now and by those who see it without the directory; any other
        request, by whoever may see it."""
        actor_id = principal.actor_id
        stands_in = self._stands_in
        if request.kind != "approval":
            if stands_in is None or self._routes is None or not self._routes(request):
                return True
            # The one a shift or a rotation passed it on from sees it still, through the
            # directory, and may not answer it any more.
            return await self._sees_unrouted(principal, request) or await stands_in(
                request, actor_id
            )
        if not request.approvers or actor_id in request.approvers:
            return True
        return stands_in is not None and await stands_in(request, actor_id)

    async def _sees_unrouted(self, principal: Principal, request: PendingInput) -> bool:
        """Whether ``principal`` sees ``request`` without the directory: an administrator,
        an approver it lists, its actor, or, for a request with no actor, its room's
        participants. An answer link counts as the person it was sent to."""
        actor_id = principal.actor_id
        if principal.admin or actor_id in request.approvers:
            return True
        if request.actor_id is not None:
            return request.actor_id == actor_id
        return actor_id in await self.participants(request.room_id)

    async def can_see_room(self, principal: Principal, room_id: str) -> bool:
        """True when ``principal`` may follow the room's messages (participants, admins)."""
        if principal.admin:
            return True
        if principal.request_id is not None:
            return False
        return principal.actor_id in await self.participants(room_id)


def _listed(principal: Principal, request: PendingInput) -> bool:
    """Whether ``principal`` may decide ``request`` now, or is listed in its quorum (and
    follows it once they have voted)."""
    actor_id = principal.actor_id
    return actor_id in request.approvers or actor_id in request.voters
