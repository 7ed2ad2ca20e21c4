"""A turn's journal on a durable room store: what a re-run after a restart replays.

The turn's first step is the conversation it starts from; each model response and each
call's result is recorded as it happens; the reply is stored with the turn's end, in one
write. A turn re-driven by ``RoomKit.resume_pending()`` reads the steps back instead of
calling the model or running the tool again, so it reaches the very call it was waiting on
(same provider call id, so the same human-input key) and re-attaches to the question
already asked. A turn the kit recorded with its message and that never started has no
conversation yet: it starts from the room's history.

A response is recorded as JSON. The provider's ``metadata`` (the response's, each call's) is
its own, passed along untouched: an entry JSON cannot hold (an SDK object, bytes that are no
text, a dict that holds itself) is left out of the record with a warning naming it, and the
turn goes on with the response as the provider gave it; a re-run reads it without that entry.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from pydantic import BaseModel
from pydantic_core import to_jsonable_python

from roomkit.core.exceptions import ProviderResponseError
from roomkit.core.store import JournalStep, OpenTurn, TurnJournal, turn_journal
from roomkit.models.room import RoomEvent
from roomkit.models.shown import shown
from roomkit.providers.ai.base import AIMessage, AIResponse, AIToolResultPart

__all__ = ["Journal", "journal_for"]

logger = logging.getLogger("roomkit.channels.ai")

# Step indexes: the conversation the turn starts from first, then round r's response at
# r * _SPAN and its calls' results after it.
_START = -1
_SPAN = 1_000


_Step = TypeVar("_Step", bound=BaseModel)

journal_for = turn_journal
"""The store as a turn journal when it is durable, else ``None`` (nothing to replay)."""


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
        turn: OpenTurn | None,
        *,
        room_id: str,
        channel_id: str,
        actor_id: str | None,
        messages: list[AIMessage],
    ) -> Journal | None:
        """Record the conversation a turn starts from, before its first model call.

        ``turn`` is the record the kit made with the turn's message, or ``None`` for a turn
        recorded here. Returns ``None`` when the kit's record is no longer open: another
        run finished the turn, and this one must not run it again.
        """
        if turn is None:
            turn = OpenTurn(os.urandom(16).hex(), room_id, channel_id, actor_id)
            await store.begin_turn(turn)
        start = {"messages": [message.model_dump(mode="json") for message in messages]}
        step = JournalStep(_START, "start", start)
        try:
            await store.record_step(turn.turn_id, step)
        except KeyError:
            return None
        return cls(store, turn, [step])

    @classmethod
    async def resume(cls, store: TurnJournal, turn: OpenTurn) -> Journal:
        """The journal of a turn recorded by an earlier process."""
        return cls(store, turn, await store.steps(turn.turn_id))

    @property
    def started(self) -> bool:
        """True once the turn recorded its conversation (a model call may have followed)."""
        return _START in self._replay or "messages" in self.turn.state

    def messages(self) -> list[AIMessage]:
        """The conversation the turn started from."""
        start = self._replay.get(_START)
        # A turn recorded by an earlier version keeps its conversation in its state.
        raw: list[Any] = (start.payload if start else self.turn.state).get("messages", [])
        return [AIMessage.model_validate(message) for message in raw]

    async def response(
        self, round_no: int, generate: Callable[[], Awaitable[AIResponse]]
    ) -> AIResponse:
        """Round ``round_no``'s model response: replayed if recorded, else generated.

        Raises:
            ProviderResponseError: a call's arguments hold what JSON cannot.
        """
        return await self._step(round_no * _SPAN, "response", AIResponse, generate, _recorded)

    async def result(
        self,
        round_no: int,
        position: int,
        run: Callable[[], Awaitable[AIToolResultPart]],
    ) -> AIToolResultPart:
        """A call's result: replayed if recorded, else run (and recorded)."""
        return await self._step(round_no * _SPAN + 1 + position, "result", AIToolResultPart, run)

    async def _step(
        self,
        index: int,
        kind: str,
        model: type[_Step],
        make: Callable[[], Awaitable[_Step]],
        dump: Callable[[_Step], dict[str, Any]] | None = None,
    ) -> _Step:
        """Step ``index``: read back when recorded, else made now and recorded (as ``dump``
        writes it, by default its JSON form)."""
        step = self._replay.get(index)
        if step is not None:
            return model.model_validate(step.payload)
        made = await make()
        payload = made.model_dump(mode="json") if dump is None else dump(made)
        await self.store.record_step(self.turn.turn_id, JournalStep(index, kind, payload))
        return made

    async def finish(self, reply: RoomEvent | None) -> bool:
        """The turn finished: store ``reply`` in the room and end the turn, in one write.

        ``False`` when the turn was no longer open (finished by another run): nothing was
        stored, so the reply must not be delivered.
        """
        return await self.store.finish_turn(self.turn.turn_id, reply)


def _recorded(response: AIResponse) -> dict[str, Any]:
    """``response`` as its step records it: JSON, without the metadata entries JSON cannot hold.

    Raises:
        ProviderResponseError: a call's arguments hold what JSON cannot.
    """
    try:
        return response.model_dump(mode="json")
    except ValueError:
        pass  # looked at entry by entry below
    calls = []
    for call in response.tool_calls:
        try:
            to_jsonable_python(call.arguments)
        except ValueError as error:
            raise ProviderResponseError(
                f"The arguments of tool call {shown(call.id)} cannot be recorded as JSON "
                f"({error}): a provider gives a call's arguments as the model wrote them, "
                "parsed from JSON"
            ) from None
        metadata = _storable(call.metadata, f"the metadata of tool call {shown(call.id)}")
        calls.append(call.model_copy(update={"metadata": metadata}))
    kept = response.model_copy(
        update={
            "metadata": _storable(response.metadata, "the response's metadata"),
            "tool_calls": calls,
        }
    )
    return kept.model_dump(mode="json")


def _storable(metadata: dict[str, Any], what: str) -> dict[str, Any]:
    """The entries of ``metadata`` JSON can hold; each other one is logged, naming it."""
    kept: dict[str, Any] = {}
    for key, value in metadata.items():
        try:
            to_jsonable_python(value)
        except ValueError as error:
            logger.warning(
                "Entry %s of %s is left out of the turn's journal: JSON cannot hold it (%s); "
                "a re-run after a restart reads the response without it. Keep provider "
                "metadata to text, numbers, flags, None, lists and dicts",
                shown(key),
                what,
                error,
            )
        else:
            kept[key] = value
    return kept
