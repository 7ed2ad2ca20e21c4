"""The handler's approvals: a call held for a decision, and the approvers added to one.

A mixin of :class:`~roomkit.tools.human_input.HumanInputHandler`: an approval is a request
whose ``kind`` is ``"approval"``, bound to its arguments by their digest, and made through
the same steps as a question (:meth:`create`'s checks, then the engine), unless a standing
grant covers the call (:mod:`roomkit.policy.grants`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from roomkit.models.enums import ChannelType
from roomkit.models.pending_input import PendingInput
from roomkit.stores.grants import GrantStore
from roomkit.tools.human_input._checks import check_by, check_options, check_surface
from roomkit.tools.human_input._decisions import Decisions
from roomkit.tools.human_input._granting import hold_unless_granted
from roomkit.tools.human_input._ids import check_id
from roomkit.tools.human_input._routed import checked_approvers

if TYPE_CHECKING:
    from roomkit.routing import Router
    from roomkit.tools.human_input._durable_engine import DurableEngine
    from roomkit.tools.human_input._memory_engine import MemoryEngine

__all__ = ["Approving"]


class Approving:
    """:meth:`create_approval` and :meth:`add_approvers`, on the handler's engine."""

    __slots__ = ()

    _new: Callable[..., PendingInput]
    _decisions: Decisions
    _engine: MemoryEngine | DurableEngine
    grants: GrantStore
    router: Router | None

    async def create_approval(
        self,
        tool_name: str,
        arguments: dict[str, Any],
        *,
        approvers: Iterable[str] = (),
        tool_schema: dict[str, Any] | None = None,
        room_id: str = "",
        tool_call_id: str = "",
        channel_id: str = "",
        channel_type: ChannelType = ChannelType.AI,
        actor_id: str | None = None,
        key: str | None = None,
        timeout: float | None = None,
        surface: str | None = None,
        description: str | None = None,
        quorum: int | None = None,
        veto: bool = True,
        decisions: Iterable[str] | None = None,
    ) -> PendingInput:
        """Hold the call ``tool_name(arguments)`` for a decision; ``wait()`` owns cleanup.

        The request's ``kind`` is ``"approval"``, its ``arguments_digest`` binds it to
        ``arguments``, and ``approvers`` may decide it (``aresolve`` with the JSON of
        :mod:`roomkit.tools.approvals`), or, with ``quorum``, vote (that many must approve;
        one rejection vetoes unless ``veto=False``). ``tool_schema`` is the tool's JSON
        Schema, kept as the request's ``answer_schema``: an edit must match it. Its history
        starts with ``created``, which keeps ``description`` (the tool's) when given.
        ``decisions`` limits the decisions it takes (e.g. ``["approve", "reject"]`` for a
        framework that carries no edit): ``aresolve`` refuses any other with
        :class:`InvalidAnswerError`; the list is kept in the ``answer_schema`` under
        ``"x-roomkit-decisions"``, where surfaces read it. Other arguments as :meth:`create`.

        A live standing grant covering the call (:mod:`roomkit.policy.grants`) settles it
        approved at once, without announcing it: its history cites the grant
        (``grant_used``).

        Raises:
            HandlerClosedError: as :meth:`create`.
            InvalidTextError: as :meth:`create`.
            ArgumentsTooLargeError: as :meth:`create`.
            StoreUnavailableError: as :meth:`create`.
            KeyConflictError: ``key`` names a request made for another call (another
                tool, or other arguments than those it was made for).
            TypeError: bad ``approvers``, ``quorum``, ``decisions`` or ``surface``.
            ValueError: bad ``approvers`` (a role or on-call schedule the directory lacks
                too, an id over ``MAX_ID_CHARS`` characters, more than ``MAX_APPROVERS``
                ids: 100) or ``quorum``, or ``decisions`` without ``"reject"``; an id or
                ``key`` too long, as :meth:`create`; a ``surface`` over ``MAX_ID_CHARS``
                characters (:mod:`roomkit.models.json_limits`). Nothing was stored.
        """
        check_surface(surface)
        chosen = checked_approvers(self.router, approvers)
        request = self._new(
            tool_name, arguments, room_id, tool_call_id, channel_id, channel_type, actor_id, False
        )
        check_options(request, key, None, timeout)
        self._decisions.prepare(request, chosen, tool_schema, quorum, veto, decisions)
        return await self._hold(request, timeout, surface, description)

    async def _hold(
        self, request: PendingInput, timeout: float | None, surface: str | None, about: str | None
    ) -> PendingInput:
        """Store the prepared approval ``request`` and ask for a decision, unless a live
        standing grant that covers the call settles it at once (nobody is asked)."""
        return await hold_unless_granted(
            self._decisions,
            self.grants,
            self.router,
            self._engine.store,
            request,
            timeout,
            surface=surface,
            about=about,
        )

    async def add_approvers(
        self,
        pending_id: str,
        actors: Iterable[str],
        *,
        by: str | None = None,
        surface: str | None = None,
    ) -> bool:
        """Let ``actors`` answer the open request too (an escalation, in its history as
        ``escalated``); ``False`` when it is not open. A question's actor stays one of them.

        Raises:
            TypeError: ``actors`` is one string, or ``surface`` is no ``str``.
            ValueError: ``actors`` are no actor ids, as :meth:`create_approval`'s
                ``approvers``; or with the approvers listed already they make more than
                :data:`~roomkit.models.json_limits.MAX_APPROVERS` (100); or ``by`` or
                ``surface`` is longer than :data:`~roomkit.models.json_limits.MAX_ID_CHARS`
                (256) characters. Nothing was stored.
        """
        check_id("pending_id", pending_id)
        check_by(by)
        check_surface(surface)
        chosen = checked_approvers(self.router, actors, name="actors")
        return await self._decisions.add_approvers(pending_id, chosen, by, surface)
