"""Every surface taking a ``timeout=`` refuses, when it is made, one no exchange can keep:
taken, it would fail every delivery (a negative one retried for a day, a string raising a
traceback, an infinite one refusing each device)."""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.notify.test_surface_names import SURFACES, surfaces_taking

from roomkit.notify import Email

TIMED = {
    **{name: SURFACES[name] for name in ("Webhook", "Ntfy", "WebPush")},
    "Email": lambda folder, **options: Email(
        "smtp.example.com", sender="desk@example.com", **options
    ),
}
"""The surfaces taking a ``timeout=``."""

BAD = [
    (0, ValueError),
    (-1, ValueError),
    (float("nan"), ValueError),
    (float("inf"), ValueError),
    (1e300, ValueError),
    ("10", TypeError),
    (None, TypeError),
]


@pytest.mark.parametrize("surface", list(TIMED))
@pytest.mark.parametrize(("timeout", "error"), BAD)
def test_a_timeout_no_exchange_can_keep_is_refused_when_the_surface_is_made(
    tmp_path: Path, surface: str, timeout: object, error: type[Exception]
) -> None:
    """Refused at once, naming the argument; nothing is made (no key file written)."""
    with pytest.raises(error, match=rf"^{surface}\(timeout=\.\.\.\) must be"):
        TIMED[surface](tmp_path, timeout=timeout)
    assert list(tmp_path.iterdir()) == []


def test_every_surface_taking_a_timeout_is_checked_here() -> None:
    """A surface added to ``roomkit.notify`` with a ``timeout=`` joins the test above."""
    assert surfaces_taking("timeout") == set(TIMED)
