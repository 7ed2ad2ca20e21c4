"""What both vendors' wire translations share: a tool call read from its arguments' JSON text.

Both APIs send a call's arguments as JSON text (Anthropic's stream in fragments, Chat
Completions always). A call whose text does not parse as a JSON object, or that the token
limit cut, comes back ``partial`` with the text it got (``metadata["raw_arguments"]``), so the
channel refuses it rather than run it on half its arguments.
"""

from __future__ import annotations

import contextlib
import json
from typing import Any

from roomkit.providers.ai.base import AIToolCall

__all__ = ["tool_call"]


def tool_call(call_id: str, name: str, raw: str, *, cut: bool = False) -> AIToolCall:
    """The call ``call_id`` of the tool ``name``, with the arguments the JSON text ``raw``
    holds (no text at all is no arguments).

    Args:
        call_id: the call's id.
        name: the tool called.
        raw: the arguments' JSON text, as the API sent it.
        cut: the response stopped inside this call: it is partial whatever ``raw`` holds.
    """
    arguments: Any = None
    if not cut:
        with contextlib.suppress(json.JSONDecodeError):
            arguments = json.loads(raw) if raw.strip() else {}
    if not isinstance(arguments, dict):
        return AIToolCall(id=call_id, name=name, partial=True, metadata={"raw_arguments": raw})
    return AIToolCall(id=call_id, name=name, arguments=arguments)
