"""The model call of a round: ``provider.generate()``, bounded, its answer checked and screened.

The answer must be an ``AIResponse`` whose fields hold what their types say, checked again
here: a response can be made without checks (``model_construct()``, a field assigned after),
and what it holds goes on to the journal, the tools and the room.

The call runs in a task of its own, so the turn's bound holds whatever the provider does with
a cancellation. At the bound, or when the turn itself is cancelled, the call is cancelled and
the turn stops waiting for it. A provider that swallows the cancellation (a retry loop that
catches ``CancelledError`` and goes on) keeps running, abandoned: the channel holds it until
it ends, then logs once how it ended and drops what it returned, so its late answer never
reaches the room. A call that ends cancelled, as asked, ends quietly.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
from typing import TYPE_CHECKING

from pydantic import ValidationError

from roomkit.channels.ai._screen import screened
from roomkit.core.exceptions import ProviderError, ProviderResponseError, ProviderTimeoutError
from roomkit.core.tasks import cancelled_from_within
from roomkit.providers.ai.base import AIContext, AIProvider, AIResponse, AIToolCall, AIUsage

if TYPE_CHECKING:
    from roomkit.channels.ai.channel import AIChannel

__all__ = ["generate"]

logger = logging.getLogger("roomkit.channels.ai")


async def generate(channel: AIChannel, context: AIContext) -> AIResponse:
    """The provider's response to ``context``, screened.

    One call runs no longer than the turn's whole budget (``tool_loop_timeout_seconds``):
    a provider that never answers fails the turn, and frees its room for the next message.

    Raises:
        ProviderError: the provider raised ``CancelledError`` by itself.
        ProviderTimeoutError: the provider did not answer within the turn's budget.
        ProviderResponseError: what the provider returned is no ``AIResponse``, or holds
            what its fields' types do not allow; or ``generate`` is no coroutine function.
    """
    provider = channel.provider
    kind = type(provider).__name__
    budget = channel.tool_loop_timeout_seconds
    loop = asyncio.get_running_loop()
    call = loop.create_task(_generated(provider, context))
    try:
        async with asyncio.timeout(budget):
            # Waiting does not pass a cancel on to the call: that is done below, once.
            await asyncio.wait((call,))
    except TimeoutError:
        if not call.done():
            _abandon(channel, call, kind, loop.time())
            raise ProviderTimeoutError(
                f"{kind}.generate() did not answer within the tool_loop_timeout_seconds "
                f"({budget:g} s) of channel {channel.channel_id!r}: give the provider "
                "a timeout of its own, or the channel a larger tool_loop_timeout_seconds",
                provider=kind,
            ) from None
    except asyncio.CancelledError:
        _abandon(channel, call, kind, loop.time())
        raise
    # The provider's own errors (its own TimeoutError included) are raised in its words.
    return screened(_checked(call.result(), kind))


def _checked(response: object, kind: str) -> AIResponse:
    """``response`` validated again, field by field.

    An ``AIResponse`` checks its fields when it is made, not when one is assigned later or
    when it is made with ``model_construct()``: a call whose arguments are still the model's
    JSON text, or a reply that is no text, would fail deep inside the turn, or be stored in
    the room and fail every later turn that reads it.

    Raises:
        ProviderResponseError: ``response`` is no ``AIResponse``, or a field holds what its
            type does not allow.
    """
    if not isinstance(response, AIResponse):
        raise ProviderResponseError(
            f"{kind}.generate() must return an AIResponse, got {type(response).__name__}",
            provider=kind,
        )
    if _plainly_typed(response):
        return response  # what validating it again would make of it: the same fields
    fields = response.model_dump(warnings=False)
    if fields["content"] is None:
        fields["content"] = ""  # a vendor's "no text" beside tool calls: read as none
    try:
        return AIResponse.model_validate(fields)
    except ValidationError as error:
        wrong = "; ".join(
            f"{'.'.join(map(str, problem['loc']))} ({type(problem['input']).__name__}): "
            f"{problem['msg']}"
            for problem in error.errors()[:3]
        )
        raise ProviderResponseError(
            f"{kind}.generate() returned an AIResponse whose fields hold what their types do "
            f"not allow ({wrong}). Set each field when making the response (AIResponse(...) "
            "and AIToolCall(...) check them), with a call's arguments parsed from the "
            "model's JSON into a dict",
            provider=kind,
        ) from None


def _plainly_typed(response: AIResponse) -> bool:
    """Whether every field of ``response`` (exactly an ``AIResponse``) holds exactly the type
    it declares, so that validating it again would change nothing: the common response, made
    with checks, told apart in a few type tests (a dump and a validation cost ten times more).
    Anything else (a subclass, a call served already, a text subclass) is validated again."""
    if (
        type(response) is not AIResponse
        or type(response.content) is not str
        or not _text_keyed(response.metadata)
        or (response.finish_reason is not None and type(response.finish_reason) is not str)
    ):
        return False
    usage = response.usage
    if usage is not None and (
        type(usage) is not AIUsage
        or type(usage.input_tokens) is not int
        or type(usage.output_tokens) is not int
    ):
        return False
    calls = response.tool_calls
    if type(calls) is not list:
        return False
    return all(
        type(call) is AIToolCall
        and type(call.id) is str
        and type(call.name) is str
        and _text_keyed(call.arguments)
        and _text_keyed(call.metadata)
        and call.served is None
        and type(call.partial) is bool
        for call in calls
    )


def _text_keyed(value: object) -> bool:
    """Whether ``value`` is exactly a dict whose keys are all exactly texts."""
    return type(value) is dict and all(type(key) is str for key in value)


async def _generated(provider: AIProvider, context: AIContext) -> object:
    """What ``provider.generate(context)`` returned, a ``CancelledError`` it raised by itself
    made a :class:`ProviderError`.

    Raises:
        ProviderError: the provider raised ``CancelledError`` by itself.
        ProviderResponseError: ``generate`` is no coroutine function (nothing to await).
    """
    kind = type(provider).__name__
    answer = provider.generate(context)
    if not inspect.isawaitable(answer):
        raise ProviderResponseError(
            f"{kind}.generate() returned a {type(answer).__name__}, not an awaitable: define "
            "it as async def generate(self, context)",
            provider=kind,
        )
    try:
        return await answer
    except asyncio.CancelledError as error:
        # Raised by the provider itself, not a cancel of the call: ending the turn as
        # cancelled would leave the message unanswered and no error to show for it.
        if not cancelled_from_within():
            raise
        raise ProviderError(
            f"{kind}.generate() raised CancelledError, though the turn was not cancelled",
            provider=kind,
        ) from error


def _abandon(channel: AIChannel, call: asyncio.Task[object], kind: str, since: float) -> None:
    """Cancel ``call`` and stop waiting for it; the channel holds it until it ends."""
    if call.done():
        if not call.cancelled():
            call.exception()  # read: the turn that made the call has ended without it
        return
    call.cancel()
    stragglers = channel.abandoned_calls
    stragglers.add(call)

    def ended(task: asyncio.Task[object]) -> None:
        stragglers.discard(task)
        if task.cancelled():
            return  # it ended at its cancel, as asked
        late = asyncio.get_running_loop().time() - since
        error = task.exception()
        how = f"raised {error!r}" if error is not None else "returned"
        logger.warning(
            "%s.generate() %s %.3g s after channel %s stopped waiting for it: it did not "
            "end when cancelled. What it gave is dropped; a provider should let "
            "CancelledError through",
            kind,
            how,
            late,
            channel.channel_id,
        )

    call.add_done_callback(ended)
