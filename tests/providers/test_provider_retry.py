"""The providers' retry policy: backoff steps, jitter, retry-after, and the bounds."""

from __future__ import annotations

import email.utils

import pytest
from fake_http import Sleeps

from roomkit.core.exceptions import (
    ProviderAuthError,
    ProviderError,
    ProviderOverloadedError,
    ProviderRateLimitError,
    ProviderRequestError,
    ProviderResponseError,
    ProviderTimeoutError,
)
from roomkit.providers.ai._retry import Backoff, Failure, call_with_retries, retry_after_seconds
from roomkit.providers.ai.errors import error_for_status


class Vendor(Exception):
    """What an SDK would raise."""


class Script:
    """An attempt that fails with the scripted failures, then answers."""

    def __init__(self, *failures: Failure) -> None:
        self.failures = list(failures)
        self.calls = 0

    async def attempt(self) -> str:
        self.calls += 1
        if self.failures:
            raise Vendor(self.calls)
        return "answer"

    def translate(self, exc: Exception) -> Failure | None:
        if not isinstance(exc, Vendor):
            return None
        return self.failures.pop(0)


def overloaded() -> Failure:
    return Failure(ProviderOverloadedError("Overloaded", provider="test", status_code=529))


def test_steps_double_and_spread_over_their_upper_half() -> None:
    backoff = Backoff(base_delay=0.5, max_delay=8.0)

    assert [backoff.delay(n, jitter=0.0) for n in range(6)] == [0.25, 0.5, 1.0, 2.0, 4.0, 4.0]
    assert [backoff.delay(n, jitter=0.999) for n in range(3)] == pytest.approx(
        [0.5, 1.0, 2.0], abs=0.01
    )


def test_a_vendor_wait_is_honoured_as_given() -> None:
    assert Backoff().delay(0, retry_after=12.5, jitter=0.7) == 12.5


@pytest.mark.parametrize("settings", [{"retries": -1}, {"base_delay": -0.1}, {"max_wait": -1.0}])
def test_negative_bounds_are_refused(settings: dict[str, float]) -> None:
    with pytest.raises(ValueError, match="0 or more"):
        Backoff(**settings)  # type: ignore[arg-type]


async def test_retryable_failures_are_tried_again_until_an_answer() -> None:
    script = Script(overloaded(), overloaded())
    sleeps = Sleeps()

    result = await call_with_retries(
        script.attempt, translate=script.translate, backoff=Backoff(retries=2), sleep=sleeps
    )

    assert result == "answer"
    assert script.calls == 3
    assert len(sleeps.delays) == 2


async def test_retries_are_bounded_in_count() -> None:
    script = Script(overloaded(), overloaded(), overloaded())
    sleeps = Sleeps()

    with pytest.raises(ProviderOverloadedError) as caught:
        await call_with_retries(
            script.attempt, translate=script.translate, backoff=Backoff(retries=1), sleep=sleeps
        )

    assert script.calls == 2
    assert isinstance(caught.value.__cause__, Vendor)


async def test_retries_are_bounded_in_total_wait() -> None:
    limited = Failure(ProviderRateLimitError("Slow down", provider="test"), retry_after=20.0)
    script = Script(limited, limited, limited)
    sleeps = Sleeps()

    with pytest.raises(ProviderRateLimitError):
        await call_with_retries(
            script.attempt,
            translate=script.translate,
            backoff=Backoff(retries=5, max_wait=30.0),
            sleep=sleeps,
        )

    assert sleeps.delays == [20.0]
    assert script.calls == 2


async def test_a_failure_that_is_not_retryable_is_raised_at_once() -> None:
    script = Script(Failure(ProviderAuthError("invalid key", provider="test", status_code=401)))
    sleeps = Sleeps()

    with pytest.raises(ProviderAuthError, match="invalid key"):
        await call_with_retries(
            script.attempt, translate=script.translate, backoff=Backoff(), sleep=sleeps
        )

    assert script.calls == 1
    assert sleeps.delays == []


async def test_an_error_it_cannot_translate_passes_through() -> None:
    async def broken() -> str:
        raise KeyError("bug")

    with pytest.raises(KeyError):
        await call_with_retries(broken, translate=lambda exc: None, backoff=Backoff())


async def test_a_provider_error_raised_by_the_attempt_keeps_its_identity() -> None:
    unreadable = ProviderResponseError("Malformed message", provider="test")

    async def attempt() -> str:
        raise unreadable

    with pytest.raises(ProviderResponseError) as caught:
        await call_with_retries(
            attempt,
            translate=lambda exc: Failure(exc) if isinstance(exc, ProviderError) else None,
            backoff=Backoff(),
        )

    assert caught.value is unreadable


@pytest.mark.parametrize(
    ("headers", "seconds"),
    [
        ({"retry-after": "3"}, 3.0),
        ({"retry-after": "1.5"}, 1.5),
        ({"retry-after-ms": "250", "retry-after": "9"}, 0.25),
        ({"retry-after": "soon"}, None),
        ({"retry-after": "nan"}, None),
        ({"retry-after": "inf"}, None),
        ({"retry-after": "1e400"}, None),
        ({"retry-after-ms": "nan", "retry-after": "2"}, 2.0),
        ({"retry-after": "Mon, 01 Jan 99999999999 00:00:00 GMT"}, None),
        ({}, None),
    ],
)
def test_retry_after_is_read_from_the_headers(
    headers: dict[str, str], seconds: float | None
) -> None:
    assert retry_after_seconds(headers) == seconds


def test_retry_after_may_be_a_date() -> None:
    when = email.utils.formatdate(1_700_000_060, usegmt=True)

    assert retry_after_seconds({"retry-after": when}, now=1_700_000_000) == 60.0


@pytest.mark.parametrize(
    ("status", "kind", "expected"),
    [
        (401, None, ProviderAuthError),
        (403, "permission_error", ProviderAuthError),
        (429, None, ProviderRateLimitError),
        (408, None, ProviderTimeoutError),
        (500, None, ProviderOverloadedError),
        (529, "overloaded_error", ProviderOverloadedError),
        (400, "invalid_request_error", ProviderRequestError),
        (404, None, ProviderRequestError),
        (None, "overloaded_error", ProviderOverloadedError),
        (200, "rate_limit_error", ProviderRateLimitError),
        (None, "something_new", ProviderResponseError),
    ],
)
def test_vendor_failures_map_to_typed_errors(
    status: int | None, kind: str | None, expected: type[ProviderError]
) -> None:
    error = error_for_status(status, "the vendor's words", provider="test", error_type=kind)

    assert type(error) is expected
    assert str(error) == "the vendor's words"
    assert error.status_code == (status if status and status >= 400 else None)
