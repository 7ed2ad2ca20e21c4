"""The request loop both text providers share: retries, error mapping and stream plumbing.

A vendor adapter describes its SDK's exceptions once, in a :class:`VendorErrors` table, and
hands :class:`RequestLoop` the vendor calls themselves (one plain call, or opening an event
stream). The loop retries what the table marks retryable, drains or relays the stream through
the vendor's :class:`Assembly`, and raises every failure as a typed
:class:`~roomkit.core.exceptions.ProviderError`. Request building and response reading stay
with the vendor.
"""

from __future__ import annotations

import json
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, Mapping
from dataclasses import dataclass
from types import TracebackType
from typing import Generic, Protocol, TypeVar

from roomkit.core.exceptions import ProviderError, ProviderResponseError, ProviderTimeoutError
from roomkit.providers.ai._retry import (
    Backoff,
    Failure,
    Sleep,
    call_with_retries,
    retry_after_seconds,
)
from roomkit.providers.ai.base import AIResponse
from roomkit.providers.ai.errors import error_for_status

__all__ = ["Assembly", "Events", "RequestLoop", "StatusError", "VendorErrors", "pick"]

_T = TypeVar("_T")
_V = TypeVar("_V")
_I = TypeVar("_I")
_I_co = TypeVar("_I_co", covariant=True)
_I_contra = TypeVar("_I_contra", contravariant=True)


class _Response(Protocol):
    @property
    def headers(self) -> Mapping[str, str]: ...


class StatusError(Protocol):
    """What an SDK's HTTP status error carries: the status and the response it came with."""

    @property
    def status_code(self) -> int: ...

    @property
    def response(self) -> _Response: ...


_S = TypeVar("_S", bound=StatusError)

Words = tuple[str, str | None]
"""The vendor's message and its error type (or code), when it gave one."""


def _no_stream_errors(exc: Exception) -> Words | None:
    return None


@dataclass(frozen=True)
class VendorErrors(Generic[_S]):
    """How one SDK's exceptions map onto the :class:`ProviderError` family.

    Checked in this order: a :class:`ProviderError` passes as it is; then the status error,
    the transport failures, the unreadable responses and last the errors sent inside a stream.
    """

    provider: str
    """The provider's name, kept on every error."""
    status_error: type[_S]
    """The SDK's error for a 4xx or 5xx answer."""
    words: Callable[[_S], Words]
    """The vendor's message and error type from a status error."""
    unreachable: tuple[type[Exception], ...]
    """Failures where no usable answer came back; they become timeouts."""
    unreadable: tuple[type[Exception], ...]
    """Failures to read an answer that came back; they become response errors."""
    stream_error: Callable[[Exception], Words | None] = _no_stream_errors
    """The vendor's words for an error sent inside a stream after a 200; ``None`` when the
    exception is no such error."""

    def translate(self, exc: Exception) -> Failure | None:
        """The typed failure for what an attempt raised; ``None`` for anything else."""
        if isinstance(exc, ProviderError):
            return Failure(exc)
        provider = self.provider
        if isinstance(exc, self.status_error):
            message, kind = self.words(exc)
            error = error_for_status(exc.status_code, message, provider=provider, error_type=kind)
            return Failure(error, retry_after_seconds(exc.response.headers))
        if isinstance(exc, self.unreachable):
            # The SDKs' timeout errors are connection errors; both mean no usable answer.
            return Failure(ProviderTimeoutError(str(exc) or type(exc).__name__, provider=provider))
        if isinstance(exc, (*self.unreadable, json.JSONDecodeError)):
            # JSONDecodeError: the SDK could not decode a body it was told is JSON.
            return Failure(ProviderResponseError(f"Unreadable response: {exc}", provider=provider))
        words = self.stream_error(exc)
        if words is not None:
            # Only the error's type tells what it was: the status said 200.
            message, kind = words
            return Failure(error_for_status(None, message, provider=provider, error_type=kind))
        return None


class Events(Protocol[_I_co]):
    """An SDK's open event stream: iterated inside ``async with``, which closes it."""

    def __aiter__(self) -> AsyncIterator[_I_co]: ...

    async def __aenter__(self) -> object: ...

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
        /,
    ) -> None: ...


class Assembly(Protocol[_I_contra]):
    """A vendor's reader of stream events: text as it comes, the whole response at the end."""

    def feed(self, item: _I_contra) -> str:
        """Take one event; return the text it adds (``""`` for none)."""
        ...

    def response(self) -> AIResponse:
        """The response the events fed so far describe."""
        ...


class RequestLoop(Generic[_S]):
    """Runs a provider's vendor calls: retried, drained or relayed, failures typed.

    Args:
        errors: the vendor's exception table.
        backoff: the retry bounds.
        sleep: how to wait between retries.
    """

    def __init__(self, errors: VendorErrors[_S], *, backoff: Backoff, sleep: Sleep) -> None:
        self._errors = errors
        self._backoff = backoff
        self._sleep = sleep

    async def call(self, attempt: Callable[[], Awaitable[_T]]) -> _T:
        """Run one vendor call, trying again after retryable failures.

        Raises:
            ProviderError: the typed failure, after the retries allowed.
        """
        return await call_with_retries(
            attempt, translate=self._errors.translate, backoff=self._backoff, sleep=self._sleep
        )

    async def collect(
        self, open_events: Callable[[], Awaitable[Events[_I]]], assembly: Callable[[], Assembly[_I]]
    ) -> AIResponse:
        """Open a stream and read it to its end into one response, retrying the whole.

        Args:
            open_events: opens the vendor's event stream.
            assembly: makes a fresh reader for each try.

        Raises:
            ProviderError: the typed failure, after the retries allowed.
        """

        async def attempt() -> AIResponse:
            events = await open_events()
            reader = assembly()
            async with events:
                async for event in events:
                    reader.feed(event)
            return reader.response()

        return await self.call(attempt)

    async def relay(
        self, open_events: Callable[[], Awaitable[Events[_I]]], assembly: Assembly[_I]
    ) -> AsyncGenerator[str, None]:
        """Yield a stream's text as it arrives.

        Only opening the stream is retried: text already passed on cannot be taken back.

        Args:
            open_events: opens the vendor's event stream.
            assembly: reads the events.

        Raises:
            ProviderError: the typed failure.
        """
        events = await self.call(open_events)
        try:
            async with events:
                async for event in events:
                    text = assembly.feed(event)
                    if text:
                        yield text
        except ProviderError:
            raise
        except Exception as exc:
            failure = self._errors.translate(exc)
            if failure is None:
                raise
            raise failure.error from exc


def pick(value: _V | None, default: _V) -> _V:
    """``value``, or ``default`` when it is ``None``: a keyword overriding a config field."""
    return default if value is None else value
