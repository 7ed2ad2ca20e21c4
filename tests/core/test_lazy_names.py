"""A package's lazy names load their module on first use, and only names it lists load."""

from __future__ import annotations

import pytest

import roomkit.desk
import roomkit.notify
from roomkit._lazy import lazy_exports


def test_a_lazy_name_is_the_object_of_its_module() -> None:
    from roomkit.desk.chat import chat_router
    from roomkit.notify.webhook import Webhook

    assert roomkit.desk.chat_router is chat_router
    assert roomkit.notify.Webhook is Webhook


def test_a_name_nobody_lists_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match=r"module 'roomkit.notify' has no attribute 'Nope'"):
        _ = roomkit.notify.Nope
    lazy = lazy_exports("roomkit", {"notify_surface": "notify.surface"})
    with pytest.raises(AttributeError, match=r"module 'roomkit' has no attribute 'Nope'"):
        lazy("Nope")
