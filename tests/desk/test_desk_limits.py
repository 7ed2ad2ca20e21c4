"""The desk's limits: token buckets, JSON checks, origins, the limits' own validation."""

from __future__ import annotations

import pytest

from roomkit.desk import DeskLimits
from roomkit.desk.limits import RateLimiter, json_problem, origin_allowed


def test_a_bucket_allows_a_burst_then_the_rate() -> None:
    now = [0.0]
    limiter = RateLimiter(2.0, 3, clock=lambda: now[0])
    assert [limiter.take("a") for _ in range(3)] == [0.0, 0.0, 0.0]
    assert limiter.take("a") == pytest.approx(0.5)
    now[0] = 0.5
    assert limiter.take("a") == 0.0
    assert limiter.take("b") == 0.0, "each key has its own bucket"


def test_full_buckets_are_forgotten_when_many_keys_pile_up() -> None:
    now = [0.0]
    limiter = RateLimiter(1.0, 1, clock=lambda: now[0])
    for index in range(10_001):
        limiter.take(f"k{index}")
    now[0] = 10.0
    limiter.take("fresh")
    assert len(limiter._buckets) == 1


@pytest.mark.parametrize(
    ("body", "problem"),
    [
        (b"{", "not valid JSON"),
        (b"[" * 40 + b"]" * 40, "40 levels deep; at most 32"),
        (b"[" * 100_000, "100000 levels deep"),
        (b'{"a": NaN}', "NaN, which is not a JSON number"),
        (b'{"a": 1e999}', "beyond a float's range"),
        (b'{"a": ' + b"9" * 5000 + b"}", "5000 characters long"),
        (b'{"a": 1, "a": 2}', "names the key 'a' twice"),
        (b"\xff\xfe", "not UTF-8"),
    ],
)
def test_bad_json_bodies_name_their_problem(body: bytes, problem: str) -> None:
    found = json_problem(body, 32)
    assert found is not None
    assert problem in found


def test_a_sound_body_has_no_problem() -> None:
    assert json_problem(b'{"answer": [1, 2.5, "x", null, {"a": [true]}]}', 32) is None


@pytest.mark.parametrize(
    ("origin", "host", "allowed", "verdict"),
    [
        (None, "desk:8765", None, True),
        ("http://desk:8765", "desk:8765", None, True),
        ("http://DESK:8765", "desk:8765", None, True),
        ("http://evil:8765", "desk:8765", None, False),
        ("null", "desk:8765", None, False),
        ("http://desk:8765", None, None, False),
        ("https://app.example", "desk:8765", {"https://app.example"}, True),
        ("http://desk:8765", "desk:8765", {"https://app.example"}, False),
        ("http://anything", "desk", {"*"}, True),
    ],
)
def test_origins_are_checked_against_the_host_or_the_list(
    origin: str | None, host: str | None, allowed: set[str] | None, verdict: bool
) -> None:
    assert origin_allowed(origin, host, allowed) is verdict


@pytest.mark.parametrize(
    "options",
    [
        {"max_body": 0},
        {"burst": True},
        {"rate": 0},
        {"rate": 10**400},
        {"admin_rate": 1e-320},
        {"auth_timeout": float("inf")},
        {"send_timeout": 0},
        {"head_timeout": 10**400},
        {"body_timeout": float("nan")},
    ],
)
def test_limits_refuse_nonsense(options: dict) -> None:
    with pytest.raises(ValueError, match="DeskLimits"):
        DeskLimits(**options)
