"""Web Push in the desk: its public VAPID key, and the signed-in person's subscriptions.

- ``GET /api/push/key``: ``{"public_key": ...}``, the desk's VAPID public key (unpadded
  base64url), made once and kept in the desk's data folder
  (:func:`~roomkit.notify.push_subscriptions.load_or_create_vapid_key`); 404 when the desk
  was given no data folder (``data_dir=``; ``roomkit desk`` gives its own), has no ``push``
  extra installed, or cannot use its key file (its log says why), saying what to do.
- ``POST /api/push/subscriptions``: the browser's ``PushSubscription.toJSON()``, kept for
  the signed-in person (a device subscribed again, with its own keys, moves to whoever
  subscribed it last); 400 when its endpoint is not on a push service's host
  (:class:`~roomkit.notify.push_hosts.PushHosts`: the browsers' own, and ``push_hosts=``);
  409 when another person has its endpoint with other keys (it stays theirs).
- ``DELETE /api/push/subscriptions``: ``{"endpoint": ...}``, forgets that device of theirs.

An answer link speaks for one request, not for its person: it may not subscribe (403). The
subscriptions are what :class:`~roomkit.notify.webpush.WebPush` pushes to, read from the same
folder (give it the desk's ``data_dir``).
"""

# No `from __future__ import annotations`: FastAPI reads the endpoints' annotations at runtime.

import asyncio
import logging
import os
from collections.abc import Collection
from functools import partial
from typing import TYPE_CHECKING, Annotated, Any

from fastapi import APIRouter, Depends, HTTPException
from pydantic import BaseModel, ConfigDict, Field

from roomkit._extras import install_command
from roomkit.desk.auth import Principal
from roomkit.desk.gate import signed_in
from roomkit.desk.route_class import desk_route_class
from roomkit.desk.shapes import error_responses
from roomkit.notify.push_hosts import PushHosts
from roomkit.notify.push_subscriptions import (
    MAX_ENDPOINT_CHARS,
    PushSubscriptions,
    load_or_create_vapid_key,
    subscription_of,
    vapid_public_key,
)

if TYPE_CHECKING:
    from roomkit.desk.api import Desk

__all__ = ["PushKeyView", "PushSubscriptionBody", "push_router"]

logger = logging.getLogger("roomkit.desk")


_ERRORS = {
    400: "The body is not JSON the desk takes, or its endpoint is on no listed push service",
    401: "Missing, invalid or expired token",
    403: "An answer link, not a signed-in person",
    404: "This desk sends no push messages (the detail says why)",
    409: "Another person's device has this endpoint, with other keys",
    413: "Body over the size cap",
    415: "The body was not sent as JSON (Content-Type: application/json)",
    422: "Not a push subscription (the detail names the problem)",
    429: "Rate limited (see Retry-After)",
}


_errors = partial(error_responses, _ERRORS)


class PushKeyView(BaseModel):
    """The desk's VAPID public key, as ``PushManager.subscribe`` takes it."""

    public_key: str


class PushKeys(BaseModel):
    """A subscription's keys."""

    model_config = ConfigDict(strict=True)

    p256dh: str = Field(max_length=200)
    auth: str = Field(max_length=200)


class PushSubscriptionBody(BaseModel):
    """A browser's push subscription (``PushSubscription.toJSON()``)."""

    model_config = ConfigDict(strict=True)

    endpoint: str = Field(min_length=1, max_length=MAX_ENDPOINT_CHARS)
    keys: PushKeys | None = None
    expirationTime: float | None = None


class PushStateView(BaseModel):
    """What the desk keeps for the caller: how many devices get their pushes."""

    devices: int


def push_router(
    desk: "Desk",
    data_dir: str | os.PathLike[str] | None,
    push_hosts: Collection[str] | None = None,
) -> APIRouter:
    """The routes above, for ``desk`` (the desk adds them under ``/api``), keeping the key and
    the subscriptions in ``data_dir`` (none without one: a desk given no data folder writes
    nothing to disk), taking subscriptions on the push services' hosts and ``push_hosts``
    (those of the desk's notifier's WebPush when not given)."""
    router = APIRouter(
        prefix="/push",
        tags=["push"],
        route_class=desk_route_class(desk.limits, on_store_error=desk.metrics.store_error),
    )
    subscriptions = None if data_dir is None else PushSubscriptions(data_dir)
    hosts = PushHosts(push_hosts) if push_hosts is not None else _notifier_hosts(desk)
    Caller = Annotated[Principal, Depends(desk.gate)]
    key: list[str] = []

    def kept() -> PushSubscriptions:
        if subscriptions is None:
            raise HTTPException(
                status_code=404,
                detail="This desk sends no push messages: give it a data folder (data_dir=...)",
            )
        return subscriptions

    def public_key() -> str:
        kept()
        if not key:
            try:
                key.append(vapid_public_key(load_or_create_vapid_key(data_dir)))
            except ImportError:
                raise HTTPException(
                    status_code=404,
                    detail=f"This desk sends no push messages: {install_command('push')}",
                ) from None
            except ValueError as error:
                # The file's path stays in the log: the caller is told only where to look.
                logger.error("The desk sends no push messages: %s", error)
                raise HTTPException(
                    status_code=404,
                    detail="This desk sends no push messages: its VAPID key cannot be used "
                    "(the desk's log says why)",
                ) from None
        return key[0]

    @router.get("/key", response_model=PushKeyView, responses=_errors(401, 404, 429))
    async def get_key(caller: Caller) -> PushKeyView:
        """The desk's VAPID public key, to subscribe with."""
        return PushKeyView(public_key=await asyncio.to_thread(public_key))

    # Subscribing and unsubscribing answer alike: the caller's device count, or these errors.
    device_routes: dict[str, Any] = {
        "response_model": PushStateView,
        "responses": _errors(400, 401, 403, 404, 413, 415, 422, 429),
    }

    async def devices(actor: str) -> PushStateView:
        return PushStateView(devices=len(await asyncio.to_thread(kept().of, actor)))

    @router.post(
        "/subscriptions",
        response_model=PushStateView,
        responses=_errors(400, 401, 403, 404, 409, 413, 415, 422, 429),
    )
    async def subscribe(caller: Caller, body: PushSubscriptionBody) -> PushStateView:
        """Keep this browser's subscription for the caller."""
        actor = signed_in(caller, "turn notifications on")
        await asyncio.to_thread(public_key)  # a desk that cannot push keeps no subscription
        try:
            subscription = subscription_of(body.model_dump())
        except ValueError as error:
            raise HTTPException(status_code=422, detail=str(error)) from None
        problem = hosts.problem(subscription.endpoint)
        if problem is not None:
            # The page asks the person to turn to whoever runs the desk: the log says what to
            # change.
            event = {"event": "push_refused", "actor": actor}
            logger.warning("Refused a push subscription of %s: %s", actor, problem, extra=event)
            raise HTTPException(status_code=400, detail=problem)
        if not await asyncio.to_thread(kept().add, actor, subscription):
            raise HTTPException(
                status_code=409,
                detail="Another person's device has this endpoint, with other keys: on this "
                "browser, call unsubscribe() on its PushSubscription, then "
                "PushManager.subscribe() again for a new endpoint and keys of its own",
            )
        return await devices(actor)

    @router.delete("/subscriptions", **device_routes)
    async def unsubscribe(caller: Caller, body: PushSubscriptionBody) -> PushStateView:
        """Forget this browser's subscription (the caller's own only)."""
        actor = signed_in(caller, "turn notifications on")
        await asyncio.to_thread(kept().remove, body.endpoint, actor_id=actor)
        return await devices(actor)

    return router


def _notifier_hosts(desk: "Desk") -> PushHosts:
    """The hosts of the desk's notifier's WebPush surface (the one pushing to what the desk
    keeps), else the push services' own."""
    surfaces = desk.notifier.surfaces.values() if desk.notifier is not None else ()
    found = (getattr(surface, "push_hosts", None) for surface in surfaces)
    return next((hosts for hosts in found if isinstance(hosts, PushHosts)), PushHosts())
