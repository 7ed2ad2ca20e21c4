"""Failed turns in the room's history: how a journalled turn that failed ends.

A door (AG-UI, A2A) that runs a caller's message as the room's turns tells its caller when
a turn fails, and a process following the room from elsewhere must tell it the same, as
must a run that replays the answer the turn went on with (its caller lost the first
telling). So a journalled turn that fails ends as a finished turn does (``finish_turn``:
the turn ended and an event appended to its room, in one write), with an event that records
the failure instead of a reply (on a room store that keeps no journal, the same event is
appended to the room): its metadata's ``"turn_failed"`` holds what the door calls the message
(``"AG-UI message m0"``), the name of the error, and who sent the message; its text is what
the caller is told, so a reader that does not know the marker shows a sentence, never an
empty message. It holds no traceback, nor the error's text. Every reader of the history
that is not a follower (the model's conversation, a client's transcript) leaves such an
event out, but for the desk's chat, which shows the failure of one of its own messages as it
tells it live; an event without the marker (every event recorded before it existed) reads
as it always did. A turn fails so wherever it runs: under ``process_inbound`` (whoever
called it; the message's turns that never ran end with it, and the caller gets the error),
or re-driven by ``resume_pending``.

A door also records its name for a message with the message (its metadata's
``"message_name"``), and the turns the message starts keep it (their state's same key): a
turn re-driven after a restart that fails is named as the door that started it names it,
so that door's followers elsewhere tell the failure as their own. :func:`message_name` is
what a failure calls a message, so that a reader of the history finds the failed message.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass

from roomkit.core.store import OpenTurn, RoomStore, TurnJournal, turn_journal
from roomkit.models.room import RoomEvent, TextContent

__all__ = [
    "MESSAGE_NAME",
    "TURN_FAILED",
    "FailedTurn",
    "ends_failed_turn",
    "fail_turn",
    "fail_turns",
    "failed_turn",
    "failure_event",
    "message_name",
    "record_failure",
    "resend_text",
]

logger = logging.getLogger("roomkit.framework")

TURN_FAILED = "turn_failed"
"""The metadata key of the event that ends a failed turn."""
MESSAGE_NAME = "message_name"
"""The metadata key of a message a door runs, holding what the door calls it (``"AG-UI
message m0"``); the turns the message starts keep it in their state under the same key."""


@dataclass(frozen=True)
class FailedTurn:
    """What the event ending a failed turn records."""

    what: str
    """What the door calls the failed message (``"AG-UI message m0"``)."""
    error: str
    """The name of the error the turn failed with (never its text)."""
    sender: str
    """Who sent the failed message (``""`` when no one did)."""
    message: str
    """What the caller is told: the event's text."""

    @classmethod
    def told(cls, what: str, error: str, sender: str) -> FailedTurn:
        """The failure of the message ``what`` with the error named ``error``, telling the
        caller to send the message again (:func:`resend_text`)."""
        return cls(what, error, sender, resend_text(what, error))


def resend_text(what: str, error: str) -> str:
    """What the caller is told when the turn of its recorded message ``what`` failed with
    the error named ``error``: to send the message again."""
    return (
        f"{what} was recorded but not handled: its turn failed ({error}); "
        "send it again as a new message"
    )


def message_name(event: RoomEvent) -> str:
    """What the failure of a turn the message ``event`` started calls it (:func:`fail_turn`):
    the door's name for it, else its place in the room."""
    name = event.metadata.get(MESSAGE_NAME)
    return name if isinstance(name, str) and name else _placed(event.id, event.room_id)


def _placed(message_id: int, room_id: str) -> str:
    """What a failure calls the message ``message_id`` that no door named."""
    return f"message {message_id} of room {room_id}"


def failure_event(room_id: str, channel_id: str, failure: FailedTurn) -> RoomEvent:
    """The event of the channel ``channel_id`` that records ``failure`` in the room's history
    (the event that ends the failed turn)."""
    marker = {"what": failure.what, "error": failure.error, "sender": failure.sender}
    return RoomEvent(
        room_id,
        channel_id,
        channel_id,
        TextContent(failure.message),
        metadata={TURN_FAILED: marker},
    )


def ends_failed_turn(event: RoomEvent) -> bool:
    """Whether ``event`` ends a failed turn (then it is no message of the conversation)."""
    return failed_turn(event) is not None


def failed_turn(event: RoomEvent) -> FailedTurn | None:
    """The failure ``event`` records; ``None`` when it records none (any other event).

    Only a channel's own event with a whole marker records one: a person's message whose
    metadata happens to hold the key is a message of the conversation.
    """
    if event.sender_id != event.channel_id:
        return None
    marker = event.metadata.get(TURN_FAILED)
    if not isinstance(marker, dict):
        return None
    what, error, sender = marker.get("what"), marker.get("error"), marker.get("sender")
    if not (isinstance(what, str) and isinstance(error, str) and isinstance(sender, str)):
        return None
    return FailedTurn(what, error, sender, event.content.body)


async def record_failure(
    store: RoomStore, message: RoomEvent, error: str, *, channel_id: str
) -> None:
    """Record that the turns of ``message`` failed with the error named ``error`` on a room
    store that keeps no journal: the event of ``channel_id`` (the agent that ran the turns)
    recording the failure is appended to the room, so that a caller sending the same answer
    again reads the failure there, as on a durable store. A turn journal ended the turns
    recording it as they failed (:func:`fail_turns`): nothing to do there.

    Raises:
        StoreUnavailableError: the store cannot be reached (nothing is recorded).
    """
    if turn_journal(store) is not None:
        return
    failure = FailedTurn.told(message_name(message), error, message.sender_id)
    await store.add_event(failure_event(message.room_id, channel_id, failure))


async def fail_turn(journal: TurnJournal, turn: OpenTurn, error: BaseException) -> None:
    """End ``turn`` (run by ``process_inbound``, or re-driven after a restart) as failed
    with ``error``: its channel's event recording the failure is appended in the write that
    ends it, so no later ``resume_pending()`` runs it again and a follower in another
    process tells the failure. The failure names the message as the door that ran it does,
    by the name the turn keeps (:data:`MESSAGE_NAME`); a turn without one (recorded before
    doors named their messages, or started by no door) names the message by its place in
    the room. A turn no longer open is left alone.

    Raises:
        StoreUnavailableError: the store cannot be reached (the turn stays open).
    """
    name = turn.state.get(MESSAGE_NAME)
    message_id = turn.state.get("message_id")
    if isinstance(name, str) and name:
        what = name
    elif isinstance(message_id, int):
        what = _placed(message_id, turn.room_id)
    else:
        what = f"turn {turn.turn_id} of room {turn.room_id}"
    failure = FailedTurn.told(what, type(error).__name__, turn.actor_id or "")
    await _end_failed(journal, turn, failure)


async def fail_turns(journal: TurnJournal, turns: Iterable[OpenTurn], error: BaseException) -> None:
    """End each of ``turns`` still open as failed with ``error`` (:func:`fail_turn`); one
    the store cannot end keeps open (the next start re-drives it), which is logged, and the
    others are ended all the same."""
    for turn in turns:
        try:
            await fail_turn(journal, turn, error)
        except Exception:
            logger.exception(
                "The failed turn %s in room %s stays in the room store's journal",
                turn.turn_id,
                turn.room_id,
            )


async def _end_failed(journal: TurnJournal, turn: OpenTurn, failure: FailedTurn) -> bool:
    """End ``turn`` with its channel's event recording ``failure``, in one write; ``False``
    when the turn was no longer open (nothing written)."""
    ending = failure_event(turn.room_id, turn.channel_id, failure)
    return await journal.finish_turn(turn.turn_id, ending)
