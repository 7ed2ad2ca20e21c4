"""The standalone desk: the ``/api`` router, the page, and the headers that guard it.

:func:`create_desk_app` builds a FastAPI app to serve with uvicorn (``roomkit desk`` does).
:func:`mount_desk` serves the same (page, chat and API) under a path of your own FastAPI app.
The OpenAPI schema is at ``/api/openapi.json``. The page's files, when the folder exists,
are served at ``/``. Every HTTP response, errors included, carries a strict
Content-Security-Policy and ``X-Content-Type-Options: nosniff``, and those under ``/api``
``Cache-Control: no-store`` (:mod:`roomkit.desk.headers`); a request whose ``Host`` is not
one of the desk's names is refused.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from pathlib import Path
from typing import Any, Unpack

from fastapi import FastAPI
from starlette.routing import Match, Mount
from starlette.staticfiles import StaticFiles
from starlette.types import Scope

from roomkit.core.framework import RoomKit
from roomkit.desk.api import Desk
from roomkit.desk.headers import CONTENT_SECURITY_POLICY, SecurityHeaders
from roomkit.desk.metrics import metrics_router
from roomkit.desk.options import DeskOptions
from roomkit.desk.policy_counts import policy_router
from roomkit.desk.startup import StartupCheck, check_stores

__all__ = ["CONTENT_SECURITY_POLICY", "SecurityHeaders", "create_desk_app", "mount_desk"]

STATIC_DIR = Path(__file__).parent / "static"
"""Where the desk page's files ship."""


class _PageMount(Mount):
    """The page's files at ``/``, for every path but those under ``/api``.

    A mount at ``/`` matches every path, so it would answer a method an API route does not
    take (``GET`` on ``/api/requests/{id}/answer``) as a missing file (404), or with the
    files' ``Allow: GET, HEAD`` (405). Left out of ``/api``, such a request goes to the
    route, which answers 405 with its own ``Allow``; an unknown API path gets the JSON 404.
    """

    def __init__(self, files: StaticFiles) -> None:
        super().__init__("/", app=files, name="desk-page")

    def matches(self, scope: Scope) -> tuple[Match, Scope]:
        path: str = scope["path"]
        root: str = scope.get("root_path", "")
        if root and path.startswith(root):
            path = path[len(root) :]  # under mount_desk's path, the app's own path
        if path == "/api" or path.startswith("/api/"):
            return Match.NONE, {}
        return super().matches(scope)


def create_desk_app(
    kit: RoomKit | Desk,
    *,
    static_dir: str | os.PathLike[str] | None = None,
    chat_channel_id: str | None = None,
    **options: Unpack[DeskOptions],
) -> FastAPI:
    """The answer desk as an app: the API, the WebSocket and the page.

    Args:
        kit: the kit whose requests and rooms the desk shows, or a
            :class:`~roomkit.desk.api.Desk` already built.
        static_dir: the page's files; the shipped page by default. Not served when the
            folder does not exist.
        chat_channel_id: when given, also serve the chat routes (``roomkit.desk.chat``)
            for this channel.
        **options: the new desk's options (``handler``, ``auth``, ``secret``, ``data_dir``,
            ``allowed_origins``, ``allowed_hosts``, ``limits``; see
            :class:`~roomkit.desk.options.DeskOptions`); none with a ``Desk``.

    When the server starts the app, it reads once from the stores and refuses to start,
    with one line saying why, when one cannot be reached.

    ``app.state.desk`` is the :class:`~roomkit.desk.api.Desk`; ``app.state.desk_hub`` its
    hub (for a chat router added later).

    Raises:
        TypeError, ValueError: as :class:`~roomkit.desk.api.Desk`; a ``Desk`` given with
            options.
    """
    desk = Desk.of(kit, options, where="create_desk_app()")

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
    app.add_middleware(StartupCheck, check=lambda: check_stores(desk.kit, desk.handler))
    app.include_router(desk.router)
    app.include_router(metrics_router(desk))
    app.include_router(policy_router(desk))
    if chat_channel_id is not None:
        chat = importlib.import_module("roomkit.desk.chat")
        app.include_router(
            chat.chat_router(desk.kit, desk.hub, channel_id=chat_channel_id, limits=desk.limits)
        )
    folder = STATIC_DIR if static_dir is None else Path(static_dir)
    if folder.is_dir():
        app.router.routes.append(_PageMount(StaticFiles(directory=folder, html=True)))
    app.add_middleware(SecurityHeaders, hosts=desk.hosts)
    return app


def mount_desk(
    app: FastAPI,
    kit: RoomKit | Desk,
    *,
    path: str = "/desk",
    static_dir: str | os.PathLike[str] | None = None,
    chat_channel_id: str | None = None,
    **options: Unpack[DeskOptions],
) -> Desk:
    """Serve the desk (its page, the chat when asked, the API and the WebSocket) under
    ``path`` of your own FastAPI ``app``; the desk it serves.

    The page is at ``<path>/`` and finds its API beside it, so nothing else of ``app``
    changes. The desk starts and stops with ``app`` (a mounted app gets no lifespan of its
    own). To sign people in with your app's own accounts, give ``auth=``: an
    :class:`~roomkit.desk.auth.Authenticator` that turns the bearer token your page holds
    into a :class:`~roomkit.auth.Principal`.

    Args:
        app: your application.
        kit: as :func:`create_desk_app`.
        path: where the desk lives in ``app``, such as ``"/desk"`` (not ``"/"``: that is
            :func:`create_desk_app`'s).
        static_dir: as :func:`create_desk_app`.
        chat_channel_id: as :func:`create_desk_app`.
        **options: as :func:`create_desk_app`.

    Raises:
        ValueError: ``path`` is not a path under ``/``; as :func:`create_desk_app`.
        TypeError: as :func:`create_desk_app`.
    """
    if not isinstance(path, str) or not path.startswith("/") or path.rstrip("/") == "":
        raise ValueError(f"mount_desk(path=...) is a path under '/', such as '/desk'; got {path!r}")
    desk_app = create_desk_app(
        kit, static_dir=static_dir, chat_channel_id=chat_channel_id, **options
    )
    app.mount(path.rstrip("/"), desk_app, name="desk")
    outer = app.router.lifespan_context

    @asynccontextmanager
    async def lifespan(parent: Any) -> AsyncIterator[Any]:
        opened: AbstractAsyncContextManager[Any] = outer(parent)
        async with opened as state, desk_app.router.lifespan_context(desk_app):
            yield state

    app.router.lifespan_context = lifespan
    desk: Desk = desk_app.state.desk
    return desk
