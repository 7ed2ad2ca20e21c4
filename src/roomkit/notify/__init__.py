"""Reach people where they are: the notifier, its surfaces, and ladders for requests left waiting.

``Webhook`` needs the ``notify`` extra (httpx, standardwebhooks), ``Email`` too (aiosmtplib);
both load on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from roomkit.notify.notifier import Notifier, NotifierStatistics
from roomkit.notify.retry import Retry
from roomkit.notify.surface import DeliveryError, Directory, Notice, NoticeType, Person, Surface
from roomkit.tools.human_input.ladder import Ladder, default, escalate, remind

if TYPE_CHECKING:
    from roomkit.notify.email import Email
    from roomkit.notify.webhook import Webhook

__all__ = [
    "DeliveryError",
    "Directory",
    "Email",
    "Ladder",
    "Notice",
    "NoticeType",
    "Notifier",
    "NotifierStatistics",
    "Person",
    "Retry",
    "Surface",
    "Webhook",
    "default",
    "escalate",
    "remind",
]


def __getattr__(name: str) -> Any:
    # The surfaces load on first use: their packages come with the notify extra.
    if name == "Webhook":
        from roomkit.notify.webhook import Webhook

        return Webhook
    if name == "Email":
        from roomkit.notify.email import Email

        return Email
    raise AttributeError(f"module 'roomkit.notify' has no attribute {name!r}")
