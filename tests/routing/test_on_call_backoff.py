"""A source that failed to read: its failure stands for a while, raised by every lookup
meanwhile without growing."""

from __future__ import annotations

import traceback
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import httpx
import pytest
from aiohttp import web
from test_on_call import serving

from roomkit.routing import ICalOnCall, PagerDutyOnCall

MOMENT = datetime(2027, 3, 27, 12, tzinfo=UTC)

SOURCES: dict[str, tuple[str, Callable[[str], Any]]] = {
    "ical": ("/oncall.ics", lambda base: ICalOnCall(f"{base}/oncall.ics")),
    "pagerduty": ("/oncalls", lambda base: PagerDutyOnCall("tok-123", "P1", base_url=base)),
}


@pytest.mark.parametrize("source", sorted(SOURCES))
async def test_a_standing_failure_keeps_its_traceback_short(source: str) -> None:
    """Each lookup during the back-off raises the failure with its own frames only, not
    those of every lookup before it (a traceback, and the memory it holds, growing)."""
    served: list[str] = []

    async def down(request: web.Request) -> web.Response:
        served.append(request.path)
        return web.Response(status=503, text="down")

    path, build = SOURCES[source]
    async with serving(path, down) as base:
        schedule = build(base)
        lengths = []
        for _ in range(5):
            with pytest.raises(httpx.HTTPStatusError, match="503") as raised:
                await schedule.on_call_at(MOMENT)
            lengths.append(len(traceback.extract_tb(raised.value.__traceback__)))
        assert len(served) == 1, "read once, the failure standing after"
        assert len(set(lengths[1:])) == 1, lengths
