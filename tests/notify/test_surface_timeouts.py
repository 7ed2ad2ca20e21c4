"""Every surface taking a ``timeout=`` refuses, when it is made, one no exchange can keep:
taken, it would fail every delivery (a negative one retried for a day, a string raising a
traceback, an infinite one refusing each device)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from tests.notify.receiver import SECRET

from roomkit.notify import Ntfy, Surface, Webhook, WebPush

Make = Callable[[object, Path], Surface]

SURFACES: dict[str, Make] = {
    "Webhook": lambda timeout, folder: Webhook(
        "https://example.com/hooks",
        SECRET,
        timeout=timeout,  # type: ignore[arg-type]
    ),
    "Ntfy": lambda timeout, folder: Ntfy(
        "https://ntfy.example.com",
        "approvals-{actor}-k3v9q",
        timeout=timeout,  # type: ignore[arg-type]
    ),
    "WebPush": lambda timeout, folder: WebPush(
        "mailto:ops@example.com",
        data_dir=folder,
        timeout=timeout,  # type: ignore[arg-type]
    ),
}

BAD = [
    (0, ValueError),
    (-1, ValueError),
    (float("nan"), ValueError),
    (float("inf"), ValueError),
    ("10", TypeError),
    (None, TypeError),
]


@pytest.mark.parametrize("surface", list(SURFACES))
@pytest.mark.parametrize(("timeout", "error"), BAD)
def test_a_timeout_no_exchange_can_keep_is_refused_when_the_surface_is_made(
    tmp_path: Path, surface: str, timeout: object, error: type[Exception]
) -> None:
    """Refused at once, naming the argument; nothing is made (no key file written)."""
    with pytest.raises(error, match=rf"^{surface}\(timeout=\.\.\.\) must be"):
        SURFACES[surface](timeout, tmp_path)
    assert list(tmp_path.iterdir()) == []
