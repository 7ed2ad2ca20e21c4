"""Every surface taking a ``retry=`` refuses, when it is made, one that is no ``Retry``: taken,
it failed the first back-off inside the notifier's loop (``'int' object has no attribute
'delay'``), naming neither the surface nor the argument; and a ``Retry`` refuses a value it
cannot keep."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path

import pytest
from tests.notify.recorder import Recorder
from tests.notify.test_surface_names import surfaces_taking
from tests.notify.test_surface_timeouts import TIMED

from roomkit.notify import Notifier, Retry
from roomkit.tools.human_input import HumanInputHandler

WRONG = [5, "60", {"first": 1.0}, Retry]


@pytest.mark.parametrize("surface", list(TIMED))
@pytest.mark.parametrize("retry", WRONG, ids=repr)
def test_a_retry_that_is_no_retry_is_refused_when_the_surface_is_made(
    tmp_path: Path, surface: str, retry: object
) -> None:
    """Refused at once, naming the argument and what to give; nothing is made."""
    with pytest.raises(TypeError, match=rf"^{surface}\(retry=\.\.\.\) must be a Retry \("):
        TIMED[surface](tmp_path, retry=retry)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("surface", list(TIMED))
def test_a_retry_or_none_is_taken(tmp_path: Path, surface: str) -> None:
    policy = Retry(first=2.0)
    assert TIMED[surface](tmp_path, retry=policy).retry is policy  # type: ignore[attr-defined]
    assert isinstance(TIMED[surface](tmp_path, retry=None).retry, Retry)  # type: ignore[attr-defined]


def test_every_surface_taking_a_retry_is_checked_here() -> None:
    """A surface added to ``roomkit.notify`` with a ``retry=`` joins the tests above."""
    assert surfaces_taking("retry") == set(TIMED)


def test_a_surface_of_its_own_whose_retry_is_no_retry_is_refused_by_the_notifier() -> None:
    """A surface written by the application is checked when the notifier takes it."""
    recorder = Recorder("mine")
    recorder.retry = 5  # type: ignore[attr-defined]
    with pytest.raises(TypeError, match=r"^surface 'mine''s retry must be a Retry \(.*got 5$"):
        Notifier(HumanInputHandler(), [recorder])


@pytest.mark.parametrize(
    ("given", "error", "said"),
    [
        ({"first": 1e300}, ValueError, r"^Retry\(first=\.\.\.\) .*at most 3153600000 \(a century"),
        ({"cap": 4e9}, ValueError, r"^Retry\(cap=\.\.\.\) .*at most 3153600000 \(a century"),
        ({"give_up": 1e12}, ValueError, r"^Retry\(give_up=\.\.\.\) .*a century"),
        ({"give_up": 0}, ValueError, r"^Retry\(give_up=\.\.\.\) must be a positive"),
        ({"first": "1"}, TypeError, r"^Retry\(first=\.\.\.\) must be a number of seconds"),
        ({"cap": True}, TypeError, r"^Retry\(cap=\.\.\.\) must be a number of seconds"),
        ({"jitter": Decimal("0.5")}, TypeError, r"^Retry\(jitter=\.\.\.\) is a share .*Decimal"),
        ({"jitter": "0.5"}, TypeError, r"^Retry\(jitter=\.\.\.\) is a share .*'0\.5'"),
        ({"jitter": False}, TypeError, r"^Retry\(jitter=\.\.\.\) is a share .*False"),
        ({"jitter": float("nan")}, ValueError, r"^Retry\(jitter=\.\.\.\) is a share .*nan"),
        ({"jitter": 1}, ValueError, r"^Retry\(jitter=\.\.\.\) is a share .*got 1$"),
    ],
    ids=lambda value: repr(value) if isinstance(value, dict) else "",
)
def test_a_retry_with_a_wrong_value_is_refused_when_it_is_made(
    given: dict[str, object], error: type[Exception], said: str
) -> None:
    """Refused naming the value, rather than a wait past a century taken or a jitter failing
    each retry inside the notifier as arithmetic naming nothing."""
    with pytest.raises(error, match=said):
        Retry(**given)  # type: ignore[arg-type]


def test_a_retry_of_up_to_a_century_is_taken() -> None:
    assert Retry(first=0.5, cap=3_153_600_000, give_up=3_153_600_000, jitter=0).delay(1) == 0.5
