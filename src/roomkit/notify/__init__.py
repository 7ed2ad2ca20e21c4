"""Reach people where they are: the notifier, its surfaces, and ladders for requests left waiting.

``Webhook`` and ``Email`` need the ``notify`` extra (standardwebhooks, aiosmtplib), ``Slack``,
``Apprise`` and ``WebPush`` (the ``push`` extra) theirs; each loads on first use.
``EmailFiles`` (messages as ``.eml`` files, for local work) and ``Ntfy`` need nothing.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from roomkit._lazy import lazy_exports
from roomkit.notify.email_files import EmailFiles
from roomkit.notify.notifier import Notifier, NotifierStatistics
from roomkit.notify.retry import Retry
from roomkit.notify.surface import DeliveryError, Directory, Notice, NoticeType, Person, Surface
from roomkit.tools.human_input.ladder import Ladder, default, escalate, remind

if TYPE_CHECKING:
    from roomkit.notify.apprise import Apprise
    from roomkit.notify.email import Email
    from roomkit.notify.ntfy import Ntfy
    from roomkit.notify.slack import Slack
    from roomkit.notify.webhook import Webhook
    from roomkit.notify.webpush import WebPush

__all__ = [
    "Apprise",
    "DeliveryError",
    "Directory",
    "Email",
    "EmailFiles",
    "Ladder",
    "Notice",
    "NoticeType",
    "Notifier",
    "NotifierStatistics",
    "Ntfy",
    "Person",
    "Retry",
    "Slack",
    "Surface",
    "WebPush",
    "Webhook",
    "default",
    "escalate",
    "remind",
]

# Surfaces on an optional package import it only when named, so that the others need nothing.
_EXTRAS = {
    "Slack": "slack",
    "Apprise": "apprise",
    "Webhook": "webhook",
    "Email": "email",
    "Ntfy": "ntfy",
    "WebPush": "webpush",
}

__getattr__ = lazy_exports(__name__, _EXTRAS)
