"""A pause whose tool's rule carries a policy: the call as the policy reads it, the policy's
decision in the request's history, and a request the policy settles without anyone.

``Allow`` and ``Deny`` record the call in a request nobody is told about, settled by the
policy (the framework approves it, or rejects it with the policy's reason).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Unpack

from roomkit.adapters._keys import call_id_of
from roomkit.models.pending_input import PendingInput, PendingInputStatus, arguments_digest
from roomkit.policy.decisions import PolicyCall
from roomkit.policy.ruling import Ruling
from roomkit.policy.unasked import POLICY
from roomkit.policy.unasked import unasked as on_record
from roomkit.stores import detached
from roomkit.tools.human_input.checks import check_arguments

if TYPE_CHECKING:
    from roomkit.adapters._pauses import Asker, Pause
    from roomkit.channels._calls.approve import HeldOptions

__all__ = ["create_paused", "policy_call", "unasked"]

_PENDING = PendingInputStatus.PENDING


def policy_call(asker: Asker, pause: Pause) -> PolicyCall:
    """``pause``'s tool call as a policy reads it.

    Raises:
        ArgumentsTooLargeError, ValueError, TypeError, InvalidTextError: the arguments are
            what no request can hold (as
            :meth:`~roomkit.tools.human_input.HumanInputHandler.create_approval` refuses
            them, with or without a policy: the message says where).
    """
    name, arguments = pause.tool_name, pause.arguments
    # Checked as the request checks them (one walk, commonly), before the digest, which
    # cannot encode a lone surrogate (nor write a set), and the copy: both nest as deep as
    # the arguments, which may be deeper than Python's stack.
    check_arguments(arguments)
    return PolicyCall(
        name,
        detached(arguments),
        arguments_digest(name, arguments),
        asker.actor,
        asker.room,
        asker.channel,
    )


async def unasked(
    asker: Asker,
    pause: Pause,
    ruling: Ruling,
    name: str,
    history: tuple[dict[str, Any], ...] = (),
) -> PendingInput:
    """The request recording a pause the policy settles without anyone (or its shadow
    left to a rule that asks no one): approved, or rejected with the policy's reason;
    ``history`` follows the policy's decision in its first write."""
    refusal = None
    if ruling.refusal is not None:
        reason = ruling.entry.reason if ruling.entry is not None else None
        refusal = reason or f"Tool '{pause.tool_name}' was refused by policy {name}"
    approvers = (ruling.by,) if ruling.by is not None else ()
    with on_record(ruling, refusal, history=history):
        request = await create_paused(asker, pause, approvers=approvers, surface=POLICY)
    if request.status is not _PENDING:
        return request  # settled in its insert's own write
    # Read again: settled after its insert, which handed it back as it was before.
    return await asker.handler.get_request(request.pending_id) or request


async def create_paused(asker: Asker, pause: Pause, **options: Unpack[HeldOptions]) -> PendingInput:
    """The approval request of ``pause`` (its tool's schema and description, the decisions
    its framework takes), decided as ``options`` say: created, or the one its key names."""
    return await asker.handler.create_approval(
        pause.tool_name,
        pause.arguments,
        tool_schema=pause.tool_schema or {"type": "object"},
        room_id=asker.room,
        tool_call_id=call_id_of(pause.tool_call_id),
        channel_id=asker.channel,
        actor_id=asker.actor,
        key=asker.key_of(pause),
        description=pause.description,
        decisions=pause.decisions,
        **options,
    )
