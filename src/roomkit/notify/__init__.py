"""Reach people where they are: notification surfaces and what they are handed."""

from typing import TYPE_CHECKING, Any

from roomkit.notify.surface import DeliveryError, Directory, Notice, NoticeType, Person, Surface

if TYPE_CHECKING:
    from roomkit.notify.apprise import Apprise
    from roomkit.notify.slack import Slack

__all__ = [
    "Apprise",
    "DeliveryError",
    "Directory",
    "Notice",
    "NoticeType",
    "Person",
    "Slack",
    "Surface",
]

# Surfaces on an optional SDK import it only when named, so that the others need nothing.
_EXTRAS = {"Slack": "roomkit.notify.slack", "Apprise": "roomkit.notify.apprise"}


def __getattr__(name: str) -> Any:
    module = _EXTRAS.get(name)
    if module is None:
        raise AttributeError(f"module 'roomkit.notify' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(module), name)
