"""A turn's journal on a durable room store: what a re-run after a restart replays.

Each model response and each call's result is recorded as it happens. A turn re-driven by
``RoomKit.resume_pending()`` reads them back instead of calling the model or running the
tool again, so it reaches the very call it was waiting on (same provider call id, so the
same human-input key) and re-attaches to the question already asked.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any

from roomkit.core.store import JournalStep, OpenTurn, RoomStore, TurnJournal
from roomkit.providers.ai.base import AIMessage, AIResponse, AIToolResultPart

__all__ = ["Journal", "journal_for"]

logger = logging.getLogger("roomkit.channels.ai")

# Step indexes: round r's response at r * _SPAN, its calls' results after it.
_SPAN = 1_000


def journal_for(store: RoomStore) -> TurnJournal | None:
    """The store as a turn journal when it is durable, else ``None`` (nothing to replay)."""
    if getattr(store, "durable", False) and isinstance(store, TurnJournal):
        return store
    return None


class Journal:
    """One turn's record: written as the turn goes, read back when it is re-driven."""

    def __init__(
        self, store: TurnJournal, turn: OpenTurn, steps: list[JournalStep] | None = None
    ) -> None:
        self.store = store
        self.turn = turn
        self._replay = {step.index: step for step in steps or ()}

    @classmethod
    async def begin(
        cls,
        store: TurnJournal,
        *,
        turn_id: str,
        room_id: str,
        channel_id: str,
        actor_id: str | None,
        messages: list[AIMessage],
    ) -> Journal:
        """Record a new turn, with the conversation it starts from."""
        state = {"messages": [message.model_dump(mode="json") for message in messages]}
        turn = OpenTurn(turn_id, room_id, channel_id, actor_id, state)
        await store.begin_turn(turn)
        return cls(store, turn)

    @classmethod
    async def resume(cls, store: TurnJournal, turn: OpenTurn) -> Journal:
        """The journal of a turn recorded by an earlier process."""
        return cls(store, turn, await store.steps(turn.turn_id))

    def messages(self) -> list[AIMessage]:
        """The conversation the turn started from."""
        raw: list[Any] = self.turn.state.get("messages", [])
        return [AIMessage.model_validate(message) for message in raw]

    async def response(
        self, round_no: int, generate: Callable[[], Awaitable[AIResponse]]
    ) -> AIResponse:
        """Round ``round_no``'s model response: replayed if recorded, else generated."""
        index = round_no * _SPAN
        step = self._replay.get(index)
        if step is not None:
            return AIResponse.model_validate(step.payload)
        response = await generate()
        await self._record(index, "response", response.model_dump(mode="json"))
        return response

    async def result(
        self,
        round_no: int,
        position: int,
        run: Callable[[], Awaitable[AIToolResultPart]],
    ) -> AIToolResultPart:
        """A call's result: replayed if recorded, else run (and recorded)."""
        index = round_no * _SPAN + 1 + position
        step = self._replay.get(index)
        if step is not None:
            return AIToolResultPart.model_validate(step.payload)
        part = await run()
        await self._record(index, "result", part.model_dump(mode="json"))
        return part

    async def end(self) -> None:
        """The turn finished: forget it."""
        await self.store.end_turn(self.turn.turn_id)

    async def _record(self, index: int, kind: str, payload: dict[str, Any]) -> None:
        await self.store.record_step(self.turn.turn_id, JournalStep(index, kind, payload))
