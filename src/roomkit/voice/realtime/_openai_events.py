"""The OpenAI Realtime API's events, as :mod:`roomkit.voice.realtime.openai` writes and reads them.

Client events are built here as JSON objects in the API's documented shapes; when type
checking they are checked against the ``openai`` SDK's own definitions, which are not needed
at run time. Server events are read as the JSON objects they are: only the fields the provider
uses are looked at, so a field the API adds later changes nothing. The current event names and
the older ones (``response.audio_transcript.done``, ``response.audio.delta``...) are both
understood. A failure the API reports becomes a typed
:class:`~roomkit.core.exceptions.ProviderError`.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from roomkit.core.exceptions import ProviderError, ProviderResponseError, ProviderTimeoutError
from roomkit.providers.ai.errors import error_for_status

if TYPE_CHECKING:
    from openai.types.realtime import (
        ConversationItemCreateEventParam,
        InputAudioBufferAppendEventParam,
        RealtimeSessionCreateRequestParam,
        RealtimeToolsConfigParam,
        ResponseCreateEventParam,
        SessionUpdateEventParam,
    )

__all__ = [
    "AUDIO_DELTA",
    "ERROR",
    "FUNCTION_CALL_DONE",
    "PROVIDER",
    "RESPONSE_CREATED",
    "RESPONSE_DONE",
    "SESSION_UPDATED",
    "audio_append",
    "audio_of",
    "closed_error",
    "context_message",
    "decode",
    "error_fields",
    "error_for",
    "function_call_output",
    "handshake_error",
    "parse_arguments",
    "response_create",
    "session_update",
    "transcript_of",
]

PROVIDER = "openai"

SESSION_UPDATED = "session.updated"
ERROR = "error"
RESPONSE_CREATED = "response.created"
RESPONSE_DONE = "response.done"
FUNCTION_CALL_DONE = "response.function_call_arguments.done"
AUDIO_DELTA = frozenset({"response.output_audio.delta", "response.audio.delta"})

# Which server events carry speech as text: (role, final, the field holding the text).
_TRANSCRIPTS: dict[str, tuple[str, bool, str]] = {
    "response.output_audio_transcript.done": ("assistant", True, "transcript"),
    "response.audio_transcript.done": ("assistant", True, "transcript"),
    "response.output_text.done": ("assistant", True, "text"),
    "response.text.done": ("assistant", True, "text"),
    "response.output_audio_transcript.delta": ("assistant", False, "delta"),
    "response.audio_transcript.delta": ("assistant", False, "delta"),
    "response.output_text.delta": ("assistant", False, "delta"),
    "response.text.delta": ("assistant", False, "delta"),
    "conversation.item.input_audio_transcription.completed": ("user", True, "transcript"),
    "conversation.item.input_audio_transcription.delta": ("user", False, "delta"),
}

# -- what the provider sends ----------------------------------------------------------------


def session_update(
    *,
    instructions: str | None,
    tools: Sequence[Mapping[str, Any]],
    voice: str | None,
    transcription_model: str | None,
) -> SessionUpdateEventParam:
    """The ``session.update`` that configures a new session: instructions, tools, voice."""
    functions: RealtimeToolsConfigParam = [
        {
            "type": "function",
            "name": str(tool["name"]),
            "description": str(tool.get("description") or ""),
            "parameters": tool.get("parameters") or {"type": "object", "properties": {}},
        }
        for tool in tools
    ]
    session: RealtimeSessionCreateRequestParam = {
        "type": "realtime",
        "tools": functions,
        "tool_choice": "auto",
    }
    if instructions is not None:
        session["instructions"] = instructions
    if voice is not None or transcription_model is not None:
        session["audio"] = {}
        if voice is not None:
            session["audio"]["output"] = {"voice": voice}
        if transcription_model is not None:
            session["audio"]["input"] = {"transcription": {"model": transcription_model}}
    return {"type": "session.update", "session": session}


def function_call_output(call_id: str, output: str) -> ConversationItemCreateEventParam:
    """The item that gives the model the result of its call ``call_id``."""
    return {
        "type": "conversation.item.create",
        "item": {"type": "function_call_output", "call_id": call_id, "output": output},
    }


def context_message(text: str) -> ConversationItemCreateEventParam:
    """A system message adding ``text`` to the model's context."""
    return {
        "type": "conversation.item.create",
        "item": {
            "type": "message",
            "role": "system",
            "content": [{"type": "input_text", "text": text}],
        },
    }


def response_create() -> ResponseCreateEventParam:
    """Ask the model to respond to the conversation as it stands."""
    return {"type": "response.create"}


def audio_append(chunk: bytes) -> InputAudioBufferAppendEventParam:
    """Append the caller's audio to the input buffer (in the session's input format)."""
    return {"type": "input_audio_buffer.append", "audio": base64.b64encode(chunk).decode("ascii")}


# -- what the provider reads ----------------------------------------------------------------


def decode(message: str | bytes) -> dict[str, Any] | None:
    """The server event in ``message``; ``None`` when it is not a JSON object (or nests
    deeper than the parser goes)."""
    try:
        event = json.loads(message)
    except (ValueError, UnicodeDecodeError, RecursionError):
        return None
    return event if isinstance(event, dict) else None


def parse_arguments(arguments: object) -> Any:
    """A function call's arguments, parsed from their JSON text.

    No text (or an empty one) is no arguments. Text that is not JSON (nesting deeper than
    the parser goes included) is returned as it came, and JSON that is not an object is
    returned parsed: the channel validates every call, so either is refused there with a
    message the model can act on.
    """
    if arguments is None or arguments == "":
        return {}
    if not isinstance(arguments, str):
        return arguments
    try:
        return json.loads(arguments)
    except (ValueError, RecursionError):
        return arguments


def transcript_of(event: Mapping[str, Any]) -> tuple[str, str, bool] | None:
    """``(text, role, final)`` for an event that carries speech as text, else ``None``."""
    found = _TRANSCRIPTS.get(str(event.get("type")))
    if found is None:
        return None
    role, final, key = found
    text = event.get(key)
    return (text, role, final) if isinstance(text, str) else None


def audio_of(event: Mapping[str, Any]) -> bytes | None:
    """The audio an output-audio delta carries; ``None`` when it cannot be decoded."""
    delta = event.get("delta")
    if not isinstance(delta, str):
        return None
    try:
        return base64.b64decode(delta, validate=True)
    except (binascii.Error, ValueError):
        return None


def error_fields(event: Mapping[str, Any]) -> tuple[str, str, str]:
    """``(code, type, message)`` of an ``error`` event; missing parts are empty."""
    error = event.get("error")
    if not isinstance(error, Mapping):
        return "", "", "The OpenAI Realtime API reported an error without details"
    code, kind, message = (error.get(key) for key in ("code", "type", "message"))
    return (
        code if isinstance(code, str) else "",
        kind if isinstance(kind, str) else "",
        message if isinstance(message, str) and message else "The API reported an error",
    )


def error_for(code: str, kind: str, message: str) -> ProviderError:
    """The typed error for an ``error`` event: its code decides first, then its type.

    ``invalid_api_key`` (sent with the type ``invalid_request_error``) is an auth failure.
    """
    error = error_for_status(None, message, provider=PROVIDER, error_type=code)
    if type(error) is ProviderResponseError and kind:
        error = error_for_status(None, message, provider=PROVIDER, error_type=kind)
    return error


def handshake_error(status: int, body: bytes | bytearray | None) -> ProviderError:
    """The typed error for a refused WebSocket handshake (``401``: the key was refused)."""
    message, kind = f"The OpenAI Realtime API answered the handshake with HTTP {status}", None
    event = decode(bytes(body)) if body else None
    if event is not None:
        code, kind_text, words = error_fields(event)
        message, kind = f"{message}: {words}", code or kind_text or None
    return error_for_status(status, message, provider=PROVIDER, error_type=kind)


def closed_error(code: int | None, reason: str) -> ProviderError:
    """The typed error for a connection the API closed before the session was configured.

    The API closes a connection it refuses with the error in the reason
    (``invalid_request_error.invalid_api_key``).
    """
    kind, _, detail = reason.rpartition(".")
    message = f"The OpenAI Realtime API closed the connection (code {code}): {reason or '-'}"
    error = error_for(detail if kind else "", kind or reason, message)
    if type(error) is ProviderResponseError:
        # No telling reason: the connection went away before the session was ready.
        return ProviderTimeoutError(message, provider=PROVIDER)
    return error
