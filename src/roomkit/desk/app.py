"""The standalone desk: the ``/api`` router, the page, and the headers that guard it.

:func:`create_desk_app` builds a FastAPI app to serve with uvicorn (``roomkit desk`` does).
The OpenAPI schema is at ``/api/openapi.json``. The page's files, when the folder exists,
are served at ``/``. Every HTTP response, errors included, carries a strict
Content-Security-Policy and ``X-Content-Type-Options: nosniff``, and those under ``/api``
``Cache-Control: no-store`` (:mod:`roomkit.desk.headers`); a request whose ``Host`` is not
one of the desk's names is refused.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import AsyncIterator, Collection
from contextlib import asynccontextmanager
from pathlib import Path

from fastapi import FastAPI
from starlette.staticfiles import StaticFiles

from roomkit.core.framework import RoomKit
from roomkit.desk.api import Desk
from roomkit.desk.auth import Authenticator
from roomkit.desk.headers import CONTENT_SECURITY_POLICY, SecurityHeaders
from roomkit.desk.limits import DeskLimits
from roomkit.desk.metrics import metrics_router
from roomkit.desk.startup import StartupCheck, check_stores
from roomkit.tools.human_input import HumanInputHandler

__all__ = ["CONTENT_SECURITY_POLICY", "SecurityHeaders", "create_desk_app"]

STATIC_DIR = Path(__file__).parent / "static"
"""Where the desk page's files ship."""


def create_desk_app(
    kit: RoomKit,
    *,
    handler: HumanInputHandler | None = None,
    secret: str | bytes | None = None,
    data_dir: str | os.PathLike[str] | None = None,
    allowed_origins: Collection[str] | None = None,
    allowed_hosts: Collection[str] | None = None,
    static_dir: str | os.PathLike[str] | None = None,
    auth: Authenticator | None = None,
    limits: DeskLimits | None = None,
    chat_channel_id: str | None = None,
) -> FastAPI:
    """The answer desk as an app: the API, the WebSocket and the page.

    Args:
        kit: the kit whose requests and rooms the desk shows.
        handler: the handler to show; the kit's only routed handler by default.
        secret: the desk's secret (else ``ROOMKIT_DESK_SECRET``, else the key file).
        data_dir: where the key file lives (``~/.roomkit/desk`` by default).
        allowed_origins: origins allowed to open the WebSocket (own host by default).
        allowed_hosts: ``Host`` names to answer to besides IP addresses, ``localhost`` and
            the server's own name, such as the DNS name the desk is served under or reached
            by through a proxy (``["*"]``: any); see :class:`~roomkit.desk.limits.HostRule`.
        static_dir: the page's files; the shipped page by default. Not served when the
            folder does not exist.
        auth: an authenticator to use instead of the desk's tokens.
        limits: body, frame, depth and rate limits.
        chat_channel_id: when given, also serve the chat routes (``roomkit.desk.chat``)
            for this channel.

    When the server starts the app, it reads once from the stores and refuses to start,
    with one line saying why, when one cannot be reached.

    ``app.state.desk`` is the :class:`~roomkit.desk.api.Desk`; ``app.state.desk_hub`` its
    hub (for a chat router added later).
    """
    desk = Desk(
        kit,
        handler=handler,
        auth=auth,
        secret=secret,
        data_dir=data_dir,
        allowed_origins=allowed_origins,
        allowed_hosts=allowed_hosts,
        limits=limits,
    )

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        yield
        await desk.aclose()

    app = FastAPI(
        title="roomkit answer desk",
        summary="Questions AI agents ask people, and their answers.",
        openapi_url="/api/openapi.json",
        docs_url=None,
        redoc_url=None,
        lifespan=lifespan,
    )
    app.state.desk = desk
    app.state.desk_hub = desk.hub
    # Refuse to start on a store that cannot be reached, rather than 503 every request.
    app.add_middleware(StartupCheck, check=lambda: check_stores(kit, desk.handler))
    app.include_router(desk.router)
    app.include_router(metrics_router(desk))
    if chat_channel_id is not None:
        chat = importlib.import_module("roomkit.desk.chat")
        app.include_router(
            chat.chat_router(kit, desk.hub, channel_id=chat_channel_id, limits=desk.limits)
        )
    folder = STATIC_DIR if static_dir is None else Path(static_dir)
    if folder.is_dir():
        app.mount("/", StaticFiles(directory=folder, html=True), name="desk-page")
    app.add_middleware(SecurityHeaders, hosts=desk.hosts)
    return app
