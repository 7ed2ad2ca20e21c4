"""A framework's pause as a roomkit request, and a settled request as the framework's answer.

Every adapter of this package maps its framework's pause points onto the same two shapes
(:mod:`roomkit.adapters._shapes`): a :class:`Pause` (an approval of a tool call, or a
question with an answer schema) becomes a request of the human-input handler, keyed so that
asking again after a crash re-attaches to it; a settled request becomes a :class:`Verdict`
(approve, edit, reject, respond, expired, answer, defaulted, refused), which each adapter
turns into its framework's own decision. The rules are those of
``HumanInputToolHandler(approvals=..., ladder=...)``: an :class:`Approval` per tool name (who
decides, the deadline, what expiry means, ``when=``); a pause of a tool not named is held
under the default rule, so that nothing the framework holds runs unseen; a :class:`Ladder`'s
reminders and escalations reach every request, and its ``on_expiry``
default answers a question nobody answered in time (put in the request's history once,
however many resumers read the timeout at once: the one that spends the request's mark in
the handler's ledger writes it).

A tool whose rule carries a policy (``Approval(policy=...)``) is ruled once, as the call
pipeline rules it (:func:`roomkit.policy.rule_call`), when its request is opened: ``Allow``
and ``Deny`` record the call in a request nobody is told about, settled by the policy (the
framework approves it, or rejects it with the policy's reason); ``Ask`` holds it with the
approvers, quorum and timeout it names. The ``policy_decided`` entry joins the request's
history either way; a shadow policy's too, while the static rule decides.

An asker's :attr:`Asker.resumes` continue a run once its pauses are settled
(:mod:`roomkit.adapters._resumes`); an adapter's entry point makes its asker with
:func:`roomkit.adapters._asking.asking`.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from roomkit.adapters._binding import check_bound
from roomkit.adapters._keys import call_id_of, kept_key
from roomkit.adapters._policy_pause import policy_call, unasked
from roomkit.adapters._resumes import Resumes
from roomkit.adapters._shapes import (
    Pause,
    Verdict,
    answered,
    question_arguments,
    settled_verdict,
)
from roomkit.adapters._watch import watched
from roomkit.core.exceptions import UnknownRequestError
from roomkit.models.clock import LONGEST_TIMEOUT, utcnow
from roomkit.models.pending_input import PendingInput, PendingInputStatus
from roomkit.models.shown import shown
from roomkit.policy.ruling import asks_person, policy_name, rule_call
from roomkit.tools.approvals import Approval
from roomkit.tools.human_input import HumanInputHandler, created_with
from roomkit.tools.human_input.checks import check_ladder_text
from roomkit.tools.human_input.ladder import Ladder, keep_ladder, record_default
from roomkit.tools.human_input.tool_handler import held_tools
from roomkit.tools.validation import validate_answer_text

__all__ = ["Asker", "Pause", "Verdict", "question_arguments"]

_DEFAULT_RULE = Approval()
"""The rule of a pause whose tool no rule names (one object: a rule is immutable)."""

_PENDING = PendingInputStatus.PENDING
_RESOLVED = PendingInputStatus.RESOLVED


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
        ladder: reminders and escalations recorded with every request, and the default
            answer of a question nobody answered in time (``on_expiry``; an approval ends
            by its rule's ``on_expiry``).

    Raises:
        ValueError: a ladder's step comes at or past a deadline.
        InvalidTextError: the ladder's default answer or an escalation's person holds text
            UTF-8 cannot encode.
    """

    __slots__ = (
        "_ruled",
        "actor",
        "channel",
        "handler",
        "ladder",
        "resumes",
        "room",
        "rules",
        "timeout",
    )

    def __init__(
        self,
        handler: HumanInputHandler,
        *,
        approvals: Mapping[str, Approval] | Iterable[str] | None,
        timeout: float,
        actor: str | None,
        room: str,
        channel: str,
        ladder: Ladder | None = None,
    ) -> None:
        if not isinstance(handler, HumanInputHandler):
            raise TypeError(
                f"handler must be a HumanInputHandler (HumanInputToolHandler.handler), "
                f"got {type(handler).__name__}"
            )
        if (
            isinstance(timeout, bool)
            or not isinstance(timeout, int | float)
            or not 0 < timeout <= LONGEST_TIMEOUT  # NaN too
        ):
            raise ValueError(
                "timeout must be a number of seconds above 0 and at most "
                f"{LONGEST_TIMEOUT:.0f} (a century), got {shown(timeout)}"
            )
        self.handler = handler
        self.rules = held_tools(approvals, set())
        self.timeout = float(timeout)
        self.actor = actor
        self.room = room
        self.channel = channel
        self.ladder = _checked_ladder(ladder, self.timeout, self.rules)
        # The rule a policy's Ask held each pause under (by key), for its deadline.
        self._ruled: dict[str, Approval] = {}
        self.resumes = Resumes(handler)
        """The claims on resuming the runs whose pauses this asks about."""

    @property
    def scope(self) -> dict[str, Any]:
        """Who a rule's ``when=`` and a policy see asking: ``actor``, ``room``, ``channel``."""
        return {"actor": self.actor, "room": self.room, "channel": self.channel}

    def key_of(self, pause: Pause) -> str:
        """The key the request of ``pause`` is kept under, within this asker's scope."""
        return kept_key(pause.key, self.room, self.channel, self.actor)

    def rule(self, tool_name: str) -> Approval:
        """The rule holding ``tool_name``: its own, else the default one."""
        return self.rules.get(tool_name) or _DEFAULT_RULE

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
        return await asks_person(rule, pause.tool_name, pause.arguments, **self.scope)

    async def open(self, pause: Pause, *, history: Sequence[dict[str, Any]] = ()) -> PendingInput:
        """The request of ``pause``: created, or the one its key names already; the ladder's
        steps recorded with it (once: recording them again changes nothing).

        ``history``: entries an approval's history holds after ``created`` (and a policy's
        decision), written with the request in its insert's own write; a request its key
        names already is handed back as it is, without them.

        Raises:
            ValueError: the ladder's default answer does not fit the question's schema;
                ``history`` is given for a question.
        """
        if history and pause.kind != "approval":
            raise ValueError("only an approval's request is created with history entries")
        request = await self._create(pause, tuple(history))
        if self.ladder is not None and request.status is _PENDING:
            await keep_ladder(self.handler, request, self.ladder)
        return request

    async def _create(self, pause: Pause, history: tuple[dict[str, Any], ...]) -> PendingInput:
        handler, limit = self.handler, self.limit(pause)
        if pause.kind == "question":
            default = self.ladder.on_expiry if self.ladder is not None else None
            if default is not None and pause.answer_schema is not None:
                problem = validate_answer_text(pause.answer_schema, default.text)
                if problem is not None:
                    raise ValueError(
                        f"the ladder's default {shown(default.text)} does not fit the answer "
                        f"schema of {shown(pause.tool_name)} ({problem}): give default() an "
                        "answer the question takes"
                    )
            return await handler.create(
                pause.tool_name,
                pause.arguments,
                answer_schema=pause.answer_schema,
                **self._placed(pause, limit),
            )
        rule = self.rule(pause.tool_name)
        ruling = None
        if rule.policy is not None:
            call = policy_call(self, pause)
            ruling = await rule_call(rule.policy, rule, call, directory=handler.directory)
            if ruling.ask is None:
                return await unasked(self, pause, ruling, policy_name(rule.policy), history)
            rule = self._ruled[pause.key] = ruling.ask
            limit = self.limit(pause)
        approvers = rule.approvers or ((self.actor,) if self.actor is not None else ())
        # The policy's decision is in the request's first write, before anyone is told.
        evidence = (ruling.entry,) if ruling is not None and ruling.entry is not None else ()
        with created_with(*evidence, *history):
            return await handler.create_approval(
                pause.tool_name,
                pause.arguments,
                approvers=approvers,
                quorum=rule.quorum.n if rule.quorum is not None else None,
                veto=rule.veto,
                tool_schema=pause.tool_schema or {"type": "object"},
                description=pause.description,
                decisions=pause.decisions,
                **self._placed(pause, limit),
            )

    def _placed(self, pause: Pause, limit: float) -> dict[str, Any]:
        """Where the request of ``pause`` belongs, its key and its deadline: what a question's
        request and an approval's take alike."""
        return {
            "room_id": self.room,
            "tool_call_id": call_id_of(pause.tool_call_id),
            "channel_id": self.channel,
            "actor_id": self.actor,
            "key": self.key_of(pause),
            "timeout": limit,
        }

    async def ask(self, pause: Pause, *, who: bool = True) -> Verdict:
        """Ask about ``pause`` and wait in this process for the verdict (inline mode).

        ``who=False`` leaves an answer's ``by`` out, for a framework with nowhere to record
        who answered.
        """
        if not await self.needs_person(pause):
            return Verdict("approve")
        request = await self.open(pause)
        return await self.await_id(request.pending_id, pause, who=who)

    async def await_id(self, pending_id: str, pause: Pause, *, who: bool = True) -> Verdict:
        """Wait for the request ``pending_id`` of ``pause`` to settle; its verdict (``who``
        as :meth:`ask` takes it)."""
        handler = self.handler
        # A durable store wrote the deadline with the request: waiting writes none again.
        limit = None if handler.durable else self.limit(pause)
        # The settled request itself: who settled it, with no read after the wait.
        request = await handler.wait_settled(pending_id, timeout=limit)
        await check_bound(handler, request, pause)
        if request.status is _RESOLVED and not who:
            return answered(pause, request.result or "", None)
        verdict = await self._verdict(request, pause)
        assert verdict is not None
        return verdict

    async def watch(self, pending_id: str, pause: Pause) -> Verdict:
        """Wait for the request ``pending_id`` of ``pause`` to settle, without owning it
        (durable mode): a wait that is cut leaves the request open for the next caller.

        Raises:
            UnknownRequestError: the store no longer holds it.
        """
        return await watched(self.handler, pending_id, lambda: self.settled(pending_id, pause))

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
        return await self._verdict(request, pause)

    async def _read(self, pending_id: str, pause: Pause) -> PendingInput:
        request = await self.handler.get_request(pending_id)
        if request is None:
            raise UnknownRequestError(
                f"request {pending_id} of {shown(pause.tool_name)} is gone from the store: "
                "ask again in a new run"
            )
        await check_bound(self.handler, request, pause)
        return request

    async def look(self, pause: Pause, opened: list[PendingInput]) -> Verdict | None:
        """The verdict on ``pause`` if its request is settled (expiring it when overdue);
        ``None`` while a person may still answer (durable mode). The request, once open, is
        put in ``opened``."""
        if not await self.needs_person(pause):
            return Verdict("approve")
        request = await self.open(pause)
        opened.append(request)
        if request.status is _PENDING:
            await self.handler.expire_overdue([request])
            request = await self.handler.get_request(request.pending_id) or request
        return await self._verdict(request, pause)

    async def _verdict(self, request: PendingInput, pause: Pause) -> Verdict | None:
        """:meth:`verdict`, with a default answer put in the request's history (once)."""
        verdict = self.verdict(request, pause)
        default = self.ladder.on_expiry if self.ladder is not None else None
        if verdict is not None and verdict.kind == "defaulted" and default is not None:
            await record_default(self.handler, request.pending_id, default.text)
        return verdict

    def verdict(self, request: PendingInput, pause: Pause) -> Verdict | None:
        """What the settled ``request`` comes to; ``None`` while it is open."""
        return settled_verdict(
            request,
            pause,
            waited=self.waited(request, pause),
            approve_on_expiry=self.rule(pause.tool_name).on_expiry == "approve",
            default=self.ladder.on_expiry if self.ladder is not None else None,
        )

    def waited(self, request: PendingInput, pause: Pause) -> float:
        """The seconds the person had to answer ``request`` of ``pause``: from its own
        deadline (another process may have asked it under other options), else
        :meth:`limit`."""
        if request.deadline is None:
            return self.limit(pause)
        created = request.created_at
        if self.handler.durable:
            # A durable store's deadline is on the epoch clock, as the creation time is.
            seconds = request.deadline - created.timestamp()
        else:
            # The memory store's deadline is on the event loop's clock: what was left of it
            # now, and what has passed since the request was made.
            left = self.handler.time_left(request) or 0.0
            seconds = left + (utcnow() - created).total_seconds()
        return _asked_timeout(seconds)


def _asked_timeout(seconds: float) -> float:
    """The timeout a request was asked with, from the ``seconds`` between its creation and
    its deadline: the deadline is stamped as the request is stored, a moment after the
    request was made (a few milliseconds, more on a busy machine), so ``seconds`` is the
    timeout plus that moment. The figure with the fewest decimals that the moment can
    account for (up to a tenth of a second, or a twentieth of the whole) is the timeout:
    30.04 s is a 30 s timeout, 30.21 s one of 30.2 s."""
    moment = min(0.1, seconds / 20)
    for scale in (1, 10, 100):
        timeout = math.floor(seconds * scale) / scale
        if timeout >= seconds - moment and timeout > 0:
            return timeout
    return round(seconds, 2)


def _checked_ladder(
    ladder: Ladder | None, timeout: float, rules: Mapping[str, Approval]
) -> Ladder | None:
    """``ladder``, once its steps come before every deadline they may meet.

    Raises:
        TypeError: it is not a :class:`Ladder`.
        ValueError: a step comes at or past the timeout, or a held tool's own.
        InvalidTextError: its default answer or an escalation's person holds text UTF-8
            cannot encode.
    """
    if ladder is None:
        return None
    if not isinstance(ladder, Ladder):
        raise TypeError(f"ladder must be a Ladder, got {type(ladder).__name__}")
    ladder.check(timeout)
    check_ladder_text(ladder)
    for tool, rule in rules.items():
        if rule.timeout is not None:
            try:
                ladder.check(rule.timeout)
            except ValueError as error:
                raise ValueError(f"approvals[{shown(tool)}]: {error}") from None
    return ladder
