"""AIChannel: an agent in a room, with its tools, its human-input tools and its tool loop."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping
from typing import TYPE_CHECKING

from roomkit.channels._calls.bounds import seconds
from roomkit.channels._calls.declare import ToolChannel, binding_tools, check_kind
from roomkit.channels.ai import _external
from roomkit.channels.ai._journal import Journal, journal_for
from roomkit.channels.ai._turn import Turn, conversation_for, history_messages
from roomkit.channels.ai._wiring import wire_external
from roomkit.core.exceptions import TurnNotOpenError
from roomkit.core.store import OpenTurn
from roomkit.core.tasks import cancel_and_wait
from roomkit.models.enums import ChannelType
from roomkit.models.room import RoomEvent, TextContent
from roomkit.models.steering import Cancel
from roomkit.providers.ai.base import AIMessage, AIProvider, AITool
from roomkit.tools.compose import ToolHandler
from roomkit.tools.context import tool_turn_context
from roomkit.tools.external import ExternalToolHandler
from roomkit.tools.human_input import HumanInputToolHandler

if TYPE_CHECKING:
    from roomkit.core.framework import RoomKit

__all__ = ["AIChannel"]

logger = logging.getLogger("roomkit.channels.ai")


class AIChannel(ToolChannel):
    """An AI agent: each inbound message in its rooms runs a turn of its tool loop.

    Args:
        channel_id: the channel's id.
        provider: the model.
        system_prompt: the system prompt of every turn.
        tool_handler: serves the host's tools (``await tool_handler(name, arguments)``).
        tools: definitions of the host's tools, offered to every turn.
        human_input_handler: tools that ask a person; declared and served by the channel
            before ``tool_handler``, under the handler's own timeout.
        external_tool_handler: decides calls to tools the channel does not serve (a provider
            that runs tools itself).
        tool_timeout_seconds: the bound of a host tool call (``None``: unbounded).
        tool_timeouts: per-tool bounds, overriding the defaults (human-input names included).
        tool_loop_timeout_seconds: no new model round starts after this long, and no one
            model call runs longer (one that does fails the turn with ``ProviderTimeoutError``).
        max_tool_rounds: the most tool rounds in one turn.
        history_limit: how many of the room's recent events the model sees.
        concurrent_turns: let the kit run several turns of this channel in one room at once.
            By default a message that arrives while a turn runs in its room waits for that
            turn (and any queued before it) to finish, then runs its own; on a durable room
            store a waiting message survives a restart (``resume_pending``).

    Raises:
        TypeError: an argument has the wrong type.
        ValueError: two tools share a name (or a host tool takes a human-input tool's), a
            tool's name is not letters, digits, ``_`` and ``-`` (1 to 64 of them: what
            model providers take), its parameters are no JSON Schema for an object, or a
            bound or a count is out of range.
    """

    channel_type = ChannelType.AI

    def __init__(
        self,
        channel_id: str,
        provider: AIProvider,
        system_prompt: str | None = None,
        *,
        tool_timeout_seconds: float | None = 30.0,
        tool_handler: ToolHandler | None = None,
        tools: list[AITool] | None = None,
        human_input_handler: HumanInputToolHandler | None = None,
        external_tool_handler: ExternalToolHandler | None = None,
        tool_timeouts: Mapping[str, float | None] | None = None,
        tool_loop_timeout_seconds: float = 300.0,
        max_tool_rounds: int = 50,
        history_limit: int = 50,
        concurrent_turns: bool = False,
    ) -> None:
        super().__init__(
            channel_id,
            tools=tools or [],
            tool_handler=tool_handler,
            human_input_handler=human_input_handler,
            tool_timeout_seconds=tool_timeout_seconds,
            tool_timeouts=tool_timeouts,
        )
        check_kind("provider", provider, AIProvider)
        check_kind(
            "external_tool_handler", external_tool_handler, ExternalToolHandler, optional=True
        )
        if isinstance(max_tool_rounds, bool) or not isinstance(max_tool_rounds, int):
            raise TypeError(f"max_tool_rounds must be an int, got {max_tool_rounds!r}")
        if max_tool_rounds < 0:
            raise ValueError(f"max_tool_rounds must be >= 0, got {max_tool_rounds}")
        if isinstance(history_limit, bool) or not isinstance(history_limit, int):
            raise TypeError(f"history_limit must be an int, got {history_limit!r}")
        if history_limit < 1:
            raise ValueError(f"history_limit must be >= 1, got {history_limit}")
        if not isinstance(concurrent_turns, bool):
            raise TypeError(f"concurrent_turns must be True or False, got {concurrent_turns!r}")
        self.provider = provider
        self.system_prompt = system_prompt
        self.external_tool_handler = external_tool_handler
        loop_timeout = seconds(
            "tool_loop_timeout_seconds", tool_loop_timeout_seconds, optional=False
        )
        assert loop_timeout is not None  # optional=False raised for None
        self.tool_loop_timeout_seconds = loop_timeout
        self.max_tool_rounds = max_tool_rounds
        self.history_limit = history_limit
        self.concurrent_turns = concurrent_turns
        """Whether the kit may run several turns of this channel in one room at once."""
        self._binding_tools: dict[str, tuple[object, list[AITool]]] = {}
        self._turns: dict[asyncio.Task[str | None], Turn] = {}
        self.abandoned_calls: set[asyncio.Task[object]] = set()
        """Model calls cancelled at their bound that have not ended yet (their provider
        swallowed the cancellation): held until they end, their results dropped."""

    def tools_by_name(self) -> dict[str, AITool]:
        """The channel's own toolset, by name."""
        return dict(self._tools)

    def running_turns(self) -> list[Turn]:
        """The turns running now."""
        return list(self._turns.values())

    def set_framework(self, kit: RoomKit) -> None:
        """Wire the channel to ``kit``: its human input to ON_USER_INPUT_REQUIRED, its
        external handler to BEFORE_TOOL_USE and ON_TOOL_CALL."""
        super().set_framework(kit)
        external = self.external_tool_handler
        if external is not None:
            wire_external(self, kit, external)

    async def _turn_tools(self, room_id: str) -> dict[str, AITool]:
        tools = self._tools
        kit = self._kit
        if kit is not None:
            for binding in await kit.store.list_bindings(room_id):
                if binding.channel_id != self.channel_id or not binding.metadata.get("tools"):
                    continue
                cached = self._binding_tools.get(room_id)
                if cached is None or cached[0] is not binding:
                    cached = (binding, binding_tools(binding.metadata))
                    self._binding_tools[room_id] = cached
                extra = [tool for tool in cached[1] if tool.name not in tools]
                if extra:
                    tools = {**tools, **{tool.name: tool for tool in extra}}
        self.warn_unoffered(tools)
        return tools

    async def respond(
        self, room_id: str, event: RoomEvent, *, turn: OpenTurn | None = None
    ) -> RoomEvent | None:
        """Run a turn on ``event`` in ``room_id``; return its reply, if any.

        The event's sender is the turn's actor. A turn cut by ``close()`` returns ``None``.
        On a durable room store the reply is stored in the room with the turn's end, in one
        write, before this returns: the caller delivers it and stores nothing. On any other
        store the caller stores it.

        Args:
            turn: the turn the kit recorded with ``event`` (``TurnJournal.record_inbound``);
                it runs under that record. Without it, a durable store gets a new record.
        """
        kit = self.registered_kit()
        if self.closing:
            return None
        return await self._start(kit, room_id, event.sender_id or None, turn, event.id)

    async def resume_turn(self, recorded: OpenTurn) -> RoomEvent | None:
        """Re-drive a turn an earlier process recorded and did not finish.

        Recorded model responses and call results are replayed, not made again; the call
        that was waiting on a person re-attaches to its request by key, so the person is
        not asked twice and an answer given meanwhile is used. A turn recorded with its
        message and never started starts now, from the room's history. Returns the reply,
        already stored in the room with the turn's end (``None`` when there is none, or
        another run finished the turn first).
        """
        kit = self.registered_kit()
        store = journal_for(kit.store)
        if store is None or self.closing:
            return None
        journal = await Journal.resume(store, recorded)
        if not journal.started:
            message_id = recorded.state.get("message_id")
            return await self._start(
                kit,
                recorded.room_id,
                recorded.actor_id,
                recorded,
                message_id if isinstance(message_id, int) else None,
            )
        room = await kit.get_room(recorded.room_id)
        turn = Turn(self, room, recorded.actor_id, await self._turn_tools(recorded.room_id))
        turn.journal = journal
        return await self._drive(turn, journal.messages())

    async def _start(
        self,
        kit: RoomKit,
        room_id: str,
        actor_id: str | None,
        recorded: OpenTurn | None,
        message_id: int | None = None,
    ) -> RoomEvent | None:
        """Start a turn from the room's history (recording it first on a durable store).

        The turn on message ``message_id`` sees the history up to that message, the
        agents' replies since, then the message: a turn that waited for others reads their
        replies before its message, and no later message of a person.
        """
        room = await kit.get_room(room_id)
        tools = await self._turn_tools(room_id)
        history = await kit.store.recent_events(room_id, self.history_limit)
        turn = Turn(self, room, actor_id, tools)
        if message_id is not None:
            history = conversation_for(history, message_id, kit.channels)
        messages = history_messages(history, self.channel_id)
        store = journal_for(kit.store)
        if store is not None:
            turn.journal = await Journal.begin(
                store,
                recorded,
                room_id=room_id,
                channel_id=self.channel_id,
                actor_id=actor_id,
                messages=messages,
            )
            if turn.journal is None:
                return None  # another run finished the turn
        return await self._drive(turn, messages)

    async def _drive(self, turn: Turn, messages: list[AIMessage]) -> RoomEvent | None:
        """Run ``turn`` in a task of its own, so ``close()`` can cut it; return its reply.

        A journaled turn stores its reply and ends in one write; a turn cut before that
        stays open for ``resume_pending()``. One ended elsewhere meanwhile (its A2A task
        cancelled on another replica) stops at its next step, whose record the journal
        refuses: no model round or call runs after it, and it has no reply.
        """
        room_id = turn.room_id
        task = asyncio.get_running_loop().create_task(self._run(turn, messages))
        self._turns[task] = turn
        # A turn cut because its caller was cancelled ends after this method has returned.
        task.add_done_callback(self._forget_turn)
        try:
            text = await asyncio.shield(task)
        except asyncio.CancelledError:
            current = asyncio.current_task()
            if current is not None and current.cancelling():
                task.cancel()
                raise
            return None
        except TurnNotOpenError:
            if turn.journal is None:
                raise
            # Its journal refused a step: the turn was ended meanwhile, not failed.
            logger.info(
                "Turn %s in room %s was ended elsewhere (cancelled, or finished by another "
                "run): stopped at its next step, without a reply",
                turn.journal.turn.turn_id,
                room_id,
            )
            return None
        finally:
            if task.done():
                self._turns.pop(task, None)
        reply = None
        if text:
            reply = RoomEvent(room_id, self.channel_id, self.channel_id, TextContent(text))
        if turn.journal is not None and not await turn.journal.finish(reply):
            return None
        return reply

    def _forget_turn(self, task: asyncio.Task[str | None]) -> None:
        self._turns.pop(task, None)

    async def _run(self, turn: Turn, messages: list[AIMessage]) -> str | None:
        with tool_turn_context(
            room_id=turn.room_id, room=turn.room, actor_id=turn.actor_id, tools=list(turn.tools)
        ):
            try:
                return await turn.run(messages)
            finally:
                await _external.teardown(turn)

    def steer(self, command: Cancel, *, room_id: str) -> bool:
        """Stop the running turns of ``room_id`` before their next model round.

        Calls already running finish, and are reported with their outcome. Returns ``True``
        if a turn was running.
        """
        if not isinstance(command, Cancel):
            raise TypeError(f"steer takes a Cancel, got {type(command).__name__}")
        found = False
        for turn in self._turns.values():
            if turn.room_id == room_id:
                turn.stopped = command.reason or "cancelled"
                found = True
        return found

    async def _cut_running(self) -> None:
        await cancel_and_wait(list(self._turns))
        self._turns.clear()
        # Cancelled once already and still running: another cancel may end a provider's
        # retry loop. Waiting for one that swallows every cancel would hang the closing.
        for call in self.abandoned_calls:
            call.cancel()
