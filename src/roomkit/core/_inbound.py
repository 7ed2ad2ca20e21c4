"""What a new room and an inbound message must be before the kit takes them.

A room id and a message are checked where they enter (``create_room``, ``process_inbound``),
on every room store alike: a ``None`` sender or body, or an id that is no text, would
otherwise be kept by the memory store and poison every later turn in the room (the model is
handed a message with no text), or fail inside a durable store with the store's own error.
Text UTF-8 cannot encode (a lone surrogate, which JSON's ``"\\ud800"`` escape makes) is
refused too, with :class:`~roomkit.core.exceptions.InvalidTextError`, as everywhere else
in the kit. A message given no room goes to the one room its channel is attached to.
"""

from __future__ import annotations

from typing import Any

from roomkit.core.exceptions import InvalidTextError
from roomkit.core.store import RoomStore
from roomkit.models.room import InboundMessage, TextContent
from roomkit.models.shown import shown

__all__ = ["channel_room", "check_inbound", "check_new_room"]


def check_new_room(room_id: object, metadata: object) -> None:
    """Raise unless ``room_id`` and ``metadata`` can make a room.

    Raises:
        TypeError: ``room_id`` is neither a ``str`` nor ``None``, or ``metadata`` is
            neither a dict nor ``None``.
        InvalidTextError: ``room_id`` holds a lone surrogate.
    """
    if room_id is not None:
        if not isinstance(room_id, str):
            raise TypeError(
                "room_id must be a str, or None for a fresh id, got " + type(room_id).__name__
            )
        _check_encodes("room_id", room_id)
    if metadata is not None and not isinstance(metadata, dict):
        raise TypeError(f"metadata must be a dict or None, got {type(metadata).__name__}")


def check_inbound(message: InboundMessage, room_id: object) -> None:
    """Raise unless ``message`` (an :class:`InboundMessage`) holds what a room records.

    Raises:
        TypeError: ``channel_id``, ``sender_id`` or the body is not a ``str``, ``content`` is
            not a :class:`TextContent`, ``metadata`` not a dict, or ``room_id`` neither a
            ``str`` nor ``None``; the message names the field.
        InvalidTextError: one of those texts holds a lone surrogate.
    """
    if room_id is not None and not isinstance(room_id, str):
        raise TypeError(
            "room_id must be a str, or None for the channel's room, got " + type(room_id).__name__
        )
    _check_text("channel_id", message.channel_id, "the id of a registered channel")
    _check_text("sender_id", message.sender_id, '"" for an authorless message')
    content: Any = message.content
    if not isinstance(content, TextContent):
        raise TypeError(
            "content must be a TextContent, as in InboundMessage(channel_id, sender_id, "
            f'TextContent("...")), got {type(content).__name__}'
        )
    _check_text("content.body", content.body, '"" for no text')
    if content.language is not None:
        _check_text("content.language", content.language, "a language tag, or None")
    if not isinstance(message.metadata, dict):
        raise TypeError(f"metadata must be a dict, got {type(message.metadata).__name__}")


async def channel_room(store: RoomStore, channel_id: str) -> str:
    """The one room ``channel_id`` is attached to, for a message given no ``room_id``.

    Raises:
        KeyError: the channel is attached to no room.
        ValueError: the channel is attached to several rooms.
    """
    rooms = await store.rooms_for_channel(channel_id)
    if len(rooms) == 1:
        return rooms[0]
    if not rooms:
        raise KeyError(
            f"Channel {shown(channel_id)} is attached to no room: "
            "call kit.attach_channel(room_id, channel_id) first"
        )
    raise ValueError(
        f"Channel {shown(channel_id)} is attached to {len(rooms)} rooms: "
        "pass room_id= to process_inbound"
    )


def _check_text(name: str, value: object, hint: str) -> None:
    if type(value) is str and value.isascii():
        return
    if not isinstance(value, str):
        raise TypeError(f"{name} must be a str ({hint}), got {type(value).__name__}")
    _check_encodes(name, value)


def _check_encodes(name: str, value: str) -> None:
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as error:
        raise InvalidTextError(
            f"{name} must be valid Unicode text, but holds a lone surrogate "
            f"(U+{ord(value[error.start]):04X}) at character {error.start}, which UTF-8 "
            "cannot encode: send it as UTF-8 text"
        ) from None
