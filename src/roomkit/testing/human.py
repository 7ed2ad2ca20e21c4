"""A scripted person who answers human-input requests, for tests and demos."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from roomkit.models.hooks import HookExecution, HookTrigger, RoomContext
from roomkit.models.pending_input import PendingInputEvent
from roomkit.tools.human_input import HumanInputHandler, HumanInputToolHandler

if TYPE_CHECKING:
    from roomkit.core.framework import RoomKit

__all__ = ["Reject", "ScriptedHuman", "Silence"]


@dataclass(frozen=True, slots=True)
class Reject:
    """Reject the question, with a reason the model reads."""

    reason: str = "user declined"


@dataclass(frozen=True, slots=True)
class Silence:
    """Leave the question unanswered (it times out, or someone else answers)."""


Reply = str | dict[str, Any] | Reject | Silence
"""An answer (text, or a dict sent as JSON), a rejection, or silence."""


class ScriptedHuman:
    """Answers each request as its script says, the moment it is announced.

    The script is either a list of replies, used in order (silence once it runs out), or a
    function of the request's event. Install it on a kit to answer through the
    ON_USER_INPUT_REQUIRED hooks, as a real answer desk would::

        person = ScriptedHuman(human, ['{"answer": "blue"}', Reject("not now")])
        person.install(kit)

    Args:
        handler: the handler to answer on (a HumanInputToolHandler's inner handler is used).
        script: the replies, or ``fn(event) -> reply``.
    """

    def __init__(
        self,
        handler: HumanInputHandler | HumanInputToolHandler,
        script: Iterable[Reply] | Callable[[PendingInputEvent], Reply],
    ) -> None:
        self.handler = handler.handler if isinstance(handler, HumanInputToolHandler) else handler
        self._next: Callable[[PendingInputEvent], Reply]
        if callable(script):
            self._next = script
        else:
            replies = iter(list(script))
            self._next = lambda _event: next(replies, Silence())
        self.asked: list[PendingInputEvent] = []
        """Every request announced to this person, in order."""

    def install(self, kit: RoomKit, *, priority: int = 0) -> None:
        """Answer the kit's requests from an ON_USER_INPUT_REQUIRED hook."""

        async def scripted_human(event: PendingInputEvent, ctx: RoomContext) -> None:
            self.answer(event)

        kit.hooks.register(
            HookTrigger.ON_USER_INPUT_REQUIRED,
            scripted_human,
            execution=HookExecution.ASYNC,
            priority=priority,
        )

    async def __call__(self, event: PendingInputEvent) -> bool:
        """Use as a handler's notification callback: ``handler.on_input_required = person``."""
        self.answer(event)
        return True

    def answer(self, event: PendingInputEvent) -> bool:
        """Give the scripted reply to ``event``'s request; ``True`` if it settled it."""
        self.asked.append(event)
        reply = self._next(event)
        if isinstance(reply, Silence):
            return False
        if isinstance(reply, Reject):
            return self.handler.reject(event.pending_id, reply.reason)
        text = reply if isinstance(reply, str) else json.dumps(reply)
        return self.handler.resolve(event.pending_id, text)
