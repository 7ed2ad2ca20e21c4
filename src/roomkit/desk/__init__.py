"""The answer desk: where people see the questions agents ask them, and answer.

A FastAPI router (``desk_router``) to embed in an app, or a standalone app
(``create_desk_app``, served by ``roomkit desk``): REST endpoints under ``/api``, a
WebSocket at ``/api/ws`` that pushes questions and outcomes, the desk page, and its figures
for Prometheus at ``/metrics`` (``metrics_router``). Callers authenticate with bearer
tokens the desk signs (``issue_token``, ``issue_answer_link``, ``issue_sign_in_link``), or
with an authenticator of the application's own. Its options are declared once, in
``DeskOptions``. Needs the ``desk`` extra.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from roomkit._extras import requires_extra
from roomkit._lazy import lazy_exports

# The desk's web framework and figures come with the desk extra: without it, say so.
with requires_extra("roomkit.desk", "desk"):
    from roomkit.desk.api import Desk, default_handler, desk_router
    from roomkit.desk.app import create_desk_app, mount_desk
    from roomkit.desk.auth import Access, Authenticator, LinkLedger, Principal, TokenAuthenticator
    from roomkit.desk.gate import Gate
    from roomkit.desk.hub import DeskHub
    from roomkit.desk.limits import DeskLimits
    from roomkit.desk.metrics import DeskMetrics, metrics_router
    from roomkit.desk.options import DeskOptions
    from roomkit.desk.routes import DeskRouter
    from roomkit.desk.shapes import AnswerBody, Kind, RejectBody, RequestView, kind_of
    from roomkit.desk.stores import open_stores
    from roomkit.desk.tokens import (
        SECRET_ENV,
        issue_answer_link,
        issue_sign_in_link,
        issue_token,
        load_or_create_secret,
        resolve_secret,
    )

if TYPE_CHECKING:
    from roomkit.desk.chat import chat_router

__all__ = [
    "SECRET_ENV",
    "Access",
    "AnswerBody",
    "Authenticator",
    "Desk",
    "DeskHub",
    "DeskLimits",
    "DeskMetrics",
    "DeskOptions",
    "DeskRouter",
    "Gate",
    "Kind",
    "LinkLedger",
    "Principal",
    "RejectBody",
    "RequestView",
    "TokenAuthenticator",
    "chat_router",
    "create_desk_app",
    "default_handler",
    "desk_router",
    "issue_answer_link",
    "issue_sign_in_link",
    "issue_token",
    "kind_of",
    "load_or_create_secret",
    "metrics_router",
    "mount_desk",
    "open_stores",
    "resolve_secret",
]


# The chat routes load on first use: an app without chat never imports them.
__getattr__ = lazy_exports(__name__, {"chat_router": "chat"})
