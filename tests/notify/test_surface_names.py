"""Every surface taking a ``name=`` refuses, when it is made, a name no history keeps as a
surface: the rule and the words of a settle's ``surface=``."""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Callable
from pathlib import Path

import pytest
from tests.notify.receiver import SECRET

import roomkit.notify
from roomkit.core.exceptions import InvalidTextError
from roomkit.notify import Apprise, Ntfy, Surface, Webhook, WebPush

Make = Callable[..., Surface]
"""Makes a surface with its data folder and the options given (``name=``, ``timeout=``)."""


def _a2a_push(folder: Path, **options: object) -> Surface:
    pytest.importorskip("a2a")
    from a2a.server.tasks import InMemoryPushNotificationConfigStore, InMemoryTaskStore

    from roomkit.adapters.a2a.push import A2APush

    configs = InMemoryPushNotificationConfigStore()
    return A2APush(InMemoryTaskStore(), configs, secret=SECRET, **options)  # type: ignore[arg-type]


SURFACES: dict[str, Make] = {
    "Webhook": lambda folder, **options: Webhook("https://example.com/hooks", SECRET, **options),
    "Ntfy": lambda folder, **options: Ntfy(
        "https://ntfy.example.com", "approvals-{actor}-k3v9q", **options
    ),
    "WebPush": lambda folder, **options: WebPush(
        "mailto:ops@example.com", data_dir=folder, **options
    ),
    "Apprise": lambda folder, **options: Apprise("json://127.0.0.1:9/notices", **options),
    "A2APush": _a2a_push,
}

BAD = [
    (7, TypeError, "must be a str, got int"),
    ("n" * 257, ValueError, "is 257 characters, over the 256 a surface may have"),
    ("desk\ud800", InvalidTextError, "surface must be valid Unicode text, but holds"),
]


@pytest.mark.parametrize("surface", list(SURFACES))
@pytest.mark.parametrize(("name", "error", "said"), BAD, ids=["type", "length", "text"])
def test_a_name_no_history_keeps_is_refused_when_the_surface_is_made(
    tmp_path: Path, surface: str, name: object, error: type[Exception], said: str
) -> None:
    """Refused at once, naming the argument and what a name may be; nothing is made (no
    key file written); a name as long as a surface may be is kept."""
    make = SURFACES[surface]
    with pytest.raises(error, match=rf"^{surface}\(name=\.\.\.\)[ :].*{said}"):
        make(tmp_path, name=name)
    assert list(tmp_path.iterdir()) == []
    made = make(tmp_path, name="n" * 256)
    try:
        assert made.name == "n" * 256
    finally:
        asyncio.run(made.aclose())


def surfaces_taking(parameter: str) -> set[str]:
    """The surfaces of ``roomkit.notify`` made with ``parameter``."""
    return {
        export
        for export in roomkit.notify.__all__
        if inspect.isclass(cls := getattr(roomkit.notify, export))
        and hasattr(cls, "send")
        and parameter in inspect.signature(cls).parameters
    }


def test_every_surface_taking_a_name_is_checked_here() -> None:
    """A surface added to ``roomkit.notify`` with a ``name=`` joins the test above."""
    assert surfaces_taking("name") == set(SURFACES) - {"A2APush"}
