"""The shared request loop: a vendor's exception table, and relaying a stream's text."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from types import TracebackType

import pytest
from fake_http import Sleeps

from roomkit.core.exceptions import (
    ProviderOverloadedError,
    ProviderRateLimitError,
    ProviderResponseError,
    ProviderTimeoutError,
)
from roomkit.providers.ai._loop import RequestLoop, VendorErrors
from roomkit.providers.ai._retry import Backoff
from roomkit.providers.ai.base import AIResponse


class _Headers:
    def __init__(self, headers: dict[str, str]) -> None:
        self.headers = headers


class StatusFailure(Exception):
    """What an SDK raises for a 4xx or 5xx answer."""

    def __init__(self, status: int, message: str, *, headers: dict[str, str]) -> None:
        super().__init__(message)
        self.status_code = status
        self.response = _Headers(headers)
        self.message = message


class Unreachable(Exception):
    """What an SDK raises when no answer came back."""


class Unreadable(Exception):
    """What an SDK raises for an answer it cannot read."""


class InStream(Exception):
    """What an SDK raises for an error sent inside a stream."""


def _words(exc: StatusFailure) -> tuple[str, str | None]:
    return exc.message, None


def _stream_words(exc: Exception) -> tuple[str, str | None] | None:
    return (str(exc), "overloaded_error") if isinstance(exc, InStream) else None


ERRORS = VendorErrors(
    provider="test",
    status_error=StatusFailure,
    words=_words,
    unreachable=(Unreachable,),
    unreadable=(Unreadable,),
    stream_error=_stream_words,
)


def test_a_status_error_keeps_its_status_and_the_wait_asked_for() -> None:
    failure = ERRORS.translate(StatusFailure(429, "Slow down", headers={"retry-after": "2"}))

    assert failure is not None
    assert isinstance(failure.error, ProviderRateLimitError)
    assert (str(failure.error), failure.error.status_code) == ("Slow down", 429)
    assert failure.error.provider == "test"
    assert failure.retry_after == 2.0


@pytest.mark.parametrize(
    ("exc", "kind"),
    [
        (Unreachable("refused"), ProviderTimeoutError),
        (Unreadable("no body"), ProviderResponseError),
        (json.JSONDecodeError("bad", "{", 0), ProviderResponseError),
        (InStream("Overloaded"), ProviderOverloadedError),
    ],
    ids=["unreachable", "unreadable", "undecodable", "in-stream"],
)
def test_each_row_of_the_table_gives_its_typed_error(exc: Exception, kind: type) -> None:
    failure = ERRORS.translate(exc)

    assert failure is not None
    assert type(failure.error) is kind
    assert failure.retry_after is None


def test_an_error_outside_the_table_is_not_translated() -> None:
    assert ERRORS.translate(KeyError("bug")) is None


class Events:
    """An event stream that yields its texts, then raises ``fail`` when given one."""

    def __init__(self, texts: list[str], fail: Exception | None = None) -> None:
        self.texts = texts
        self.fail = fail
        self.closed = False

    async def _iterate(self) -> AsyncIterator[str]:
        for text in self.texts:
            yield text
        if self.fail is not None:
            raise self.fail

    def __aiter__(self) -> AsyncIterator[str]:
        return self._iterate()

    async def __aenter__(self) -> Events:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.closed = True


class Texts:
    """An assembly that passes each event's text on."""

    def __init__(self) -> None:
        self.fed: list[str] = []

    def feed(self, item: str) -> str:
        self.fed.append(item)
        return item

    def response(self) -> AIResponse:
        return AIResponse(content="".join(self.fed))


def loop(sleeps: Sleeps) -> RequestLoop[StatusFailure]:
    return RequestLoop(ERRORS, backoff=Backoff(retries=2), sleep=sleeps)


async def read_all(texts: AsyncIterator[str], *, into: list[str]) -> None:
    async for text in texts:
        into.append(text)


async def test_a_failure_mid_stream_is_raised_typed_after_the_text_passed_on() -> None:
    events = Events(["Hel", "", "lo"], fail=InStream("Overloaded"))
    sleeps = Sleeps()

    async def open_events() -> Events:
        return events

    seen: list[str] = []
    with pytest.raises(ProviderOverloadedError, match="Overloaded") as caught:
        await read_all(loop(sleeps).relay(open_events, Texts()), into=seen)

    assert seen == ["Hel", "lo"]
    assert isinstance(caught.value.__cause__, InStream)
    assert events.closed
    assert sleeps.delays == []


async def test_a_failure_mid_stream_outside_the_table_passes_through() -> None:
    async def open_events() -> Events:
        return Events(["Hel"], fail=KeyError("bug"))

    seen: list[str] = []
    with pytest.raises(KeyError):
        await read_all(loop(Sleeps()).relay(open_events, Texts()), into=seen)

    assert seen == ["Hel"]


async def test_collect_retries_the_whole_stream_with_a_fresh_assembly() -> None:
    streams = [Events(["Hel"], fail=InStream("Overloaded")), Events(["Hello."])]
    sleeps = Sleeps()

    async def open_events() -> Events:
        return streams.pop(0)

    response = await loop(sleeps).collect(open_events, Texts)

    assert response.content == "Hello."
    assert len(sleeps.delays) == 1
