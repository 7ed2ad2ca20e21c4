"""The names the notifier's documentation uses import from where it says."""

from __future__ import annotations

import roomkit.notify


def test_the_documented_imports_resolve() -> None:
    from roomkit.notify import (  # noqa: F401 (importing is the test)
        Directory,
        Email,
        Ladder,
        Notifier,
        Person,
        Webhook,
        default,
        escalate,
        remind,
    )


def test_every_exported_name_resolves() -> None:
    for name in roomkit.notify.__all__:
        assert getattr(roomkit.notify, name) is not None
