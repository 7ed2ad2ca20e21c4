"""Approve: hold a gated call to a held tool until a person decides, then serve it once.

A tool named in the human-input handler's ``approvals`` is held after the checks and the
gate, with the arguments the gate let through: the rule's ``when=`` decides per call
(raising means "ask"); the approval request carries a deep copy of the arguments, their
digest and the approvers (the rule's, else the call's actor, else the room's participants),
and ON_USER_INPUT_REQUIRED announces it. The wait runs under the rule's timeout (else the
handler's), outside the call's own bound, which applies to the run alone.

Then: approve runs the arguments shown; edit runs the person's replacement; reject and
respond never run the tool; expiry denies or, when the rule says so, runs the arguments
shown. A run is bound and single: the arguments handed to the tool are digested again at
dispatch and must equal the approved digest (``serve(approved=...)``), and the handler's
spend-once ledger lets one run per approval, so a decision replayed (a re-driven turn, a
second wait) gets the recorded outcome from the request's history, never a second run.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypedDict, Unpack

from roomkit.channels._calls.outcome import CallOutcome, refused, served
from roomkit.channels._calls.serve import ToolServer, serve
from roomkit.core.exceptions import (
    HumanInputRejectedError,
    HumanInputTimeoutError,
    UnknownRequestError,
)
from roomkit.models.enums import ChannelType
from roomkit.models.pending_input import PendingInput, arguments_digest
from roomkit.stores import approved_by, declined, detached
from roomkit.tools import texts
from roomkit.tools.approvals import Approval, needs_person, read_decision
from roomkit.tools.human_input import created_with, record_run
from roomkit.tools.human_input.checks import check_arguments
from roomkit.tools.human_input.ladder import keep_ladder

if TYPE_CHECKING:
    from roomkit.channels._calls.site import CallSite
    from roomkit.models.history import Entry
    from roomkit.providers.ai.base import AITool
    from roomkit.tools.human_input import HumanInputHandler, HumanInputToolHandler

__all__ = [
    "HeldOptions",
    "Verdict",
    "create_held",
    "executed",
    "held",
    "held_key",
    "run_verdict",
    "spend",
    "spent_entry",
    "verdict_on",
]

logger = logging.getLogger("roomkit.channels.calls")

_MEMORY_SPEND = 86_400.0
"""Seconds the memory ledger remembers that an approval's run was spent."""


def held(server: ToolServer, name: str) -> Approval | None:
    """The rule holding ``name`` on ``server``, or ``None`` when it runs unheld."""
    human = server.human_input_handler
    if human is None or not human.approvals:
        return None
    return human.approvals.get(name)


def spent_entry(pending_id: str) -> str:
    """The ledger entry that an approval's one run spends."""
    return f"approval:run:{pending_id}"


@dataclass(slots=True)
class Verdict:
    """What a person's decision on a held call comes to."""

    request: PendingInput | None
    """The approval request (``None`` when ``when=`` held nothing)."""
    arguments: dict[str, Any] | None
    """The arguments to run; ``None`` when the call must not run."""
    digest: str | None = None
    """The digest those arguments must still have at dispatch."""
    shown: dict[str, Any] | None = None
    """The arguments shown, when a person edited them (the model learns what changed)."""
    outcome: CallOutcome | None = None
    """What the model reads of a call that does not run."""
    approved_by: list[str] | None = None
    """On a quorum approval, who approved the arguments that run."""
    sole: bool = False
    """The request was made and settled by this call, under no key: no other run can
    reach it, so its one run needs no spend."""


async def run_verdict(
    site: CallSite, server: ToolServer, name: str, verdict: Verdict
) -> CallOutcome:
    """Serve a held call as ``verdict`` says: not at all, unheld, or once, bound to the
    digest of its arguments."""
    if verdict.outcome is not None:
        return verdict.outcome
    request, arguments = verdict.request, verdict.arguments
    assert arguments is not None
    if request is None:
        return await serve(site, server, name, arguments)
    human = server.human_input_handler
    assert human is not None
    handler = human.handler
    name = request.tool_name
    # A sole request's one run needs no spend: no other run can reach it.
    replayed = None if verdict.sole else await spend(handler, verdict)
    if replayed is not None:
        return replayed
    outcome = await serve(site, server, name, arguments, approved=verdict.digest)
    await executed(handler, verdict, outcome)
    if verdict.approved_by is not None and not outcome.is_error:
        assert verdict.shown is not None
        changed = _changes(verdict.shown, arguments) or None
        content = texts.quorum_approved(
            name, outcome.content, arguments, verdict.approved_by, changed
        )
        return served(content, arguments)
    if verdict.shown is None or outcome.is_error:
        return outcome
    changed = _changes(verdict.shown, arguments)
    content = texts.approval_edited(name, outcome.content, arguments, changed)
    return served(content, arguments)


async def verdict_on(
    site: CallSite,
    server: ToolServer,
    name: str,
    arguments: dict[str, Any],
    rule: Approval,
    tool: AITool | None,
    *,
    evidence: dict[str, Any] | Entry | None = None,
) -> Verdict:
    """Hold the call for a decision under ``rule`` (when ``when=`` says so); the verdict.

    ``evidence`` (a policy's decision) joins the request's history after ``created``.
    """
    if not await needs_person(rule, name, arguments):
        return Verdict(None, arguments)
    human = server.human_input_handler
    assert human is not None
    handler = human.handler
    limit = rule.timeout if rule.timeout is not None else human.timeout
    # The policy's decision is in the request's first write, before anyone is told.
    with created_with(*(() if evidence is None else (evidence,))):
        request = await _hold(site, human, name, arguments, rule, tool, limit)
    if human.ladder is not None:
        # The ladder's reminders and escalations reach the approval; its ending is the rule's.
        await keep_ladder(handler, request, human.ladder)
    pending_id = request.pending_id
    shown = request.arguments  # a quorum's edit replaces them: these are the ones held
    try:
        text = await handler.wait(pending_id, timeout=limit)
    except HumanInputTimeoutError:
        # The timeout's own settle recorded its entry; a run on expiry records "executed".
        if rule.on_expiry == "approve":
            return Verdict(request, request.arguments, request.arguments_digest)
        return Verdict(
            request, None, outcome=refused(texts.approval_expired(name, limit), arguments)
        )
    except HumanInputRejectedError as rejected:
        body = texts.approval_rejected(name, str(rejected))
        if request.quorum is not None:
            final = await handler.get_request(pending_id) or request
            body = texts.quorum_rejected(name, declined(final))
        return Verdict(request, None, outcome=refused(body, arguments))
    decision = read_decision(text, recorded=True)
    if request.quorum is not None:
        # The outcome names the arguments that run: the ones held, or the last edit's.
        ran = decision.arguments if decision.arguments is not None else shown
        final = await handler.get_request(pending_id) or request
        return Verdict(
            request, ran, arguments_digest(name, ran), shown, approved_by=approved_by(final)
        )
    if decision.kind == "respond":
        body = texts.approval_responded(name, decision.text)
        return Verdict(request, None, outcome=served(body, arguments))
    if decision.kind == "edit":
        assert decision.arguments is not None
        edited = decision.arguments
        return Verdict(request, edited, arguments_digest(name, edited), request.arguments)
    # The arguments shown are bound to their digest, taken when they were held, so that a
    # change since (a hook writing into them) is refused at dispatch.
    return Verdict(request, request.arguments, request.arguments_digest)


async def _hold(
    site: CallSite,
    human: HumanInputToolHandler,
    name: str,
    arguments: dict[str, Any],
    rule: Approval,
    tool: AITool | None,
    limit: float,
) -> PendingInput:
    """The approval request of the call, under ``rule``."""
    handler = human.handler
    approvers = rule.approvers
    if not approvers:
        approvers = (site.actor_id,) if site.actor_id is not None else await _roster(site)
    quorum = rule.quorum
    return await create_held(
        site,
        handler,
        name,
        arguments,
        tool,
        approvers=approvers,
        quorum=quorum.n if quorum is not None else None,
        veto=rule.veto,
        # A durable store writes the deadline with the request: no window without one.
        timeout=limit if handler.durable else None,
    )


class HeldOptions(TypedDict, total=False):
    """Who decides a held call, and how: what differs between the approvals of a call."""

    approvers: tuple[str, ...]
    quorum: int | None
    veto: bool
    timeout: float | None
    surface: str | None


class SiteOptions(TypedDict):
    """What an approval of the call at a site records of it: the tool's schema and
    description, where the call was made, by whom, and its key."""

    tool_schema: dict[str, Any]
    room_id: str
    tool_call_id: str
    channel_id: str
    channel_type: ChannelType
    actor_id: str | None
    key: str | None
    description: str | None


def site_options(site: CallSite, handler: HumanInputHandler, tool: AITool | None) -> SiteOptions:
    """The options of an approval of the call at ``site`` to ``tool``, however decided."""
    return SiteOptions(
        tool_schema=dict(tool.parameters) if tool is not None else {"type": "object"},
        room_id=site.room_id,
        tool_call_id=site.tool_call_id,
        channel_id=site.channel_id,
        channel_type=site.channel_type,
        actor_id=site.actor_id,
        key=held_key(site, handler),
        description=tool.description if tool is not None and tool.description else None,
    )


async def create_held(
    site: CallSite,
    handler: HumanInputHandler,
    name: str,
    arguments: dict[str, Any],
    tool: AITool | None,
    **options: Unpack[HeldOptions],
) -> PendingInput:
    """The approval request of the call at ``site`` (a copy of its arguments sharing
    nothing with them, the tool's schema and description), decided as ``options`` say:
    created, or re-attached to by its key."""
    try:
        copy = detached(arguments)
    except RecursionError:
        # A dict inside itself, or arguments deeper than the stack: refused as ``create``
        # refuses them, saying where (checked only then, plain arguments are walked once).
        check_arguments(arguments)
        raise
    return await handler.create_approval(name, copy, **site_options(site, handler, tool), **options)


def held_key(site: CallSite, handler: HumanInputHandler) -> str | None:
    """The key of the approval of the call at ``site``: on a durable store, a turn re-driven
    after a restart finds its request by it, and replays its one run."""
    if handler.durable and site.tool_call_id and site.channel_type is ChannelType.AI:
        return f"{site.room_id}:{site.channel_id}:{site.tool_call_id}"
    return None


async def _roster(site: CallSite) -> tuple[str, ...]:
    """The ids on the call's room's roster (none without a kit)."""
    kit = site.kit
    if kit is None or not site.room_id:
        return ()
    return tuple(participant.id for participant in await kit.store.list_participants(site.room_id))


async def spend(handler: HumanInputHandler, verdict: Verdict) -> CallOutcome | None:
    """Spend the approval's one run; the recorded outcome when it was spent already."""
    assert verdict.request is not None
    assert verdict.arguments is not None
    if verdict.sole:
        return None
    # A durable store keeps the spend with the audit; memory forgets it after a day.
    until = None if handler.durable else time.time() + _MEMORY_SPEND
    if await handler.ledger.spend_once(spent_entry(verdict.request.pending_id), until=until):
        return None
    return await _replay(handler, verdict.request, verdict.arguments)


async def executed(handler: HumanInputHandler, verdict: Verdict, outcome: CallOutcome) -> None:
    """Write the run to the approval's history.

    On the memory store the history goes with the request once its outcome leaves the
    retention; a run that ends after that is logged instead, and its result still counts.
    """
    assert verdict.request is not None
    pending_id = verdict.request.pending_id
    try:
        await record_run(
            handler,
            pending_id,
            verdict.digest,
            ran=not outcome.refused,
            is_error=outcome.is_error,
            content=outcome.content,
        )
    except UnknownRequestError:
        logger.warning("The run of approval %s was not recorded: its history is gone", pending_id)


async def _replay(
    handler: HumanInputHandler, request: PendingInput, arguments: dict[str, Any]
) -> CallOutcome:
    """The recorded outcome of the approval's one run; a refusal when none was recorded."""
    for entry in reversed(await handler.history(request.pending_id)):
        if entry.get("type") == "executed" and isinstance(entry.get("content"), str):
            content = entry["content"]
            if entry.get("is_error"):
                return (
                    refused(content, arguments)
                    if not entry.get("ran")
                    else served(content, arguments, is_error=True)
                )
            return served(content, arguments)
    return refused(texts.approval_spent(request.tool_name), arguments)


def _changes(shown: dict[str, Any], ran: dict[str, Any]) -> dict[str, Any]:
    """What an edit changed: per argument, what was shown and what ran."""
    changed: dict[str, Any] = {}
    for key in sorted(set(shown) | set(ran)):
        before, after = shown.get(key), ran.get(key)
        if key not in shown or key not in ran or before != after:
            changed[key] = {"from": before, "to": after}
    return changed
