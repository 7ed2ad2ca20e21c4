"""Which open question a message answers, if any: the routing step of ``process_inbound``.

A message from a person may be the answer to a question an agent is waiting on them for.
The kit asks its routed human-input handlers for the sender's open requests in the room and
keeps those the text can answer (``text_answer``: free text, or exactly one option label
of a single-choice question). One such request: the message answers it. Several: the kit
cannot tell, and refuses the message until it names one (``answers=pending_id``). None: the
message is an ordinary message and starts turns.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from roomkit.core.exceptions import (
    AmbiguousAnswerError,
    InvalidAnswerError,
    RequestSettledError,
    UnknownRequestError,
)
from roomkit.core.ports import HumanInputRoute
from roomkit.models.kinds import text_answer
from roomkit.models.pending_input import PendingInput, PendingInputStatus
from roomkit.models.room import InboundMessage
from roomkit.models.shown import shown

__all__ = ["Answer", "find_answer", "settle_answer"]


@dataclass(frozen=True, slots=True)
class Answer:
    """The request a message answers, and the answer it gives."""

    handler: HumanInputRoute
    """The handler holding the request."""
    request: PendingInput
    """The request."""
    result: str
    """The answer to settle it with."""
    named: bool
    """The message named the request (``answers=``): if it cannot settle it, it is refused
    instead of starting turns."""


async def find_answer(
    handlers: Sequence[HumanInputRoute],
    room_id: str,
    sender_id: str,
    text: str,
    answers: str | None,
) -> Answer | None:
    """The request ``text`` from ``sender_id`` answers in ``room_id``, or ``None``.

    Raises:
        AmbiguousAnswerError: several open requests could take the text, and ``answers`` is
            ``None``.
        UnknownRequestError: ``answers`` names no request of the sender in this room.
        RequestSettledError: ``answers`` names a request that is no longer open.
        InvalidAnswerError: ``answers`` names a request that does not take this text.
    """
    if answers is not None:
        return await _named(handlers, room_id, sender_id, text, answers)
    found: list[Answer] = []
    for handler in handlers:
        listed = await handler.list_pending(room_id=room_id, actor_id=sender_id)
        for request in await handler.expire_overdue(listed):
            result = text_answer(request, text) if _open(request) else None
            if result is not None:
                found.append(Answer(handler, request, result, named=False))
    if len(found) > 1:
        found.sort(key=lambda answer: answer.request.created_at)
        raise AmbiguousAnswerError(
            f"The message could answer {len(found)} open questions: send it again with "
            "answers= naming the one it answers",
            tuple(answer.request for answer in found),
        )
    return found[0] if found else None


async def settle_answer(
    handlers: Sequence[HumanInputRoute],
    message: InboundMessage,
    room_id: str,
    answers: str | None,
    surface: str | None,
) -> str | None:
    """Settle the open request ``message`` answers; its id, or ``None`` when it answers none.

    Args:
        handlers: the kit's routed human-input handlers.
        message: the inbound message; its sender is the one answering.
        room_id: the room the message was sent in.
        answers: the id of the request the sender says it answers, if any.
        surface: where the answer came from, for the request's history.

    Raises:
        ValueError: ``answers`` is given for a message without a sender.
        AmbiguousAnswerError, UnknownRequestError, RequestSettledError, InvalidAnswerError:
            as :func:`find_answer`; ``RequestSettledError`` also when the named request was
            settled by someone else before this answer.
    """
    if answers is not None and not message.sender_id:
        raise ValueError("answers= needs a sender: an authorless message answers nothing")
    if not message.sender_id or (not handlers and answers is None):
        # Without a handler, a message naming a question names none: find_answer refuses it.
        return None
    sender = message.sender_id
    answer = await find_answer(handlers, room_id, sender, message.content.body, answers)
    if answer is None:
        return None
    pending_id = answer.request.pending_id
    if await answer.handler.aresolve(pending_id, answer.result, by=sender, surface=surface):
        return pending_id
    if answer.named:
        raise RequestSettledError(
            f"Question {pending_id!r} was settled before this answer",
            await answer.handler.get_request(pending_id),
        )
    return None  # settled meanwhile by someone else: an ordinary message


async def _named(
    handlers: Sequence[HumanInputRoute],
    room_id: str,
    sender_id: str,
    text: str,
    pending_id: str,
) -> Answer:
    for handler in handlers:
        request = await handler.get_request(pending_id)
        if request is None or request.room_id != room_id or request.actor_id != sender_id:
            continue
        current = await handler.expire_overdue([request])
        if not current or not _open(current[0]):
            raise RequestSettledError(
                f"Question {pending_id!r} is no longer open: it was answered, refused, "
                "withdrawn or timed out",
                current[0] if current else None,
            )
        result = text_answer(current[0], text)
        if result is None:
            raise InvalidAnswerError(
                f"Question {pending_id!r} is not answered by text: answer it on its card "
                "(pick an option, confirm, or fill the form)"
            )
        return Answer(handler, current[0], result, named=True)
    raise UnknownRequestError(
        f"No question {shown(pending_id)} for {shown(sender_id)} in room {shown(room_id)}: "
        "answers= takes "
        "the id of one of the sender's open questions in the room"
    )


def _open(request: PendingInput) -> bool:
    return request.status is PendingInputStatus.PENDING
