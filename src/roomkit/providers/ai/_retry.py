"""Trying a provider call again: exponential backoff with jitter, bounded in count and in time.

A vendor adapter hands :func:`call_with_retries` one attempt (a coroutine function) and a
``translate`` function that turns whatever the attempt raised into a :class:`Failure`: the
typed :class:`~roomkit.core.exceptions.ProviderError` to raise, and how long the vendor asked
us to wait (its ``retry-after``), when it said. Only retryable errors are tried again, at most
``Backoff.retries`` times and never past ``Backoff.max_wait`` seconds of waiting in all; the
sleep function is injected, so tests drive the retries without waiting.
"""

from __future__ import annotations

import asyncio
import email.utils
import logging
import math
import random
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import NamedTuple, TypeVar

from roomkit.core.exceptions import ProviderError

__all__ = ["Backoff", "Failure", "Sleep", "call_with_retries", "retry_after_seconds"]

logger = logging.getLogger("roomkit.providers.ai")

T = TypeVar("T")

Sleep = Callable[[float], Awaitable[None]]
"""How a provider waits between attempts: ``asyncio.sleep`` unless a test injects its own."""


class Failure(NamedTuple):
    """One failed attempt, translated."""

    error: ProviderError
    """The error to raise if the call is not tried again."""
    retry_after: float | None = None
    """The wait the vendor asked for, in seconds; ``None`` when it said nothing."""


@dataclass(frozen=True)
class Backoff:
    """When to try again: exponential steps with jitter, bounded in count and in total wait."""

    retries: int = 2
    """How many times a retryable failure is tried again; 0 never retries."""
    base_delay: float = 0.5
    """The first step, in seconds; each later step doubles it."""
    max_delay: float = 8.0
    """The longest step, in seconds, when the vendor gave no retry-after."""
    max_wait: float = 30.0
    """The most time spent waiting across all retries of one call, in seconds."""

    def __post_init__(self) -> None:
        # The messages use the provider configs' names: that is where the values come from.
        if self.retries < 0:
            raise ValueError(f"max_retries must be 0 or more, got {self.retries}")
        for name in ("base_delay", "max_delay", "max_wait"):
            if getattr(self, name) < 0:
                raise ValueError(f"retry_{name} must be 0 or more, got {getattr(self, name)}")

    def delay(self, attempt: int, *, retry_after: float | None = None, jitter: float) -> float:
        """The wait before retry number ``attempt`` (counting from 0).

        Args:
            attempt: how many retries came before this one.
            retry_after: the vendor's requested wait; honoured as given when set.
            jitter: a number in ``[0, 1)``; the step is spread over its upper half so that
                clients that failed together do not retry together.
        """
        if retry_after is not None:
            return max(retry_after, 0.0)
        step = min(self.max_delay, self.base_delay * 2.0**attempt)
        return step / 2 + step / 2 * jitter


async def call_with_retries(
    attempt: Callable[[], Awaitable[T]],
    *,
    translate: Callable[[Exception], Failure | None],
    backoff: Backoff,
    sleep: Sleep = asyncio.sleep,
    jitter: Callable[[], float] = random.random,
) -> T:
    """Run ``attempt``, trying again after retryable failures.

    Args:
        attempt: one try of the call.
        translate: the typed failure for an exception the attempt raised; ``None`` lets the
            exception through untouched (a bug, a cancellation).
        backoff: the retry bounds.
        sleep: how to wait between tries.
        jitter: the source of the jitter, a number in ``[0, 1)`` per retry.

    Returns:
        What the first successful attempt returned.

    Raises:
        ProviderError: the last failure's typed error, once it is not retryable, the retries
            are spent, or the next wait would pass ``backoff.max_wait``.
    """
    waited = 0.0
    tries = 0
    while True:
        try:
            return await attempt()
        except Exception as exc:
            failure = translate(exc)
            if failure is None:
                raise
            error = failure.error
            delay = backoff.delay(tries, retry_after=failure.retry_after, jitter=jitter())
            if not error.retryable or tries >= backoff.retries or waited + delay > backoff.max_wait:
                if error is exc:
                    raise
                raise error from exc
            logger.warning(
                "%s call failed (%s), retrying in %.2fs (retry %d of %d)",
                error.provider or "Provider",
                type(error).__name__,
                delay,
                tries + 1,
                backoff.retries,
            )
            await sleep(delay)
            waited += delay
            tries += 1


def retry_after_seconds(headers: Mapping[str, str], *, now: float | None = None) -> float | None:
    """The wait a response asks for, from ``retry-after-ms`` or ``retry-after``.

    ``retry-after`` may hold seconds or an HTTP date. Header names are matched as given, so
    pass a case-insensitive mapping (the SDKs' response headers are).

    Args:
        headers: the response headers.
        now: the current time as a Unix timestamp, for a date value; the clock when ``None``.

    Returns:
        Seconds to wait, or ``None`` when the headers ask for nothing readable.
    """
    millis = _seconds(headers.get("retry-after-ms"))
    if millis is not None:
        return max(millis / 1000, 0.0)
    value = headers.get("retry-after")
    if value is None:
        return None
    seconds = _seconds(value)
    if seconds is not None:
        return max(seconds, 0.0)
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError, OverflowError):  # OverflowError: a year no date holds
        return None
    current = time.time() if now is None else now
    return max(when.timestamp() - current, 0.0)


def _seconds(value: str | None) -> float | None:
    """``value`` as a finite number, or ``None``: NaN or an infinity asks no wait a
    retry could keep to (NaN would pass every comparison with the budget)."""
    if value is None:
        return None
    try:
        number = float(value)
    except ValueError:
        return None
    return number if math.isfinite(number) else None
