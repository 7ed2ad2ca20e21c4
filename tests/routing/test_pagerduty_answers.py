"""What PagerDuty's ``/oncalls`` answers can hold: never more than the memory allows."""

from __future__ import annotations

import asyncio
import json
from datetime import UTC, datetime, timedelta

import httpx
import pytest
from aiohttp import web
from test_on_call import serving

from roomkit.routing import PagerDutyOnCall

MOMENT = datetime(2027, 3, 27, 12, tzinfo=UTC)
ENTRY = {
    "user": {"summary": "Bob", "email": "bob@example.com"},
    "escalation_level": 1,
    "start": "2027-03-27T00:00:00Z",
    "end": "2027-03-28T00:00:00Z",
}


async def test_an_answer_over_the_cap_is_refused_naming_it() -> None:
    """A server, or a proxy before it, sending without end is cut off at 1 MiB, where the
    whole answer was read (and parsed) first."""
    body = json.dumps({"oncalls": [ENTRY] * 20_000}).encode()
    assert len(body) > 2 * 1024 * 1024

    async def oncalls(request: web.Request) -> web.StreamResponse:
        response = web.StreamResponse(headers={"Content-Type": "application/json"})
        await response.prepare(request)
        for start in range(0, len(body), 65536):
            await response.write(body[start : start + 65536])
        await response.write_eof()
        return response

    async with serving("/oncalls", oncalls) as base:
        source = PagerDutyOnCall("tok-123", "PSCHED1", base_url=base)
        with pytest.raises(ValueError, match=r"answer holds more than 1048576 bytes: check"):
            await source.on_call_at(MOMENT)


async def test_an_answer_nested_past_the_stack_is_refused_as_no_json() -> None:
    async def oncalls(request: web.Request) -> web.Response:
        return web.Response(body=b"[" * 200_000, content_type="application/json")

    async with serving("/oncalls", oncalls) as base:
        source = PagerDutyOnCall("tok-123", "PSCHED1", base_url=base)
        with pytest.raises(ValueError, match=r"is not JSON \(or nests too deeply to read\)"):
            await source.on_call_at(MOMENT)


class Seconds:
    """A clock in seconds the test moves."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


async def test_pagerduty_failing_is_not_asked_again_at_every_routing(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """While PagerDuty fails, each routing would wait up to 10 s on it: it is asked again
    30 s after a failure, the answer read before standing meanwhile (for the moments of its
    shift, up to an hour after it was read), any other lookup meeting the failure at once."""
    served: list[int] = []
    down = False

    async def oncalls(request: web.Request) -> web.Response:
        served.append(503 if down else 200)
        if down:
            return web.Response(status=503, text="down for maintenance")
        return web.json_response({"oncalls": [ENTRY]})

    clock = Seconds()
    async with serving("/oncalls", oncalls) as base:
        source = PagerDutyOnCall("tok-123", "PSCHED1", base_url=base, clock=clock)
        assert await source.on_call_at(MOMENT) == "bob@example.com"
        down = True
        clock.now += 61  # past refresh: PagerDuty is asked, fails, the answer read stands
        with caplog.at_level("WARNING", logger="roomkit.routing"):
            assert await source.on_call_at(MOMENT) == "bob@example.com"
        assert "the answer read before stands, and PagerDuty is asked again in 30 s" in (
            caplog.text
        )
        clock.now += 29
        assert await source.on_call_at(MOMENT) == "bob@example.com"
        with pytest.raises(httpx.HTTPStatusError, match="503"):
            # A moment past the shift read before: the failure, at once.
            await source.on_call_at(MOMENT + timedelta(days=1))
        assert served == [200, 503]
        clock.now += 1
        assert await source.on_call_at(MOMENT) == "bob@example.com"
        assert served == [200, 503, 503]
        clock.now += 3600 - 91  # the answer read an hour ago no longer stands
        with pytest.raises(httpx.HTTPStatusError, match="503"):
            await source.on_call_at(MOMENT)
        assert served == [200, 503, 503, 503]
        with pytest.raises(httpx.HTTPStatusError, match="503"):
            await source.on_call_at(MOMENT)
        assert served == [200, 503, 503, 503]
        down = False
        clock.now += 30
        assert await source.on_call_at(MOMENT) == "bob@example.com"
        assert served == [200, 503, 503, 503, 200]


async def test_pagerduty_failing_at_first_fails_each_lookup_at_once_until_the_retry() -> None:
    served: list[str] = []

    async def oncalls(request: web.Request) -> web.Response:
        served.append(request.path)
        return web.Response(status=502, text="bad gateway")

    clock = Seconds()
    async with serving("/oncalls", oncalls) as base:
        source = PagerDutyOnCall("tok-123", "PSCHED1", base_url=base, clock=clock)
        for step in (0, 10, 19.5):
            clock.now += step
            with pytest.raises(httpx.HTTPStatusError, match="502"):
                await source.on_call_at(MOMENT)
        assert len(served) == 1
        clock.now += 0.5
        with pytest.raises(httpx.HTTPStatusError, match="502"):
            await source.on_call_at(MOMENT)
        assert len(served) == 2


@pytest.mark.parametrize("status", [200, 503])
async def test_lookups_at_the_same_time_share_one_read(status: int) -> None:
    """Lookups arriving while PagerDuty is read wait on that read, its answer or its failure
    theirs too, where each sent its own request (and, PagerDuty hanging, each waited 10 s)."""
    served: list[str] = []
    arrived = asyncio.Event()
    release = asyncio.Event()

    async def oncalls(request: web.Request) -> web.Response:
        served.append(request.path)
        arrived.set()
        await release.wait()
        if status != 200:
            return web.Response(status=status, text="down for maintenance")
        return web.json_response({"oncalls": [ENTRY]})

    async with serving("/oncalls", oncalls) as base:
        source = PagerDutyOnCall("tok-123", "PSCHED1", base_url=base, clock=Seconds())
        lookups = [
            asyncio.create_task(source.on_call_at(MOMENT + timedelta(seconds=second)))
            for second in range(8)
        ]
        await arrived.wait()
        release.set()
        answers = await asyncio.gather(*lookups, return_exceptions=True)
    if status == 200:
        assert answers == ["bob@example.com"] * 8
    else:
        assert all(isinstance(answer, httpx.HTTPStatusError) for answer in answers)
    assert served == ["/oncalls"]


async def test_a_lookup_past_the_shift_a_shared_read_found_reads_again() -> None:
    served: list[str] = []
    arrived = asyncio.Event()
    release = asyncio.Event()

    async def oncalls(request: web.Request) -> web.Response:
        served.append(request.query["since"])
        arrived.set()
        await release.wait()
        return web.json_response({"oncalls": [ENTRY]})

    async with serving("/oncalls", oncalls) as base:
        source = PagerDutyOnCall("tok-123", "PSCHED1", base_url=base, clock=Seconds())
        today = asyncio.create_task(source.on_call_at(MOMENT))
        later = asyncio.create_task(source.on_call_at(MOMENT + timedelta(days=2)))
        await arrived.wait()
        release.set()
        assert await today == "bob@example.com"
        assert await later is None
    assert served == [MOMENT.isoformat(), (MOMENT + timedelta(days=2)).isoformat()]
