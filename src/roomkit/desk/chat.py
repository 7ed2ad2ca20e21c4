"""The desk's chat: people talk to the agent of a room from the page.

``chat_router(kit, hub, channel_id=...)`` adds two routes under ``/api``: post a message to a
room (the kit runs the turn in the background: a turn may wait minutes for a person), and
read the room's recent history. A message from the person an open question in the room waits
on answers it when it can (the kit's routing: free text, or an option label of a single
choice); when it could answer several, the post is refused with 409 and the candidate
questions, and the page asks which one (the message is sent again with ``answers``). Each
message of the room reaches the page as a
``room_message`` frame through the desk's hub: the person's own as soon as it is accepted,
the agent's replies as the kit delivers them to the chat's :class:`ChatChannel` (a reply of
a turn re-driven after a restart included).

A turn that fails (the model raising) ends there: the room is told in a ``room_message``
whose ``failed`` names the message, saying to send it again, and the turn is not kept for a
restart's ``resume_pending()`` to run again (as the AG-UI and A2A doors do). The chat names
each message for the failure the room's history records (``"chat message <id>"``), and the
history route shows that failure as the same ``room_message``: a page that reloads, or a
desk in another process on the same room store, reads that the message failed, whichever
process ran its turn (a turn re-driven after a restart included). On a room store that
keeps no turn journal, the chat records the failure itself. The desk follows no room's new
events from other processes: their pages read such a failure, as a reply made there, when
they read the history.
"""

# No `from __future__ import annotations`: FastAPI reads the endpoints' annotations at
# run time, and they name the gate dependency local to chat_router.

import asyncio
import logging
import secrets
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Annotated, Any

from fastapi import APIRouter, Depends, HTTPException
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict, Field, field_validator

from roomkit._doors import door_channel
from roomkit.channels.base import TransportChannel
from roomkit.core.exceptions import (
    AmbiguousAnswerError,
    InvalidAnswerError,
    RequestSettledError,
    UnknownRequestError,
)
from roomkit.core.failed_turns import MESSAGE_NAME, failed_turn, message_name, record_failure
from roomkit.core.framework import RoomKit
from roomkit.desk.answers import settled_detail
from roomkit.desk.auth import Principal
from roomkit.desk.hub import DeskHub
from roomkit.desk.limits import DeskLimits
from roomkit.desk.route_class import desk_route_class
from roomkit.desk.shapes import RequestView, view_of
from roomkit.models.enums import ChannelType
from roomkit.models.room import InboundMessage, RoomEvent, TextContent

__all__ = [
    "AmbiguousMessage",
    "ChatChannel",
    "ChatMessage",
    "ChatMessageList",
    "MessageAccepted",
    "NewMessage",
    "chat_router",
    "failed_view",
    "message_view",
]

logger = logging.getLogger("roomkit.desk.chat")

MAX_MESSAGE_CHARS = 4000
HISTORY_LIMIT = 100
_NOT_FOUND = "No such room"
_SIGNED_IN: dict[int | str, dict[str, Any]] = {
    401: {"description": "Missing, invalid or expired token"},
    429: {"description": "Rate limited (see Retry-After)"},
}
_NOT_STORED = "The message could not be stored: try again"


class NewMessage(BaseModel):
    """A message the person sends to a room."""

    model_config = ConfigDict(extra="forbid")

    text: str = Field(min_length=1, max_length=MAX_MESSAGE_CHARS)
    """What they say."""
    answers: str | None = Field(default=None, min_length=1, max_length=256)
    """The id of the open question it answers, when the person chose one."""

    @field_validator("text")
    @classmethod
    def _not_blank(cls, text: str) -> str:
        if not text.strip():
            raise ValueError("the message is blank: write what you want to say")
        return text


class MessageAccepted(BaseModel):
    """The id of an accepted message (its ``room_message`` frame carries the same id)."""

    id: str
    """The message's id."""
    answers: str | None = None
    """The id of the question the message answered (it then starts no turn), or ``None``."""


class AmbiguousMessage(BaseModel):
    """A 409: the message could answer several open questions; send it again naming one."""

    detail: str
    """What to do."""
    candidates: list[RequestView]
    """The questions it could answer, oldest first."""


class ChatMessage(BaseModel):
    """One message of a room, as the page shows it."""

    id: str
    """The message's id, unique in its room."""
    sender_id: str
    """Who said it: a participant, or the agent's channel id."""
    channel_id: str
    """The channel it came from."""
    body: str
    """The text."""
    created_at: datetime
    """When it was recorded (UTC)."""
    failed: str | None = None
    """The id of the message whose turn failed, when this one tells so, else ``None``."""


class ChatMessageList(BaseModel):
    """A room's recent history, oldest first."""

    messages: list[ChatMessage]
    """The messages."""


def message_view(event: RoomEvent) -> dict[str, Any]:
    """A room event as a ``room_message`` frame's ``message``."""
    message_id = event.metadata.get("message_id")
    return {
        "id": message_id if isinstance(message_id, str) else str(event.id),
        "sender_id": event.sender_id,
        "channel_id": event.channel_id,
        "body": event.content.body,
        "created_at": event.created_at.isoformat(),
    }


def failed_view(event: RoomEvent, error: str, *, at: datetime | None = None) -> dict[str, Any]:
    """The ``room_message`` that tells the room the turn of the message ``event`` failed
    with ``error`` (an exception's name): its ``failed`` is the message's id, and its own
    id the same wherever it is told (live, or read back from the history). ``at`` is when
    the failure was recorded (now when ``None``)."""
    message_id = message_view(event)["id"]
    return {
        "id": f"{message_id}-failed",
        "sender_id": event.channel_id,
        "channel_id": event.channel_id,
        "body": f"The message of {event.sender_id} was recorded but not answered: its turn "
        f"failed ({error}); send it again as a new message",
        "created_at": (at if at is not None else datetime.now(UTC)).isoformat(),
        "failed": message_id,
    }


def _history_views(events: Sequence[RoomEvent], channel_id: str) -> list[dict[str, Any]]:
    """A room's ``events`` (oldest first) as the chat on ``channel_id`` shows them.

    An event that ended a failed turn of one of the chat's messages shows as the
    :func:`failed_view` the chat publishes live, once per message however many of its turns
    failed. One that ended a failed turn of another door's message (an AG-UI or A2A
    caller's) is left out: that door tells its caller, who sends the message again there.
    """
    sent: dict[str, RoomEvent] = {}
    told: set[str] = set()
    views: list[dict[str, Any]] = []
    for event in events:
        failure = failed_turn(event)
        if failure is None:
            views.append(message_view(event))
            if event.channel_id == channel_id:
                sent[message_name(event)] = event
            continue
        message = sent.get(failure.what)
        if message is not None and failure.what not in told:
            told.add(failure.what)
            views.append(failed_view(message, failure.error, at=event.created_at))
    return views


class ChatChannel(TransportChannel):
    """The page's chat as a transport: what the kit delivers to it goes to the hub.

    The kit delivers every event of a room to its transports except the one it came from,
    so this channel sees the agent's replies; the chat router publishes the person's own
    messages itself.
    """

    channel_type = ChannelType.WEBSOCKET

    def __init__(self, channel_id: str, hub: DeskHub) -> None:
        super().__init__(channel_id)
        self.hub = hub

    async def deliver(self, event: RoomEvent) -> None:
        """Publish ``event`` to the people of its room."""
        await self.hub.publish_room_message(event.room_id, message_view(event))


_REFUSED = (AmbiguousAnswerError, RequestSettledError, UnknownRequestError, InvalidAnswerError)


def _refusal(refused: BaseException) -> JSONResponse:
    """The answer to a message the kit refused to record (see ``post_message``)."""
    if isinstance(refused, AmbiguousAnswerError):
        body = AmbiguousMessage(
            detail="Your message could answer several questions: choose the one it answers",
            candidates=[RequestView.model_validate(view_of(r)) for r in refused.candidates],
        )
        return JSONResponse(body.model_dump(mode="json"), status_code=409)
    if isinstance(refused, RequestSettledError):
        return JSONResponse({"detail": settled_detail(refused.request)}, status_code=409)
    if isinstance(refused, UnknownRequestError):
        detail = "answers: no open question of yours in this room has this id"
        return JSONResponse({"detail": detail}, status_code=422)
    return JSONResponse({"detail": f"answers: {refused}"}, status_code=422)


def chat_router(
    kit: RoomKit,
    hub: DeskHub,
    *,
    channel_id: str = "chat",
    limits: DeskLimits | None = None,
) -> APIRouter:
    """The chat routes, for ``app.include_router``: post to a room and read its history.

    Registers a :class:`ChatChannel` with id ``channel_id`` in the kit; the router attaches it
    to a room on the room's first message, so the agent's replies reach the page.

    Args:
        kit: the kit whose rooms the chat talks in.
        hub: the desk's hub (``app.state.desk_hub``): its gate authenticates the caller and
            its ``publish_room_message`` sends each message to the room's people.
        channel_id: the id the person's messages are recorded under.
        limits: the body cap and JSON depth (the desk's defaults when ``None``); the rate
            limit is the hub gate's.
    """
    channel = door_channel(
        kit, channel_id, ChatChannel, door="the chat", make=lambda made: ChatChannel(made, hub)
    )
    gate, access = hub.gate, hub.access
    route_class = desk_route_class(limits if limits is not None else DeskLimits())
    router = APIRouter(prefix="/api", tags=["chat"], route_class=route_class)
    turns: set[asyncio.Task[None]] = set()
    Caller = Annotated[Principal, Depends(gate)]

    async def check_room(principal: Principal, room_id: str) -> None:
        if await kit.store.get_room(room_id) is None or not await access.can_see_room(
            principal, room_id
        ):
            raise HTTPException(status_code=404, detail=_NOT_FOUND)

    async def run_turn(
        message: InboundMessage,
        room_id: str,
        answers: str | None,
        recorded: asyncio.Future[RoomEvent],
    ) -> None:
        def stored(event: RoomEvent) -> None:
            if not recorded.done():
                recorded.set_result(event)

        try:
            await kit.process_inbound(message, room_id=room_id, on_recorded=stored, answers=answers)
        except _REFUSED as refused:
            # Nothing was recorded: the person is told why, and may send it again.
            if not recorded.done():
                recorded.set_exception(refused)
        except Exception as error:
            if not recorded.done():
                logger.exception("A chat message to room %s could not be stored", room_id)
                return
            logger.exception("The turn on a chat message in room %s failed", room_id)
            await fail_turn(recorded.result(), type(error).__name__)

    async def fail_turn(event: RoomEvent, error: str) -> None:
        """Tell the room the turn of the message ``event`` failed (send it again). A turn
        journal ended the message's turns recording the failure; a room store without one
        gets the failure from here, so that the history tells it too."""
        try:
            await record_failure(kit.store, event, error, channel_id=channel.channel_id)
        except Exception:
            logger.exception(
                "The failed turn of a chat message in room %s is missing from its history",
                event.room_id,
            )
        await hub.publish_room_message(event.room_id, failed_view(event, error))

    @router.post(
        "/rooms/{room_id}/messages",
        status_code=202,
        response_model=MessageAccepted,
        responses={
            400: {"description": "The body is not JSON the desk takes (the detail says why)"},
            **_SIGNED_IN,
            404: {"description": "No such room, or not yours"},
            409: {
                "model": AmbiguousMessage,
                "description": "It could answer several open questions (candidates listed), "
                "or the question named in `answers` is no longer open; nothing was recorded",
            },
            413: {"description": "The body is over the size cap"},
            415: {"description": "The body was not sent as JSON (Content-Type: application/json)"},
            422: {"description": "`answers` names no open question of yours that takes text"},
            503: {"description": "The message could not be stored (nothing was sent)"},
        },
    )
    async def post_message(
        room_id: str, body: NewMessage, principal: Caller
    ) -> MessageAccepted | JSONResponse:
        """Say something in the room; the agent answers in the background.

        The 202 comes once the message is in the room's history. A message that answers
        one of your open questions in the room settles it (``answers`` in the 202).
        """
        await check_room(principal, room_id)
        bound = {binding.channel_id for binding in await kit.store.list_bindings(room_id)}
        if channel.channel_id not in bound:
            await kit.attach_channel(room_id, channel.channel_id)
        message_id = secrets.token_hex(8)
        inbound = InboundMessage(
            channel.channel_id,
            principal.actor_id,
            TextContent(body.text),
            # The failure of its turn, if any, names it so (and the history finds it).
            metadata={"message_id": message_id, MESSAGE_NAME: f"chat message {message_id}"},
        )
        recorded: asyncio.Future[RoomEvent] = asyncio.get_running_loop().create_future()
        task = asyncio.get_running_loop().create_task(
            run_turn(inbound, room_id, body.answers, recorded)
        )
        turns.add(task)
        task.add_done_callback(turns.discard)
        # 202 means the message is in the room's history: wait for the store to have it.
        waits: set[asyncio.Future[Any]] = {recorded, task}
        await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
        if not recorded.done():
            raise HTTPException(status_code=503, detail=_NOT_STORED)
        if (refused := recorded.exception()) is not None:
            return _refusal(refused)
        event = recorded.result()
        await hub.publish_room_message(room_id, message_view(event))
        answered = event.metadata.get("answers")
        return MessageAccepted(
            id=message_id, answers=answered if isinstance(answered, str) else None
        )

    @router.get(
        "/rooms/{room_id}/messages",
        response_model=ChatMessageList,
        responses={**_SIGNED_IN, 404: {"description": "No such room, or not yours"}},
    )
    async def list_messages(room_id: str, principal: Caller) -> ChatMessageList:
        """The room's recent messages, oldest first (participants and admins only); a chat
        message whose turn failed is followed by the message that tells so (``failed``)."""
        await check_room(principal, room_id)
        events = await kit.store.recent_events(room_id, HISTORY_LIMIT)
        views = _history_views(events, channel.channel_id)
        return ChatMessageList(messages=[ChatMessage.model_validate(view) for view in views])

    return router
