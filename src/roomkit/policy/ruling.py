"""What one call comes to under a policy and the tool's static rule: written once here.

Every door reads its call's fate from :func:`rule_call`: the pipeline's step (the AI
channel's turns, voice, the conference), the external tool handler's path and the
framework adapters. The policy decides when it is enforced and has an opinion: ``Allow`` runs
the call unasked, ``Deny`` refuses it with its reason, ``Ask`` holds it with the approvers,
quorum and timeout it names (else the static rule's, else the default approver); an ask of
several (:class:`~roomkit.policy._strictest.Asks`, a Cedar set's) needs each one's approval
under the static rule. ``Abstain``,
a shadow policy, or no policy at all leave the static rule in charge (its ``when=`` says
whether a person is asked), or no rule, and the call runs unheld.

A ``decide`` that raises or times out asks a person (``on_error="ask"``, the default) or
refuses the call (``on_error="deny"``); the failure is logged and recorded. An awaitable
``decide`` has the policy's own ``timeout`` (seconds), else :data:`DECIDE_TIMEOUT`; a plain
one runs on the event loop, and returns by itself. A policy with an ``adecide`` is decided
through it: Rego runs off the loop there, bounded by its ``timeout``. Cedar has no
``adecide`` and no ``timeout``: its plain ``decide`` runs on the loop (no loops and no
recursion, so it returns in a fraction of a millisecond). A result that is none of the four
decisions is ``Abstain``. Each decision becomes a ``policy_decided`` history
entry, and is counted per tool and decision (:mod:`roomkit.policy.tally`).
"""

from __future__ import annotations

import asyncio
import dataclasses
import inspect
import json
import logging
import math
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from roomkit.core.tasks import cancelled_from_within
from roomkit.models.history import PolicyDecided
from roomkit.models.json_limits import MAX_APPROVERS
from roomkit.models.pending_input import arguments_digest
from roomkit.policy import tally
from roomkit.policy._strictest import Asks, strictest
from roomkit.policy.decisions import Abstain, Allow, Ask, Deny, PolicyCall, decision_name
from roomkit.policy.evidence import PolicyEvidence, input_digest
from roomkit.tools import texts
from roomkit.tools.approvals import Approval, Quorum, needs_person
from roomkit.tools.human_input.checks import check_approvers, check_arguments

if TYPE_CHECKING:
    from roomkit.people import Directory
    from roomkit.policy.decisions import Policy, PolicyDecision

__all__ = [
    "BODY_CHARS",
    "DECIDE_TIMEOUT",
    "Ruling",
    "asks_person",
    "evaluate",
    "input_digest",
    "policy_name",
    "rule_call",
    "ruling_policy",
]

logger = logging.getLogger("roomkit.policy")

_new = tuple.__new__
"""Makes a policy's evidence from its fields in one C call (a named tuple's own
``__new__`` is a Python function): evidence is made once per call."""

_DECISIONS = frozenset({Allow, Deny, Ask, Asks, Abstain})
"""What ``decide`` returns when it is synchronous: nothing to await."""

DECIDE_TIMEOUT = 10.0
"""Seconds an awaitable ``decide`` has when its policy has no ``timeout`` of its own."""


@dataclass(frozen=True, slots=True)
class Ruling:
    """What a call comes to before anything runs."""

    ask: Approval | None
    """The rule to hold the call under for a person; ``None``: nobody is asked."""
    refusal: str | None = None
    """What the model reads of a call the policy refused; ``None`` when it may run."""
    record: PolicyEvidence | None = None
    """The policy's decision, what its ``policy_decided`` history entry is made of;
    ``None`` without a policy."""
    by: str | None = None
    """``policy:<name>`` when the policy's decision is the one acted on (enforced)."""

    @property
    def evidence(self) -> dict[str, Any] | None:
        """The evidence of the policy's decision, its ``policy_decided`` history entry as it
        is recorded (made at each read, the same each time); ``None`` without a policy."""
        return None if self.record is None else self.record.entry()

    @property
    def entry(self) -> PolicyDecided | None:
        """The evidence of the policy's decision, typed; ``None`` without a policy."""
        evidence = self.evidence
        return None if evidence is None else PolicyDecided.model_validate(evidence)


def ruling_policy(rule: Approval | None, default: Policy | None) -> Policy | None:
    """The policy deciding a call: its tool's rule's own, else the handler's."""
    if rule is not None and rule.policy is not None:
        return rule.policy
    return default


def policy_name(policy: Policy) -> str:
    """How the history names ``policy``: its ``name``, else its class's name."""
    name = getattr(policy, "name", None)
    return name if isinstance(name, str) and name else type(policy).__name__


async def evaluate(
    policy: Policy, call: PolicyCall, rule: Approval | None = None
) -> tuple[PolicyDecision, bool]:
    """The policy's decision on ``call``, and whether it failed (``on_error`` decided then,
    under the tool's ``rule``)."""
    decision, failed = _begin(policy, call, rule)
    if failed:
        return decision, True
    return await _taken(policy, call, decision, rule)


def _begin(policy: Policy, call: PolicyCall, rule: Approval | None) -> tuple[Any, bool]:
    """What the policy's ``adecide`` (off the loop) or else its ``decide`` returns, and
    ``False``; the ``on_error`` decision and ``True`` when it raised."""
    off_loop = getattr(policy, "adecide", None)
    try:
        return (off_loop(call) if off_loop is not None else policy.decide(call)), False
    except (Exception, asyncio.CancelledError) as error:
        return _caught(policy, call, error, rule), True


async def _taken(
    policy: Policy, call: PolicyCall, decision: Any, rule: Approval | None
) -> tuple[PolicyDecision, bool]:
    """What ``decide`` returned, as a decision: awaited when it is awaitable, ``Abstain``
    when it is none of the four; and whether the policy failed."""
    try:
        if type(decision) not in _DECISIONS and inspect.isawaitable(decision):
            bound = _bound(policy)
            try:
                async with asyncio.timeout(bound):
                    decision = await decision
            except TimeoutError:
                raise TimeoutError(f"no decision within {bound:g} s") from None
    except (Exception, asyncio.CancelledError) as error:
        return _caught(policy, call, error, rule), True
    if type(decision) not in _DECISIONS and not isinstance(decision, Allow | Deny | Ask | Abstain):
        logger.warning(
            "Policy %s returned %r on %s, not Allow, Deny, Ask or Abstain: abstaining",
            policy_name(policy),
            type(decision).__name__,
            call.tool,
        )
        return Abstain(f"unknown result {type(decision).__name__}"), False
    return decision, False


def _bound(policy: Policy) -> float:
    """The seconds ``policy``'s awaitable ``decide`` has: its own positive ``timeout``, else
    :data:`DECIDE_TIMEOUT`."""
    timeout = getattr(policy, "timeout", None)
    if isinstance(timeout, bool) or not isinstance(timeout, int | float):
        return DECIDE_TIMEOUT
    return float(timeout) if math.isfinite(timeout) and timeout > 0 else DECIDE_TIMEOUT


def _caught(
    policy: Policy, call: PolicyCall, error: BaseException, rule: Approval | None
) -> PolicyDecision:
    """What a ``decide`` that raised ``error`` comes to (:func:`_failed`); a cancellation of
    the call's own task is raised again.

    Raises:
        asyncio.CancelledError: ``error``, when the call's task is being cancelled.
    """
    if isinstance(error, asyncio.CancelledError) and not cancelled_from_within():
        raise error
    # Any other CancelledError is of a future of the policy's own (cancelled elsewhere): a
    # failure of the policy, which on_error decides, not a turn to end without an answer.
    return _failed(policy, call, error, rule)


def _failed(
    policy: Policy, call: PolicyCall, error: BaseException, rule: Approval | None
) -> PolicyDecision:
    """What a ``decide`` that raised ``error`` comes to under the policy's ``on_error``
    (logged): an ask at least as strict as each its failure names (``fallback``), under the
    tool's ``rule``."""
    on_error = getattr(policy, "on_error", "ask")
    outcome = "refusing the call" if on_error == "deny" else "asking a person"
    logger.warning(
        "Policy %s failed on %s (%s: %s): %s",
        policy_name(policy),
        call.tool,
        type(error).__name__,
        error,
        outcome,
    )
    reason = f"the policy failed ({type(error).__name__}: {error})"[:500]
    if on_error == "deny":
        return Deny(reason)
    fallback = getattr(error, "fallback", None)
    asks = (fallback,) if isinstance(fallback, Ask) else fallback
    if isinstance(asks, tuple | list) and all(isinstance(ask, Ask) for ask in asks):
        # The approvers the policy names, not the default one: that is the call's own actor.
        return strictest(asks, rule, reason)
    return Ask(reason=reason)


async def rule_call(
    policy: Policy | None,
    rule: Approval | None,
    call: PolicyCall,
    *,
    directory: Directory | None = None,
) -> Ruling:
    """What ``call`` comes to under ``policy`` (may be ``None``) and the static ``rule``.

    Args:
        directory: the handler's, when it has one: an ``Ask`` naming a role or an on-call
            schedule it lacks fails the policy (a request for it would be refused), and
            the approvers it names that it has are asked.
    """
    if policy is None:
        return Ruling(await _static(rule, call))
    # As evaluate() does, without a coroutine of its own for a plain decide's decision.
    decision, failed = _begin(policy, call, rule)
    if not failed and type(decision) not in _DECISIONS:
        decision, failed = await _taken(policy, call, decision, rule)
    reason = decision.reason
    if not (type(reason) is str and reason.isascii() and len(reason) <= REASON_CHARS):
        # What the model's arguments made of it (a reason quoting them, say) is kept, cut.
        decision = dataclasses.replace(decision, reason=said(reason))
    shadow = bool(getattr(policy, "shadow", False))
    name = policy_name(policy)
    kind = decision_name(decision)
    tally.count(name, call.tool, kind, enforced=not shadow)
    asked: Approval | None = None
    if isinstance(decision, Ask) and not shadow:
        try:
            if isinstance(decision, Asks):
                # Several asks applied: the call needs each one's approval, under the rule.
                parts, decision = decision.asks, strictest(decision.asks, rule, decision.reason)
                for part in parts:
                    _asked(part, rule)  # one that cannot be met alone fails them all
            asked = _asked(decision, rule)
            if directory is not None and decision.approvers:
                check_approvers(decision.approvers, directory=directory)
        except (TypeError, ValueError) as error:
            logger.warning("Policy %s asked on %s as no rule can: %s", name, call.tool, error)
            named = _known(decision.approvers, directory)
            quorum = _kept_quorum(decision, named)
            decision, failed = _broken(policy, f"the policy's Ask cannot be met: {error}"), True
            kind = decision_name(decision)
            if isinstance(decision, Ask):
                asked = _fallback(named, quorum, decision.reason, rule)
                if asked is None:
                    # No request lists them all: no person asked is as strict as the ask.
                    decision, kind = Deny(decision.reason), "deny"
    version = getattr(policy, "version", None)
    record = _new(
        PolicyEvidence,
        (
            name,
            said(version) if isinstance(version, str) else None,
            call,
            kind,
            decision.reason or None,
            not shadow,
            failed,
            time.time_ns(),
        ),
    )
    if shadow or isinstance(decision, Abstain):
        return Ruling(await _static(rule, call), record=record)
    by = f"policy:{name}"
    if isinstance(decision, Deny):
        reason = decision.reason or f"Tool '{call.tool}' was refused by policy {name}"
        return Ruling(None, _refusal(reason, call.tool, name), record, by)
    return Ruling(asked, record=record, by=by)


REASON_CHARS = 10_000
"""The most characters of a policy's reason (or version) kept in a history and shown: even
written as JSON escapes (six characters each), they fit a history entry."""


def said(text: object) -> str:
    """``text`` (a policy's reason or version) as a history keeps it: text UTF-8 encodes
    (a lone surrogate made ``?``), at most :data:`REASON_CHARS` characters."""
    kept = text if isinstance(text, str) else str(text)
    if not kept.isascii():
        kept = kept.encode("utf-8", "replace").decode("utf-8")
    if len(kept) > REASON_CHARS:
        kept = kept[: REASON_CHARS - 1] + "…"
    return kept


BODY_CHARS = 40_000
"""The most characters a refusal's body (what the model reads) takes as a history stores it,
in the ``decided`` entry: its reason is written as JSON escapes there twice over (a CJK
character takes seven characters), so :data:`REASON_CHARS` alone does not bound it."""


def _refusal(reason: str, tool: str, policy: str) -> str:
    """The body the model reads of a refusal for ``reason``, the reason cut until the body
    fits :data:`BODY_CHARS` as stored."""
    body = texts.error_body(reason, tool=tool, policy=policy)
    stored = len(json.dumps(body, ensure_ascii=False))
    kept = len(reason)
    while stored > BODY_CHARS and kept > 0:
        kept = kept * BODY_CHARS // stored  # shrinks each round: one or two rounds
        body = texts.error_body(reason[:kept] + "…", tool=tool, policy=policy)
        stored = len(json.dumps(body, ensure_ascii=False))
    return body


def _kept_quorum(ask: Ask, named: tuple[str, ...] | None) -> int | None:
    """The quorum the fallback of ``ask`` (which cannot be met) keeps among the ``named``
    approvers left of it: its own, or all of them when it is more (never fewer approvals
    than it meant); ``None`` when it has none or names nobody left."""
    if ask.quorum is None or not named or ask.approvers is None:
        return None
    return min(ask.quorum, len(dict.fromkeys(named)))


def _fallback(
    named: tuple[str, ...] | None, quorum: int | None, reason: str, rule: Approval | None
) -> Approval | None:
    """The rule an ``Ask`` that cannot be met holds the call under: the approvers it names
    (not the default one, the call's own actor), to the ``quorum`` it keeps, else the static
    rule's; ``None`` (the call is refused) when it names more than a request lists, whom
    neither the rule nor the call's own actor stands for."""
    if named and len(dict.fromkeys(named)) > MAX_APPROVERS:
        return None
    if named:
        try:
            return _asked(Ask(named, quorum, reason=reason), rule)
        except (TypeError, ValueError):
            pass  # the rule's quorum is more than it names: the rule's terms
    return _asked(Ask(reason=reason), rule)


def _known(named: tuple[str, ...] | None, directory: Directory | None) -> tuple[str, ...] | None:
    """The approvers of ``named`` a request may name: without the roles and schedules the
    ``directory`` lacks."""
    if named is None or directory is None:
        return named
    kept = []
    for approver in named:
        try:
            check_approvers((approver,), directory=directory)
        except ValueError:
            continue
        kept.append(approver)
    return tuple(kept)


def _broken(policy: Policy, reason: str) -> PolicyDecision:
    return Deny(reason) if getattr(policy, "on_error", "ask") == "deny" else Ask(reason=reason)


async def _static(rule: Approval | None, call: PolicyCall) -> Approval | None:
    """The static rule, when its ``when=`` holds this call for a person (asked once)."""
    if rule is None or not await needs_person(rule, call.tool, dict(call.arguments)):
        return None
    return _rule(rule, rule.quorum if rule.quorum is not None else rule.approvers)


def _asked(ask: Ask, rule: Approval | None) -> Approval:
    """The rule an ``Ask`` holds the call under: its own terms, else the static rule's."""
    base = rule if rule is not None else Approval()
    approvers: tuple[str, ...] = ask.approvers if ask.approvers is not None else base.approvers
    quorum = ask.quorum
    if quorum is None and base.quorum is not None:
        quorum = base.quorum.n
    who: Quorum | tuple[str, ...] = approvers
    if quorum is not None:
        if not approvers:
            raise ValueError(f"a quorum of {quorum} needs approvers, and none are named")
        who = Quorum(quorum, of=approvers)
    timeout = ask.timeout if ask.timeout is not None else base.timeout
    return _rule(base, who, timeout)


def _rule(base: Approval, who: Quorum | tuple[str, ...], timeout: float | None = None) -> Approval:
    """``base`` with these approvers and no ``when=`` (the question is settled)."""
    return Approval(
        approvers=who or None,
        timeout=timeout if timeout is not None else base.timeout,
        on_expiry=base.on_expiry,
        veto=base.veto,
    )


async def asks_person(
    rule: Approval,
    tool: str,
    arguments: dict[str, Any],
    *,
    actor: str | None = None,
    room: str | None = None,
    channel: str | None = None,
) -> bool:
    """Whether a framework's pause of this call is put to a person, under ``rule`` and its
    policy: an enforced ``Allow`` lets it run unasked; ``Deny`` and ``Ask`` put it to a
    person (a framework's pause ends in a decision); ``Abstain``, a shadow policy or none
    leave ``rule``'s ``when=`` to say.

    Raises:
        ValueError, TypeError, InvalidTextError: with a policy, the arguments are what no
            request holds (too large, holding themselves, NaN, a lone surrogate, what JSON
            cannot write), refused as ``create`` refuses them before they are digested.
    """
    if rule.policy is None:
        return await needs_person(rule, tool, arguments)
    check_arguments(arguments)  # as a request would refuse them, before they are digested
    call = PolicyCall(
        tool, dict(arguments), arguments_digest(tool, arguments), actor, room, channel
    )
    ruling = await rule_call(rule.policy, rule, call)
    return ruling.ask is not None or ruling.refusal is not None
