"""The turn: model rounds, each round's calls run concurrently, each call through its steps.

Per round: the model call (``_model``: bounded by the turn's budget, checked, screened).
Per call: screen (arguments that cannot be encoded, before the response is recorded) ->
route (a call the provider already ran is reported; a name the channel does not serve goes
to the external handler) -> the call pipeline of every channel (``channels/_calls``: checks,
gate, serve, report), at the turn's call site. A round whose every call is the provider's
ends the turn: the provider reads those results. The calls of a response that comes past the
round limit or the turn's deadline run no more, and each is accounted for (reported, or told
to the external handler).
"""

from __future__ import annotations

import asyncio
import functools
import logging
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from roomkit.channels._calls.checks import arguments_cut
from roomkit.channels._calls.outcome import cut
from roomkit.channels._calls.pipeline import run_call
from roomkit.channels._calls.report import report
from roomkit.channels._calls.site import CallSite, room_context
from roomkit.channels.ai import _external
from roomkit.channels.ai._journal import Journal
from roomkit.channels.ai._model import generate
from roomkit.core.exceptions import TurnNotOpenError
from roomkit.core.failed_turns import ends_failed_turn
from roomkit.models.enums import ChannelType
from roomkit.models.hooks import RoomContext
from roomkit.models.room import Room, RoomEvent
from roomkit.providers.ai.base import AIContext, AIMessage, AITool, AIToolCall, AIToolResultPart
from roomkit.tools import texts

if TYPE_CHECKING:
    from roomkit.channels.ai.channel import AIChannel
    from roomkit.core.framework import RoomKit

__all__ = ["Turn", "conversation_for", "history_messages"]

logger = logging.getLogger("roomkit.channels.ai")


class Turn:
    """One turn of an AI channel in one room, for one actor."""

    def __init__(
        self,
        channel: AIChannel,
        room: Room,
        actor_id: str | None,
        tools: dict[str, AITool],
    ) -> None:
        self.channel = channel
        self.kit: RoomKit | None = channel.kit
        self.room = room
        self.room_id = room.id
        self.actor_id = actor_id
        self.tools = tools
        self.stopped: str | None = None
        """Set by a steering stop: the turn ends before its next model round."""
        self.unreported: dict[str, tuple[str, dict[str, Any]]] = {}
        """External calls announced to the handler and not yet reported."""
        self._context: RoomContext | None = None
        self.journal: Journal | None = None
        """On a durable room store: records the turn's steps, replays them on a re-run."""

    async def context(self) -> RoomContext | None:
        """The room context hooks receive, built once per turn; ``None`` if unavailable."""
        if self._context is None:
            self._context = await room_context(self.kit, self.room_id)
        return self._context

    def site(self, call_id: str) -> CallSite:
        """Where the turn's call ``call_id`` is served."""
        return CallSite(
            self.kit,
            self.channel.channel_id,
            ChannelType.AI,
            self.room,
            self.actor_id,
            call_id,
            self.tools,
            self.context,
        )

    def cut_hint(self) -> str:
        """Why a call the turn cut has no result."""
        return texts.CHANNEL_CLOSED if self.channel.closing else texts.TURN_ENDED

    def serves_locally(self, name: str) -> bool:
        """True when the channel itself serves ``name`` (offered or a human-input name)."""
        human = self.channel.human_input_handler
        return name in self.tools or (human is not None and name in human.tool_names)

    async def run(self, messages: list[AIMessage]) -> str | None:
        """Model rounds until a reply without tool calls, a stop or the round limit."""
        channel = self.channel
        tools = list(self.tools.values())
        # The loop's clock, like every asyncio bound: a test clock moves it too.
        clock = asyncio.get_running_loop().time
        deadline = clock() + channel.tool_loop_timeout_seconds
        for round_no in range(channel.max_tool_rounds + 1):
            context = AIContext(
                messages=list(messages),
                system_prompt=channel.system_prompt,
                tools=tools,
                room=self.room,
            )
            journal = self.journal
            if journal is None:
                response = await generate(channel, context)
            else:
                response = await journal.response(
                    round_no, functools.partial(generate, channel, context)
                )
            calls = response.tool_calls
            if not calls:
                return response.content or None
            if round_no == channel.max_tool_rounds or clock() > deadline:
                logger.warning(
                    "Channel %s stopped a turn in room %s after %d tool rounds",
                    channel.channel_id,
                    self.room_id,
                    round_no,
                )
                await self.stop_calls(calls)
                return response.content or None
            parts = await self.run_round(calls, round_no)
            messages.append(AIMessage.assistant(response.content, calls))
            messages.append(AIMessage.tool_results(parts))
            if self.stopped is not None:
                logger.info("Turn in room %s stopped: %s", self.room_id, self.stopped)
                return None
            if all(_external.takes(self, call) for call in calls):
                # The provider ran (or runs) every call itself: it has no round to wait for.
                return response.content or None
        return None  # pragma: no cover - the loop returns on its last round

    async def stop_calls(self, calls: list[AIToolCall]) -> None:
        """Account for the calls of the response the turn stops at: none of them runs.

        A call the provider already ran is reported as it ran; one its external handler was
        never asked goes to the handler's ``on_tool_cancelled`` at the turn's teardown; each
        of the channel's own is reported cut.
        """
        for call in calls:
            if call.served is not None:
                await _external.run(self, call)
            elif _external.takes(self, call):
                self.unreported[call.id] = (call.name, call.arguments)
            else:
                outcome = cut(call.name, call.arguments, self.cut_hint())
                await report(self.site(call.id), call.name, outcome)

    async def run_round(self, calls: list[AIToolCall], round_no: int = 0) -> list[AIToolResultPart]:
        """Run one round's calls concurrently; results in call order."""
        if len(calls) == 1:
            return [await self._journaled(calls[0], round_no, 0)]
        try:
            async with asyncio.TaskGroup() as group:
                tasks = [
                    group.create_task(self._journaled(call, round_no, position))
                    for position, call in enumerate(calls)
                ]
        except* TurnNotOpenError as ended:
            # A result the journal refused: the turn was ended elsewhere, its other calls
            # are cut, and the turn stops as with one call.
            raise ended.exceptions[0] from None
        return [task.result() for task in tasks]

    async def _journaled(self, call: AIToolCall, round_no: int, position: int) -> AIToolResultPart:
        if self.journal is None:
            return await self.run_call(call)
        return await self.journal.result(round_no, position, functools.partial(self.run_call, call))

    async def run_call(self, call: AIToolCall) -> AIToolResultPart:
        """One call: the provider's (``_external``), or the pipeline's at the turn's site."""
        if _external.takes(self, call):
            outcome = await _external.run(self, call)
        else:
            outcome = await run_call(
                self.site(call.id),
                self.channel,
                call.name,
                call.arguments,
                cut_hint=self.cut_hint,
                refusal=arguments_cut(call),
            )
        return AIToolResultPart(
            tool_call_id=call.id,
            name=call.name,
            content=outcome.content,
            is_error=outcome.is_error,
        )


def conversation_for(
    events: list[RoomEvent], message_id: int, channels: Mapping[str, object]
) -> list[RoomEvent]:
    """The events a turn on message ``message_id`` reads: those before the message, the
    agents' replies after it (events of channels that answer, ``respond``), then the
    message. Without the message in ``events``, ``events`` as they are."""
    for index, event in enumerate(events):
        if event.id == message_id:
            since = [
                later
                for later in events[index + 1 :]
                if hasattr(channels.get(later.channel_id), "respond")
            ]
            return [*events[:index], *since, event]
    return events


def history_messages(events: list[RoomEvent], channel_id: str) -> list[AIMessage]:
    """The room's recent events as the model's conversation (an event that ended a failed
    turn is none of it: it tells the caller, not the model)."""
    messages = []
    for event in events:
        if ends_failed_turn(event):
            continue
        if event.channel_id == channel_id:
            messages.append(AIMessage.assistant(event.content.body))
        else:
            messages.append(AIMessage.user(event.content.body, name=event.sender_id or None))
    return messages
