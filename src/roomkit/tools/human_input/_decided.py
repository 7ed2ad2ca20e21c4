"""A call nobody is asked about, recorded: the approval a decision settles as it is made.

:func:`create_decided` records it as :func:`~roomkit.tools.human_input.decided_at_once`
inside :func:`~roomkit.tools.human_input.unannounced` does (an approval nobody is told
about, its history ``created``, the caller's entries, ``decided`` and ``settled``), with
everything passed explicitly, and leaves it retired, as a ``wait()`` on it would. On the
memory store an approval or a rejection is stored, settled and retired in one synchronous
step (:meth:`MemoryEngine.add_settled`): no announcement, no standing grant looked up, no
wait parked, and its whole history kept as what its entries are made of, made and linked
when it is read (:mod:`~roomkit.tools.human_input._later`; its ``created`` entry holds a
copy of the arguments of its own, so nothing the tool does to those it is handed changes
it). On a durable store, and for a request named by its key (which may
re-attach to one a person was asked about), the request, made the same way, is held as
:meth:`~roomkit.tools.human_input.HumanInputHandler.create_approval` holds one: on a
durable store stored settled in one write, its whole history with it
(:class:`~roomkit.stores.base.InsertsSettled`).
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, cast

from roomkit.core.exceptions import HumanInputRejectedError
from roomkit.models.enums import ChannelType
from roomkit.stores import check_entry
from roomkit.tools.human_input._announce import unannounced
from roomkit.tools.human_input._at_once import decided_at_once
from roomkit.tools.human_input._checks import check_options, check_surface
from roomkit.tools.human_input._decisions import _created, check_actors, created_with
from roomkit.tools.human_input._later import settled_at_once
from roomkit.tools.human_input._memory_engine import MemoryEngine
from roomkit.tools.human_input._memory_trail import LaterEntry

if TYPE_CHECKING:
    from roomkit.models.decisions import Decision
    from roomkit.models.history import Entry
    from roomkit.models.pending_input import PendingInput
    from roomkit.tools.human_input.handler import HumanInputHandler

__all__ = ["create_decided"]

_AT_ONCE = frozenset({"approve", "reject"})
"""The decisions settled as the request is made, in one step on the memory store."""


async def create_decided(
    handler: HumanInputHandler,
    tool_name: str,
    arguments: dict[str, Any],
    decision: Decision,
    *,
    by: str | None,
    surface: str | None = None,
    digest: str | None = None,
    history: Sequence[dict[str, Any] | Entry | LaterEntry] = (),
    tool_schema: dict[str, Any] | None = None,
    room_id: str = "",
    tool_call_id: str = "",
    channel_id: str = "",
    channel_type: ChannelType = ChannelType.AI,
    actor_id: str | None = None,
    key: str | None = None,
    description: str | None = None,
) -> PendingInput:
    """Record the call ``tool_name(arguments)``, settled with ``decision`` by ``by``
    (through ``surface``) as it is made, nobody asked.

    The approval's approvers are ``by`` alone; ``history`` (a policy's decision, say)
    follows its ``created`` entry. The request returned is settled and retired. The
    arguments not listed below are those of :meth:`HumanInputHandler.create_approval`.

    Args:
        arguments: kept by the request as they are: the caller's own copy.
        digest: ``arguments_digest(tool_name, arguments)`` when the caller has it already.
        history: entries, or later entries (an object with ``entry()`` and ``checked()``,
            such as a policy's evidence), which the memory store keeps as they are and
            makes into entries when the history is read.

    Raises:
        HandlerClosedError, InvalidTextError, StoreUnavailableError: as ``create_approval``.
        TypeError, ValueError, InvalidTextError: an entry of ``history``, or one the settle
            writes (its ``decided`` entry, with the reason), is no history entry
            (as :func:`~roomkit.stores.check_entry`); nothing is stored.
        ValueError: ``surface`` is longer than
            :data:`~roomkit.models.json_limits.MAX_ID_CHARS` (256) characters; nothing is
            stored.
    """
    check_surface(surface)
    approvers = (by,) if by is not None else ()
    engine = handler._engine
    decisions = handler._decisions
    request = handler._new(
        tool_name, arguments, room_id, tool_call_id, channel_id, channel_type, actor_id, False
    )
    if key is None and type(engine) is MemoryEngine:
        decisions.prepare(request, approvers, tool_schema, digest=digest)
        evidence = tuple(map(_checked, history))
        if decision.kind in _AT_ONCE and (decisions.router is None or by is None):
            # The history is the request's alone, kept as what its entries are made of (its
            # created entry holds a copy of the arguments: the request's go to the tool).
            status, text, created_at_once, then = settled_at_once(
                request, decision, by, surface, description
            )
            kept = cast("tuple[dict[str, Any], ...]", (created_at_once, *evidence, *then))
            engine.add_settled(request, status, text, by, kept)
            return request
        created = _created(request, surface, description)
        made = [_made(item) for item in evidence]
        engine.add(request, None, (created, *cast("list[dict[str, Any]]", made)), announce=False)
        await decisions.decide(request, decision, by, surface)
        engine.store.retire(request)
        return request
    check_options(request, key, None, None)
    decisions.prepare(request, check_actors(approvers), tool_schema, digest=digest)
    # The entries the settle writes, checked before the request is stored: one a history
    # refuses would leave the request pending, its call never run nor refused.
    for later in settled_at_once(request, decision, by, surface, description)[3]:
        check_entry(later.entry())
    with (
        unannounced(),
        created_with(*map(_made, history)),
        decided_at_once(decision, by=by, surface=surface),
    ):
        request = await handler._hold(request, None, surface, description)
    # The wait collects the settled request (the handler's cleanup of a request it made).
    with contextlib.suppress(HumanInputRejectedError):
        await handler.wait(request.pending_id, timeout=None)
    return request


def _checked(item: dict[str, Any] | Entry | LaterEntry) -> dict[str, Any] | LaterEntry:
    """``item`` checked: a later entry checks itself, anything else as an entry."""
    if getattr(type(item), "checked", None) is None:
        return check_entry(item)
    return item.checked()  # type: ignore[union-attr]


def _made(item: dict[str, Any] | Entry | LaterEntry) -> dict[str, Any] | Entry:
    """``item`` as an entry: a later entry made now."""
    if getattr(type(item), "entry", None) is None:
        return item  # type: ignore[return-value]
    return item.entry()  # type: ignore[union-attr]
