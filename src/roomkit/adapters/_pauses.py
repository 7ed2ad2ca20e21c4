"""A framework's pause as a roomkit request, and a settled request as the framework's answer.

Every adapter of this package maps its framework's pause points onto the same two shapes:
a :class:`Pause` (an approval of a tool call, or a question with an answer schema) becomes a
request of the human-input handler, keyed so that asking again after a crash re-attaches to
it; a settled request becomes a :class:`Verdict` (approve, edit, reject, respond, expired,
answer, refused), which each adapter turns into its framework's own decision. The rules are
those of ``HumanInputToolHandler(approvals=...)``: an :class:`Approval` per tool name (who
decides, the deadline, what expiry means, ``when=``); a pause of a tool not named is held
under the default rule, so that nothing the framework holds runs unseen.

A tool whose rule carries a policy (``Approval(policy=...)``) is ruled once, as the call
pipeline rules it (:func:`roomkit.policy.rule_call`), when its request is opened: ``Allow``
and ``Deny`` record the call in a request nobody is told about, settled by the policy (the
framework approves it, or rejects it with the policy's reason); ``Ask`` holds it with the
approvers, quorum and timeout it names. The ``policy_decided`` entry joins the request's
history either way; a shadow policy's too, while the static rule decides.

A resumer claims a resume in the handler's spend-once ledger (:meth:`Asker.claim`) before it
continues a run, so that two resumers of the same settled pause continue it once.
"""

from __future__ import annotations

import contextlib
import copy
import json
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from roomkit.core.exceptions import (
    HumanInputRejectedError,
    HumanInputTimeoutError,
    UnknownRequestError,
)
from roomkit.models.pending_input import PendingInput, PendingInputStatus, arguments_digest
from roomkit.policy.decisions import PolicyCall
from roomkit.policy.ruling import Ruling, asks_person, policy_name, rule_call
from roomkit.tools import texts
from roomkit.tools.approvals import Approval, approve, read_decision
from roomkit.tools.human_input import HumanInputHandler, unannounced
from roomkit.tools.human_input.tool_handler import held_tools

__all__ = ["DEFAULT_TIMEOUT", "Asker", "Pause", "Verdict", "question_arguments"]

DEFAULT_TIMEOUT = 3600.0
"""The person's deadline, in seconds, when neither the call nor the rule gives one."""

_PENDING = PendingInputStatus.PENDING
_RESOLVED = PendingInputStatus.RESOLVED
_TIMED_OUT = PendingInputStatus.TIMED_OUT

VerdictKind = Literal["approve", "edit", "reject", "respond", "expired", "answer", "refused"]


@dataclass(frozen=True, slots=True)
class Pause:
    """One pause of a framework's run, as roomkit asks a person about it."""

    key: str
    """Stable per pause (the run or thread and the framework's own id of the pause)."""
    kind: Literal["approval", "question"]
    """An approval of a tool call, or a question."""
    tool_name: str
    """The held tool, or the name the question is shown under."""
    arguments: dict[str, Any]
    """The call's arguments, or the question's fields as the person reads them."""
    tool_call_id: str = ""
    """The framework's id of the tool call, when it has one."""
    tool_schema: dict[str, Any] | None = None
    """On an approval, the tool's JSON Schema, which an edit must match."""
    decisions: Sequence[str] | None = None
    """On an approval, the decisions the framework can carry (all four when ``None``)."""
    answer_schema: dict[str, Any] | None = None
    """On a question, the JSON Schema of the answer."""
    description: str | None = None
    """What the framework says about the call, kept in the approval's history."""


@dataclass(frozen=True, slots=True)
class Verdict:
    """What a settled request comes to, before it is put in a framework's words."""

    kind: VerdictKind
    """``approve``, ``edit``, ``reject``, ``respond`` (approvals), ``answer`` (questions),
    ``expired`` (nobody answered in time) or ``refused`` (a question rejected or given up)."""
    arguments: dict[str, Any] | None = None
    """On an edit, the person's replacement arguments (checked against the tool's schema)."""
    text: str = ""
    """A rejection's reason, a response, or what the model reads of an expiry or refusal."""
    answer: Any = None
    """On a question, the answer: the person's JSON, parsed, when it has an answer schema."""
    by: str | None = None
    """Who settled it, as the handler verified them (``None`` for an expiry)."""


def question_arguments(value: Any) -> dict[str, Any]:
    """A question's value as the fields a person reads: its text, or the value itself."""
    if isinstance(value, str):
        return {"question": value}
    if isinstance(value, dict) and all(isinstance(name, str) for name in value):
        return dict(value)
    return {"value": value}


class Asker:
    """Asks the handler's people about a framework's pauses under the approval rules.

    Args:
        handler: the human-input handler whose store keeps the requests.
        approvals: names of held tools, or names to :class:`Approval` (as
            ``HumanInputToolHandler(approvals=...)`` takes them).
        timeout: the person's deadline in seconds, where a rule gives none.
        actor: who is asked the questions, and who decides approvals whose rule names no
            approvers.
        room: the room the requests belong to (the desk lists them there).
        channel: the name the requests are raised under (part of each key's scope).
    """

    __slots__ = ("_ruled", "actor", "channel", "handler", "room", "rules", "timeout")

    def __init__(
        self,
        handler: HumanInputHandler,
        *,
        approvals: Mapping[str, Approval] | Iterable[str] | None,
        timeout: float,
        actor: str | None,
        room: str,
        channel: str,
    ) -> None:
        if not isinstance(handler, HumanInputHandler):
            raise TypeError(
                f"handler must be a HumanInputHandler (HumanInputToolHandler.handler), "
                f"got {type(handler).__name__}"
            )
        if isinstance(timeout, bool) or not isinstance(timeout, int | float) or timeout <= 0:
            raise ValueError(f"timeout must be a positive number of seconds, got {timeout!r}")
        self.handler = handler
        self.rules = held_tools(approvals, set())
        self.timeout = float(timeout)
        self.actor = actor
        self.room = room
        self.channel = channel
        # The rule a policy's Ask held each pause under (by key), for its deadline.
        self._ruled: dict[str, Approval] = {}

    def rule(self, tool_name: str) -> Approval:
        """The rule holding ``tool_name``: its own, else the default one."""
        return self.rules.get(tool_name) or Approval()

    def limit(self, pause: Pause) -> float:
        """The seconds the person has to answer ``pause``."""
        if pause.kind == "approval":
            rule = self._ruled.get(pause.key) or self.rule(pause.tool_name)
            if rule.timeout is not None:
                return rule.timeout
        return self.timeout

    async def needs_person(self, pause: Pause) -> bool:
        """Whether ``pause`` is asked at all: an approval whose ``when=`` says no is approved."""
        if pause.kind != "approval":
            return True
        rule = self.rule(pause.tool_name)
        if rule.policy is not None:
            # The policy rules the pause once, in open(): its request carries the decision.
            return True
        return await asks_person(
            rule,
            pause.tool_name,
            pause.arguments,
            actor=self.actor,
            room=self.room,
            channel=self.channel,
        )

    async def open(self, pause: Pause) -> PendingInput:
        """The request of ``pause``: created, or the one its key names already."""
        handler, limit = self.handler, self.limit(pause)
        if pause.kind == "question":
            return await handler.create(
                pause.tool_name,
                pause.arguments,
                room_id=self.room,
                tool_call_id=pause.tool_call_id,
                channel_id=self.channel,
                actor_id=self.actor,
                key=pause.key,
                answer_schema=pause.answer_schema,
                timeout=limit,
            )
        rule = self.rule(pause.tool_name)
        ruling = None
        if rule.policy is not None:
            ruling = await rule_call(rule.policy, rule, self._call(pause))
            if ruling.ask is None:
                return await self._unasked(pause, ruling, policy_name(rule.policy))
            rule = self._ruled[pause.key] = ruling.ask
            limit = self.limit(pause)
        approvers = rule.approvers or ((self.actor,) if self.actor is not None else ())
        request = await handler.create_approval(
            pause.tool_name,
            pause.arguments,
            approvers=approvers,
            quorum=rule.quorum.n if rule.quorum is not None else None,
            veto=rule.veto,
            tool_schema=pause.tool_schema or {"type": "object"},
            room_id=self.room,
            tool_call_id=pause.tool_call_id,
            channel_id=self.channel,
            actor_id=self.actor,
            key=pause.key,
            timeout=limit,
            description=pause.description,
            decisions=pause.decisions,
        )
        if ruling is not None and ruling.entry is not None:
            await self._record(request, ruling)
        return request

    def _call(self, pause: Pause) -> PolicyCall:
        """``pause``'s tool call as a policy reads it."""
        name, arguments = pause.tool_name, pause.arguments
        return PolicyCall(
            name,
            copy.deepcopy(arguments),
            arguments_digest(name, arguments),
            self.actor,
            self.room,
            self.channel,
        )

    async def _record(self, request: PendingInput, ruling: Ruling) -> None:
        """Add the policy's decision to the open ``request``'s history, once: a pause asked
        again re-attaches to its request, whose history holds it already."""
        if request.status is not _PENDING or ruling.entry is None:
            return
        history = await self.handler.history(request.pending_id)
        if not any(entry.get("type") == "policy_decided" for entry in history):
            await self.handler.record(request.pending_id, ruling.entry)

    async def _unasked(self, pause: Pause, ruling: Ruling, name: str) -> PendingInput:
        """The request recording a pause the policy settles without anyone (or its shadow
        left to a rule that asks no one): approved, or rejected with the policy's reason."""
        handler = self.handler
        with unannounced():
            request = await handler.create_approval(
                pause.tool_name,
                pause.arguments,
                approvers=(ruling.by,) if ruling.by is not None else (),
                tool_schema=pause.tool_schema or {"type": "object"},
                room_id=self.room,
                tool_call_id=pause.tool_call_id,
                channel_id=self.channel,
                actor_id=self.actor,
                key=pause.key,
                surface="policy",
                description=pause.description,
                decisions=pause.decisions,
            )
        pending_id = request.pending_id
        if request.status is not _PENDING:
            return request
        await self._record(request, ruling)
        if ruling.refusal is not None:
            reason = ruling.entry.reason if ruling.entry is not None else None
            text = reason or f"Tool '{pause.tool_name}' was refused by policy {name}"
            await handler.areject(pending_id, text, by=ruling.by, surface="policy")
        else:
            await handler.aresolve(pending_id, approve(), by=ruling.by, surface="policy")
        return await handler.get_request(pending_id) or request

    async def ask(self, pause: Pause) -> Verdict:
        """Ask about ``pause`` and wait in this process for the verdict (inline mode)."""
        if not await self.needs_person(pause):
            return Verdict("approve")
        request = await self.open(pause)
        # The request as settled says which of these it was, and who settled it.
        with contextlib.suppress(HumanInputTimeoutError, HumanInputRejectedError):
            await self.handler.wait(request.pending_id, timeout=self.limit(pause))
        settled = await self.handler.get_request(request.pending_id)
        verdict = self.verdict(settled or request, pause)
        assert verdict is not None
        return verdict

    async def await_id(self, pending_id: str, pause: Pause) -> Verdict:
        """Wait for the request ``pending_id`` of ``pause`` to settle; its verdict."""
        with contextlib.suppress(HumanInputTimeoutError, HumanInputRejectedError):
            await self.handler.wait(pending_id, timeout=self.limit(pause))
        verdict = self.verdict(await self._read(pending_id, pause), pause)
        assert verdict is not None
        return verdict

    async def settled(self, pending_id: str, pause: Pause) -> Verdict | None:
        """The verdict on the request ``pending_id`` of ``pause`` if it is settled (expiring
        it when overdue); ``None`` while a person may still answer.

        Raises:
            UnknownRequestError: the store no longer holds it.
        """
        request = await self._read(pending_id, pause)
        if request.status is _PENDING:
            await self.handler.expire_overdue([request])
            request = await self._read(pending_id, pause)
        return self.verdict(request, pause)

    async def _read(self, pending_id: str, pause: Pause) -> PendingInput:
        request = await self.handler.get_request(pending_id)
        if request is None:
            raise UnknownRequestError(
                f"request {pending_id} of {pause.tool_name!r} is gone from the store: "
                "ask again in a new run"
            )
        return request

    async def look(self, pause: Pause) -> Verdict | None:
        """The verdict on ``pause`` if its request is settled (expiring it when overdue);
        ``None`` while a person may still answer (durable mode)."""
        if not await self.needs_person(pause):
            return Verdict("approve")
        request = await self.open(pause)
        if request.status is _PENDING:
            await self.handler.expire_overdue([request])
            request = await self.handler.get_request(request.pending_id) or request
        return self.verdict(request, pause)

    def verdict(self, request: PendingInput, pause: Pause) -> Verdict | None:
        """What the settled ``request`` comes to; ``None`` while it is open."""
        status, by = request.status, request.settled_by
        if status is _PENDING:
            return None
        if status is _TIMED_OUT:
            if pause.kind == "approval":
                if self.rule(pause.tool_name).on_expiry == "approve":
                    return Verdict("approve")
                return Verdict(
                    "expired", text=texts.approval_expired(pause.tool_name, self.limit(pause))
                )
            return Verdict(
                "expired", text=texts.human_input_timed_out(pause.tool_name, self.limit(pause))
            )
        if status is not _RESOLVED:
            reason = request.reject_reason or ""
            if request.withdrawn or pause.kind == "question":
                return Verdict("refused", text=reason, by=by)
            return Verdict("reject", text=reason, by=by)
        text = request.result or ""
        if pause.kind == "question":
            answer: Any = json.loads(text) if pause.answer_schema is not None else text
            return Verdict("answer", answer=answer, by=by)
        decision = read_decision(text)
        return Verdict(decision.kind, arguments=decision.arguments, text=decision.text, by=by)

    async def claim(self, name: str, *, lease: float | None = None) -> bool:
        """Claim the resume ``name`` for this resumer; ``False`` when another holds it.

        ``lease`` seconds later the claim lapses (so a resumer that died holding it does
        not block the pause for ever); ``None`` keeps it.
        """
        until = None
        if lease is not None:
            # The ledger's times are on the store's clock, which every process shares.
            clock: Callable[[], float] = getattr(self.handler.store, "clock", time.time)
            until = clock() + lease
        return await self.handler.ledger.spend_once(f"resume:{name}", until=until)

    async def keep_claim(self, name: str) -> None:
        """Make the claim on the resume ``name`` permanent: the run moved on, and a resumer
        coming after the lease would find the same settled pause and continue it again."""
        await self.handler.ledger.record_spent(f"resume:{name}", until=None)

    async def unclaim(self, name: str) -> None:
        """Give the resume ``name`` back (the resume failed before the run moved on)."""
        await self.handler.ledger.refund_spent(f"resume:{name}")
