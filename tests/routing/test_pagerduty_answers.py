"""What PagerDuty's ``/oncalls`` answers can hold: never more than the memory allows."""

from __future__ import annotations

import json
from datetime import UTC, datetime

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
