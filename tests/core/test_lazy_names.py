"""A package's lazy names load their module on first use, and only names it lists load."""

from __future__ import annotations

import pytest

import roomkit.desk
import roomkit.notify
from roomkit.core.moved import lazy_attribute


def test_a_lazy_name_is_the_object_of_its_module() -> None:
    from roomkit.desk.chat import chat_router
    from roomkit.notify.webhook import Webhook

    assert roomkit.desk.chat_router is chat_router
    assert roomkit.notify.Webhook is Webhook


def test_a_name_nobody_lists_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match=r"module 'roomkit.notify' has no attribute 'Nope'"):
        _ = roomkit.notify.Nope
    with pytest.raises(AttributeError, match=r"module 'pkg' has no attribute 'json'"):
        lazy_attribute({"dumps": "json"}, "pkg", "json")
    assert lazy_attribute({"dumps": "json"}, "pkg", "dumps")([]) == "[]"
