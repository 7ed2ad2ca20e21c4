"""Checking events against the ``openai`` SDK's Realtime types (this module holds no tests).

An event has the vendor's shape when it parses as one of the SDK's event types and carries no
field the type does not define (the SDK's models accept unknown fields, so a misspelt one
would otherwise pass unnoticed). Server events under the older names
(``response.audio_transcript.*``) are checked against the SDK's older types.
"""

from __future__ import annotations

from typing import Any

from openai.types.beta.realtime import RealtimeServerEvent as OlderServerEvent
from openai.types.realtime import RealtimeClientEvent, RealtimeServerEvent
from pydantic import BaseModel, TypeAdapter

CLIENT_EVENTS: TypeAdapter[Any] = TypeAdapter(RealtimeClientEvent)
SERVER_EVENTS: TypeAdapter[Any] = TypeAdapter(RealtimeServerEvent)
OLDER_SERVER_EVENTS: TypeAdapter[Any] = TypeAdapter(OlderServerEvent)

OLDER_NAMES = ("response.audio_transcript.", "response.audio.", "response.text.")


def unknown_fields(value: object, path: str = "") -> list[str]:
    """The paths of the fields in ``value`` (a parsed model) that its type does not define."""
    found: list[str] = []
    if isinstance(value, BaseModel):
        found += [f"{path}.{name}" for name in value.model_extra or {}]
        for name in type(value).model_fields:
            found += unknown_fields(getattr(value, name), f"{path}.{name}")
    elif isinstance(value, list | tuple):
        for index, item in enumerate(value):
            found += unknown_fields(item, f"{path}[{index}]")
    return found


def check_client_event(event: dict[str, Any]) -> BaseModel:
    """Parse ``event`` as a client event of the API; raise when it has another shape."""
    return _check(CLIENT_EVENTS, event)


def check_server_event(event: dict[str, Any]) -> BaseModel:
    """Parse ``event`` as a server event of the API; raise when it has another shape."""
    older = str(event.get("type", "")).startswith(OLDER_NAMES)
    return _check(OLDER_SERVER_EVENTS if older else SERVER_EVENTS, event)


def _check(adapter: TypeAdapter[Any], event: dict[str, Any]) -> BaseModel:
    model = adapter.validate_python(event)
    assert isinstance(model, BaseModel)
    unknown = unknown_fields(model)
    assert not unknown, f"{event['type']} carries fields the API does not define: {unknown}"
    return model
