"""Screen: a model's tool calls whose arguments no store, socket or vendor API can carry.

JSON's ``"\\ud800"`` escape lets a model write a lone surrogate, text that UTF-8 cannot
encode. Such arguments would fail wherever they are written next: the turn's journal, a
question's store, the model's own next request. So before the response is recorded, each
such call gets a copy of its arguments with U+FFFD in place of every lone surrogate, is
marked cut off (never served), and keeps the problem for the call checks to refuse it with.
Every other text of the response (the reply, a call's name or id, metadata) has U+FFFD in
place of its lone surrogates: the reply reaches the room, a name no tool has is refused.
"""

from __future__ import annotations

from roomkit._storable import replaced_surrogates, unencodable_text
from roomkit.channels._calls.checks import UNENCODABLE
from roomkit.providers.ai.base import AIResponse, AIToolCall

__all__ = ["screened"]


def screened(response: AIResponse) -> AIResponse:
    """``response`` with every call whose arguments cannot be encoded screened, and its
    other texts cleaned."""
    calls = response.tool_calls
    if any(unencodable_text(call.arguments) is not None for call in calls):
        response = response.model_copy(update={"tool_calls": [_screen(call) for call in calls]})
    whole = response.model_dump()
    if unencodable_text(whole) is None:
        return response
    return AIResponse.model_validate(replaced_surrogates(whole))


def _screen(call: AIToolCall) -> AIToolCall:
    problem = unencodable_text(call.arguments)
    if problem is None:
        return call
    arguments = replaced_surrogates(call.arguments)
    if call.served is not None:
        # The provider ran it: it is only reported, with its arguments cleaned all the same.
        return call.model_copy(update={"arguments": arguments})
    metadata = {**call.metadata, UNENCODABLE: problem}
    return call.model_copy(update={"arguments": arguments, "partial": True, "metadata": metadata})
