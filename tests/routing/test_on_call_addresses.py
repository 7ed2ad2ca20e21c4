"""A schedule's address with a port no server listens on, or a refresh no schedule can keep,
is refused when it is given, naming the argument, not by httpx or a comparison at every lookup."""

from __future__ import annotations

import math
import re

import pytest

from roomkit.routing import ICalOnCall, PagerDutyOnCall

PORTS = [("99999", "99999"), ("abc", "abc"), ("0", "0")]


@pytest.mark.parametrize(("given", "port"), PORTS)
def test_pagerduty_refuses_a_port_out_of_range_naming_it(given: str, port: str) -> None:
    """httpx raised InvalidURL (or could not connect) at every lookup."""
    refused = f"PagerDutyOnCall(base_url=...) names the port '{port}' in 'api.pagerduty.com:"
    with pytest.raises(ValueError, match=re.escape(refused)):
        PagerDutyOnCall("tok-123", "PSCHED1", base_url=f"https://api.pagerduty.com:{given}")


@pytest.mark.parametrize(("given", "port"), PORTS)
def test_a_feed_with_a_port_out_of_range_is_refused_naming_it(given: str, port: str) -> None:
    refused = f"ICalOnCall(source=...) names the port '{port}' in 'example.com:"
    with pytest.raises(ValueError, match=re.escape(refused)):
        ICalOnCall(f"https://example.com:{given}/on-call.ics")
    with pytest.raises(ValueError, match=re.escape(refused)):
        ICalOnCall(f"webcal://example.com:{given}/on-call.ics")


def test_a_feed_naming_no_host_is_refused_without_quoting_its_path() -> None:
    """A private calendar's path is its secret: the message quotes the scheme alone."""
    with pytest.raises(
        ValueError, match=r"ICalOnCall\(source=\.\.\.\) must be .* naming a host"
    ) as refused:
        ICalOnCall("https://ops:hunter2@/calendar/private-8f3a9c1d/basic.ics")
    assert "private-8f3a9c1d" not in str(refused.value)
    assert "hunter2" not in str(refused.value)


def test_a_port_in_range_is_taken() -> None:
    assert PagerDutyOnCall("t", "P1", base_url="https://127.0.0.1:8443").base_url.endswith("8443")
    assert ICalOnCall("https://example.com:8443/on-call.ics").url is not None


@pytest.mark.parametrize(
    ("refresh", "error", "says"),
    [
        ("60", TypeError, "must be a number of seconds, got '60'"),
        (True, TypeError, "must be a number of seconds, got True"),
        (
            -1,
            ValueError,
            "must be a number of seconds from 0 to 3153600000 (a century), "
            "or math.inf (never again), got -1",
        ),
        (
            float("nan"),
            ValueError,
            "must be a number of seconds from 0 to 3153600000 (a century), "
            "or math.inf (never again), got nan",
        ),
        (
            1e300,
            ValueError,
            "must be a number of seconds from 0 to 3153600000 (a century), "
            "or math.inf (never again), got 1e+300",
        ),
    ],
)
def test_a_refresh_no_schedule_can_keep_is_refused_naming_it(
    refresh: object, error: type[Exception], says: str
) -> None:
    """A string failed every lookup as a comparison naming neither the argument nor the fix."""
    with pytest.raises(error, match=re.escape(f"PagerDutyOnCall(refresh=...) {says}")):
        PagerDutyOnCall("tok-123", "PSCHED1", refresh=refresh)  # type: ignore[arg-type]
    with pytest.raises(error, match=re.escape(f"ICalOnCall(refresh=...) {says}")):
        ICalOnCall("https://example.com/on-call.ics", refresh=refresh)  # type: ignore[arg-type]


def test_a_refresh_of_math_inf_reads_the_schedule_once() -> None:
    """As before refresh was checked: the first read is kept for the process's life."""
    assert PagerDutyOnCall("tok-123", "PSCHED1", refresh=math.inf).refresh == math.inf
    assert ICalOnCall("https://example.com/on-call.ics", refresh=math.inf).refresh == math.inf
