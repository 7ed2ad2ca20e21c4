"""New requests: the scope checked open, the ids' texts and lengths, then the arguments' size
and texts checked, an id, the time of creation.

This is the first step of every ``create``: it runs once per question a tool asks, so it
keeps to plain operations. Ids are 32 random hex digits, cut 64 at a time from one
``os.urandom`` call: the system call, not the randomness, is what an id per call would
cost, and the ids stay as unguessable as if each had its own call.
"""

from __future__ import annotations

import os
import time
from typing import Any

from roomkit.models.enums import ChannelType
from roomkit.models.json_limits import MAX_ID_CHARS
from roomkit.models.pending_input import PendingInput, PendingInputStatus, set_created
from roomkit.tools.human_input._announce import Announcer
from roomkit.tools.human_input._argument_size import PLAIN_ROOM, check_arguments_size
from roomkit.tools.human_input._arguments import check_arguments
from roomkit.tools.human_input._checks import check_id_lengths, check_request_fields

__all__ = ["RequestMaker"]

_IDS_PER_DRAW = 64
_now = time.time
_new = object.__new__
_PENDING = PendingInputStatus.PENDING


class RequestMaker:
    """Makes the handler's new requests, refusing them while their scope is closed."""

    __slots__ = ("_announcer", "_ids")

    def __init__(self, announcer: Announcer) -> None:
        self._announcer = announcer
        self._ids: list[str] = []

    def _draw(self) -> str:
        """One id, after drawing the next batch."""
        # Hex with a space after every 16 bytes, split: the batch is cut in one C call, not
        # a slice per id. Last first: popped from the end, the ids come in the order they
        # were cut.
        ids = os.urandom(16 * _IDS_PER_DRAW).hex(" ", 16).split()
        ids.reverse()
        self._ids = ids
        return ids.pop()

    def make(
        self,
        tool_name: str,
        arguments: dict[str, Any],
        room_id: str,
        tool_call_id: str,
        channel_id: str,
        channel_type: ChannelType,
        actor_id: str | None,
        detached: bool,
    ) -> PendingInput:
        """A new pending request.

        Raises:
            HandlerClosedError: the handler, or ``channel_id``'s scope, is closed.
            TypeError: ``arguments`` is not a dict, or a text field is not a ``str``.
            ValueError: ``channel_type`` names no :class:`ChannelType`, or an id is longer
                than :data:`~roomkit.models.json_limits.MAX_ID_CHARS` characters.
            InvalidTextError: a text holds what UTF-8 cannot encode (a lone surrogate).
            ValueError: ``arguments`` hold NaN or an infinity, or hold themselves.
            ArgumentsTooLargeError: ``arguments`` are longer as JSON than a request keeps,
                nest deeper or hold a longer number; checked before what else is wrong
                with them, which arguments too large are not read for.
        """
        announcer = self._announcer
        if announcer.closed or channel_id in announcer.closed_channels:
            announcer.check_open(channel_id)
        if type(arguments) is not dict and not isinstance(arguments, dict):
            raise TypeError(f"arguments must be a dict, got {type(arguments).__name__}")
        if type(channel_type) is not ChannelType:
            # The hooks' channel_types filters compare members: a plain "ai" would pass
            # them by equality while a misspelt one would silently match no hook.
            channel_type = ChannelType(channel_type)
        # Plain ASCII fields and a flat object of ASCII texts, the common case, pass here
        # without a call; anything else is looked at in full.
        try:
            fields = tool_name + room_id + tool_call_id + channel_id + (actor_id or "")
            plain = type(tool_name) is str and fields.isascii()
        except TypeError:  # a field that is not a str
            plain = False
        if plain:
            if len(fields) > MAX_ID_CHARS:  # none can be longer when all of them are not
                check_id_lengths(tool_name, room_id, tool_call_id, channel_id, actor_id)
            length = 0
            for key, text in arguments.items():
                if not (
                    type(text) is str and text.isascii() and type(key) is str and key.isascii()
                ):
                    plain = False
                    break
                length += len(key) + len(text) + 1
            else:
                if length > PLAIN_ROOM:
                    check_arguments_size(arguments)
        if not plain:
            check_request_fields(tool_name, room_id, tool_call_id, channel_id, actor_id)
            check_arguments(arguments)
        # PendingInput(...) without the call into the dataclass's __init__, which costs
        # more than setting the fields; every field not given here is at its default.
        ids = self._ids
        request: PendingInput = _new(PendingInput)
        request.pending_id = ids.pop() if ids else self._draw()
        request.tool_name = tool_name
        request.arguments = arguments
        request.room_id = room_id
        request.tool_call_id = tool_call_id
        request.channel_id = channel_id
        request.status = _PENDING
        request.result = None
        request.reject_reason = None
        request.detached = detached
        set_created(request, _now())
        request.actor_id = actor_id
        request.channel_type = channel_type
        request.withdrawn = False
        request.deadline = None
        request.key = None
        request.answer_schema = None
        request.settled_by = None
        request.kind = "question"
        request.arguments_digest = None
        request.approvers = ()
        request.quorum = None
        request.veto = True
        request.voters = ()
        request.votes = ()
        request._waiters = None
        request._deadline_entry = None
        request._history = None
        return request
