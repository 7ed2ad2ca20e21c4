"""HumanInputToolHandler: the tools that ask a person, served by a channel."""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypedDict

from roomkit.core.exceptions import (
    ArgumentsTooLargeError,
    HumanInputRejectedError,
    ToolFailedError,
    ToolRefusedError,
    UnservedToolCallError,
)
from roomkit.models.clock import check_deadline
from roomkit.models.enums import ChannelType
from roomkit.models.shown import shown
from roomkit.providers.ai.base import AITool
from roomkit.tools import texts
from roomkit.tools._policies import check_policy
from roomkit.tools.approvals import Approval
from roomkit.tools.context import current_tool_actor_id, current_tool_call, current_tool_room_id
from roomkit.tools.human_input._checks import check_ladder_text
from roomkit.tools.human_input._typed_answers import AnswerSchema, answer_schema_of
from roomkit.tools.human_input.handler import HumanInputHandler
from roomkit.tools.human_input.ladder import Ladder, keep_ladder, record_default

if TYPE_CHECKING:
    from roomkit.policy.decisions import Policy

__all__ = ["HumanInputCall", "HumanInputToolHandler"]

logger = logging.getLogger("roomkit.tools.human_input")


@dataclass(frozen=True, slots=True)
class HumanInputCall:
    """The call a person is asked about, as a channel passes it to ``ask(call=...)``."""

    room_id: str
    """The call's room."""
    channel_id: str
    """The channel serving the call."""
    channel_type: ChannelType
    """The door the person is asked on."""
    tool_call_id: str
    """The provider's call id ("" when there is none)."""
    actor_id: str | None
    """The person the call is for, or ``None`` when nobody is known."""


class HumanInputToolHandler:
    """Serves the named tools by asking a person and returning the answer as the result.

    Pass it to a channel as ``human_input_handler=``: the channel declares
    ``tool_definitions`` to the model and serves ``tool_names`` itself, before its
    ``tool_handler``. Called as a plain tool handler it asks on an AI channel's door, and
    raises :class:`UnservedToolCallError` for other names (so it composes with
    ``compose_tool_handlers``).

    Args:
        tool_names: the tools that need a person.
        timeout: seconds a person has to answer before the call fails.
        handler: a :class:`HumanInputHandler` to share; a new one when ``None``.
        tool_definitions: definitions that put these tools in the model's turn. A tool that
            is neither defined here nor declared on the channel is never offered, so never
            asked.
        answer_schemas: per tool name, a JSON Schema the person's answer (JSON text) must
            match, or a Pydantic model class standing for its ``model_json_schema()``. It
            is stored with each request, so ``aresolve()`` and the answer desk in any
            process check answers the same way.
        approvals: tools of the host (not in ``tool_names``) held for a person's decision
            before they run: a dict of name to :class:`~roomkit.Approval`, or a set of names
            (each with ``Approval()``). See :mod:`roomkit.tools.approvals`.
        ladder: what happens while nobody answers (:class:`~roomkit.notify.Ladder`):
            reminders and escalations, recorded with each request for whichever process runs
            a notifier, and a default answer on expiry. Its reminders and escalations reach
            the approvals of held tools too (an approval ends by its ``Approval(on_expiry=...)``,
            so a ladder with ``on_expiry`` and ``approvals`` is refused). A step at or past
            ``timeout``, or past a held tool's ``Approval(timeout=...)``, is a ``ValueError``;
            a default answer or an escalation's person UTF-8 cannot encode (a lone
            surrogate), which no history could record, an ``InvalidTextError``.
        policy: a :class:`~roomkit.policy.Policy` deciding every call to the host's tools
            (a held tool's ``Approval(policy=...)`` wins for that tool): allow runs it
            unasked, deny refuses it, ask holds it for a person, abstain leaves
            ``approvals`` in charge. See :mod:`roomkit.policy`.

    On a durable store, each request gets the key ``room:channel:tool-call-id`` (for calls
    with a provider id on an AI channel), so a turn re-driven after a restart re-attaches to
    the question already asked instead of asking again.
    """

    def __init__(
        self,
        tool_names: Iterable[str],
        timeout: float = 300,
        handler: HumanInputHandler | None = None,
        tool_definitions: list[AITool] | None = None,
        *,
        answer_schemas: Mapping[str, AnswerSchema] | None = None,
        approvals: Mapping[str, Approval] | Iterable[str] | None = None,
        ladder: Ladder | None = None,
        policy: Policy | None = None,
    ) -> None:
        if isinstance(tool_names, str):
            raise TypeError(f"tool_names must be a set of names, e.g. {{{tool_names!r}}}")
        if not isinstance(tool_names, Iterable):
            raise TypeError(
                "tool_names must be a set of names, e.g. {'AskUserQuestion'}, got "
                f"{type(tool_names).__name__}"
            )
        names = set(tool_names)
        if not names:
            raise ValueError("tool_names must not be empty")
        for name in names:
            if not isinstance(name, str) or not name:
                raise ValueError(f"tool_names must hold non-empty strings, got {shown(name)}")
        if isinstance(timeout, bool) or not isinstance(timeout, int | float):
            raise TypeError(f"timeout must be a number of seconds, got {timeout!r}")
        check_deadline("timeout", timeout)
        if handler is not None and not isinstance(handler, HumanInputHandler):
            raise TypeError(f"handler must be a HumanInputHandler, got {type(handler).__name__}")
        if ladder is not None:
            if not isinstance(ladder, Ladder):
                raise TypeError(f"ladder must be a Ladder, got {type(ladder).__name__}")
            ladder.check(timeout)
            check_ladder_text(ladder)
        if policy is not None:
            check_policy(policy, "policy=")
        self.policy = policy
        """The policy deciding the host's tool calls, or ``None``."""
        self.ladder = ladder
        self.tool_names: set[str] = names
        self.timeout = timeout
        self._handler = handler if handler is not None else HumanInputHandler()
        self.answer_schemas: dict[str, dict[str, Any]] = {}
        for name, schema in (answer_schemas or {}).items():
            if name not in names:
                raise ValueError(
                    f"answer_schemas names {shown(name)}, not in tool_names {shown(names)}"
                )
            self.answer_schemas[name] = answer_schema_of(schema, name=f"answer_schemas[{name!r}]")
        self.approvals: dict[str, Approval] = held_tools(approvals, names)
        if self.approvals and ladder is not None and ladder.on_expiry is not None:
            raise ValueError(
                "Ladder(on_expiry=...) decides how a question ends, not an approval: give held "
                "tools Approval(on_expiry=...) and leave on_expiry off this ladder"
            )
        if ladder is not None:
            _check_held(ladder, self.approvals)
        """The held tools, by name, with their rules."""
        self._definitions: list[AITool] = []
        seen: set[str] = set()
        for definition in tool_definitions or ():
            if not isinstance(definition, AITool):
                raise TypeError(
                    f"tool_definitions must hold AITool objects, got {type(definition).__name__}"
                )
            if definition.name not in names:
                raise ValueError(
                    f"Tool definition {shown(definition.name)} not in tool_names "
                    f"{shown(self.tool_names)}"
                )
            if definition.name in seen:
                raise ValueError(f"Tool definition {shown(definition.name)} is given twice")
            seen.add(definition.name)
            self._definitions.append(definition)

    @property
    def handler(self) -> HumanInputHandler:
        """The inner handler: call its ``resolve()`` / ``reject()`` to answer."""
        return self._handler

    @property
    def tools(self) -> list[AITool]:
        """A copy of the tool definitions this handler declares."""
        return list(self._definitions)

    async def __call__(self, name: str, arguments: dict[str, Any]) -> str:
        """Serve a call as a tool handler, on an AI channel's door."""
        return await self.ask(name, arguments)

    async def ask(
        self,
        name: str,
        arguments: dict[str, Any],
        *,
        call: HumanInputCall | None = None,
        channel_type: ChannelType = ChannelType.AI,
        timeout: float | None = None,
    ) -> str:
        """Ask a person about the call ``call``; return their answer.

        A channel passes the call it serves (its room, channel, door, tool-call id and
        actor) and the person's deadline as ``timeout``, both decided before the call is
        served. Without ``call``, they come from the tool context the caller set
        (``tool_turn_context``) and the door is ``channel_type``; without ``timeout``, the
        handler's own applies. The deadline is the request's, so an answer and the
        deadline never both win.

        Raises:
            UnservedToolCallError: ``name`` is not one of ``tool_names``.
            TypeError: ``call`` is not a :class:`HumanInputCall`.
            ToolFailedError: nobody answered in time (the model reads the timeout).
            ToolRefusedError: the request was rejected, or its arguments are longer than a
                request keeps (the model reads why; nobody was asked).
            RequestWithdrawnError: the request was given up (closed, released).
        """
        if name not in self.tool_names:
            raise UnservedToolCallError(f"tool {name!r} is not served here")
        if call is not None and not isinstance(call, HumanInputCall):
            raise TypeError(
                "call must be a HumanInputCall (the room, channel and call it serves), got "
                f"{type(call).__name__}"
            )
        site = _site_of(call) if call is not None else _site_in_context(channel_type)
        handler = self._handler
        key = None
        if handler.durable and site["tool_call_id"] and site["channel_type"] is ChannelType.AI:
            key = f"{site['room_id']}:{site['channel_id']}:{site['tool_call_id']}"
        limit = self.timeout if timeout is None else timeout
        try:
            pending = await handler.create(
                name,
                arguments,
                **site,
                key=key,
                answer_schema=self.answer_schemas.get(name),
                # A durable store writes the deadline with the request: no window without one.
                timeout=limit if handler.durable else None,
            )
        except ArgumentsTooLargeError as error:
            # The model wrote them: it reads how long they are and what to send instead.
            raise ToolRefusedError(texts.invalid_arguments(name, str(error))) from None
        if self.ladder is not None:
            await keep_ladder(handler, pending, self.ladder)
        try:
            return await handler.wait(pending.pending_id, timeout=limit)
        except TimeoutError:
            if self.ladder is not None and self.ladder.on_expiry is not None:
                answer = self.ladder.on_expiry.text
                await _keep_default(handler, pending.pending_id, answer)
                return texts.human_input_defaulted(name, limit, answer)
            raise ToolFailedError(texts.human_input_timed_out(name, limit)) from None
        except HumanInputRejectedError as rejected:
            raise ToolRefusedError(texts.human_input_rejected(rejected)) from None


class _Site(TypedDict):
    """Where a request is asked, as :meth:`HumanInputHandler.create` takes it."""

    room_id: str
    tool_call_id: str
    channel_id: str
    channel_type: ChannelType
    actor_id: str | None


def _site_of(call: HumanInputCall) -> _Site:
    """Where the call a channel passed is asked."""
    return _Site(
        room_id=call.room_id,
        tool_call_id=call.tool_call_id,
        channel_id=call.channel_id,
        channel_type=call.channel_type,
        actor_id=call.actor_id,
    )


def _site_in_context(channel_type: ChannelType) -> _Site:
    """Where a call is asked on the door ``channel_type``, as the tool context set by the
    caller (``tool_turn_context``) says."""
    context = current_tool_call()
    room_id = context.room_id if context is not None else ""
    return _Site(
        room_id=room_id or current_tool_room_id() or "",
        tool_call_id=context.tool_call_id if context is not None else "",
        channel_id=context.channel_id if context is not None else "",
        channel_type=channel_type,
        actor_id=current_tool_actor_id(),
    )


async def _keep_default(handler: HumanInputHandler, pending_id: str, answer: str) -> None:
    """Put the default the model read in the request's history, after its timeout: once,
    however many processes serving the keyed call read the timeout at once.

    A write that fails is logged: the model still reads the default.
    """
    try:
        await record_default(handler, pending_id, answer)
    except Exception as error:
        logger.warning("Could not record the default answer of %s: %s", pending_id, error)


def _check_held(ladder: Ladder, approvals: Mapping[str, Approval]) -> None:
    """Refuse a step at or past a held tool's own timeout: its approvals would have expired.

    Raises:
        ValueError: naming the held tool and the step.
    """
    for tool, rule in approvals.items():
        if rule.timeout is None:
            continue  # the handler's timeout, which the ladder was checked against
        try:
            ladder.check(rule.timeout)
        except ValueError as error:
            raise ValueError(f"approvals[{tool!r}]: {error}") from None


def held_tools(
    approvals: Mapping[str, Approval] | Iterable[str] | None, asked: set[str]
) -> dict[str, Approval]:
    """The ``approvals=`` argument as a dict of name to rule, checked.

    Raises:
        TypeError: it is one string, bytes or no collection, or a value is not an
            :class:`Approval`.
        ValueError: a name is empty, or one of the tools that ask a person.
    """
    if approvals is None:
        return {}
    if isinstance(approvals, str):
        raise TypeError(f"approvals must be a set of names or a dict, e.g. {{{approvals!r}}}")
    if isinstance(approvals, bytes | bytearray) or not isinstance(approvals, Iterable):
        raise TypeError(
            "approvals must be a set of tool names or a dict of names to Approval, e.g. "
            f"{{'wire'}}, got {type(approvals).__name__}"
        )
    if isinstance(approvals, Mapping):
        rules = dict(approvals)
    else:
        rules = {name: Approval() for name in approvals}
    for name, rule in rules.items():
        if not isinstance(name, str) or not name:
            raise ValueError(f"approvals must name tools with non-empty strings, got {name!r}")
        if name in asked:
            raise ValueError(
                f"approvals names '{name}', a tool that asks a person already: hold only "
                "the host's tools"
            )
        if not isinstance(rule, Approval):
            raise TypeError(f"approvals['{name}'] must be an Approval, got {rule!r}")
    return rules
