"""The desk's route class: what every route of the desk's API does around its endpoint.

A route that takes a body admits its caller first (:func:`~roomkit._admission.admit_first`:
no token, a refused one or an empty rate-limit bucket is answered without a byte of the body
read), then checks the body before anything parses it (its size and its JSON:
:func:`~roomkit.desk.limits.capped_route`); a request that fails validation gets 422 with one
line naming the field, or 415 when its body was not sent as JSON
(:mod:`roomkit.desk.media`); a store that cannot be reached gets 503; and every response,
errors included, carries the desk's headers (:func:`~roomkit.desk.headers.guard`). The
``/api`` router, the chat routes, push subscriptions and the policy counts all use it.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Coroutine
from typing import Any

from fastapi.exceptions import RequestValidationError
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.types import Receive, Scope, Send

from roomkit._admission import admit_first, route_dependencies, route_overrides
from roomkit._storable import unencodable_text
from roomkit.core.exceptions import CorruptRecordError, StoreError
from roomkit.desk.headers import guard
from roomkit.desk.limits import DeskLimits, capped_route
from roomkit.desk.media import not_json_refusal

__all__ = ["UNAVAILABLE", "desk_route_class"]

logger = logging.getLogger("roomkit.desk")

UNAVAILABLE = "The request store is unavailable: try again"
"""The 503's detail when the request store cannot be reached."""
UNREADABLE = (
    "A stored record cannot be read: roomkit did not write it so (a damaged disk or a hand "
    "edit). The desk's log names it; `roomkit audit verify` names what breaks a request's "
    "history"
)
"""The 500's detail when the store holds a record roomkit did not write."""
NO_BODY = "The request has no body: send a JSON object, with Content-Type: application/json"
"""The 422's detail when a route that reads a JSON body got none."""


def _validation_detail(error: RequestValidationError) -> str:
    first = next(iter(error.errors()), None)
    if first is None:
        return "Invalid request"
    if first.get("type") == "string_unicode":
        # A lone surrogate where no field checks its text (a key): say where it is.
        problem = unencodable_text(error.body)
        if problem is not None:
            return (
                f"The body must be valid Unicode text, but holds {problem}: send it as UTF-8 text"
            )
    if first.get("type") == "missing" and tuple(first.get("loc", ())) == ("body",):
        return NO_BODY
    where = ".".join(str(part) for part in first.get("loc", ()) if part != "body")
    message = str(first.get("msg", "invalid"))
    return f"{where}: {message}"[:300] if where else message[:300]


def _store_failure(error: StoreError, on_store_error: Callable[[], None] | None) -> Response:
    """The answer to a store that failed a route: 500 for a record roomkit did not write,
    503 (after ``on_store_error()``) for a store that cannot be reached."""
    if isinstance(error, CorruptRecordError):
        # Not an outage: the store answered with what roomkit did not write.
        logger.error(
            "The desk read a stored record it cannot read: %s",
            error,
            extra={"event": "corrupt_record"},
        )
        return JSONResponse({"detail": UNREADABLE}, status_code=500)
    if on_store_error is not None:
        on_store_error()
    # One line per failed request: an outage is not a bug to trace.
    logger.warning(
        "The desk could not reach the request store: %s",
        error,
        extra={"event": "store_error"},
    )
    return JSONResponse({"detail": UNAVAILABLE}, status_code=503)


def desk_route_class(
    limits: DeskLimits, *, on_store_error: Callable[[], None] | None = None
) -> type[Any]:
    """The desk's route class: bodies capped before parsing; validation errors, a body not
    sent as JSON and an unreachable store reported as ``{"detail": str}`` (422, 415, 503,
    after ``on_store_error()``);
    the desk's security headers and ``Cache-Control: no-store`` on every response, errors
    included, wherever the router is mounted. The chat routes use it too.
    """
    capped = capped_route(limits)

    class DeskRoute(capped):  # type: ignore[valid-type, misc]
        """Admits the caller, then checks bodies, before anything reads them; reports
        validation errors, a stored record that cannot be read and an unreachable store as
        ``{"detail": str}`` (422, 500, 503); sets the desk's headers."""

        async def handle(self, scope: Scope, receive: Receive, send: Send) -> None:
            await guard(self._admitted_first, scope, receive, send, api=True)

        async def _admitted_first(self, scope: Scope, receive: Receive, send: Send) -> None:
            try:
                await admit_first(
                    route_dependencies(self, scope),
                    self.methods,
                    scope,
                    overrides=route_overrides(self, scope),
                )
            except StoreError as error:
                await _store_failure(error, on_store_error)(scope, receive, send)
                return
            await super().handle(scope, receive, send)

        def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
            handler = super().get_route_handler()

            async def reported(request: Request) -> Response:
                try:
                    response: Response = await handler(request)
                except RequestValidationError as error:
                    not_json = await not_json_refusal(self, request)
                    if not_json is not None:
                        return not_json
                    return JSONResponse({"detail": _validation_detail(error)}, status_code=422)
                except StoreError as error:
                    return _store_failure(error, on_store_error)
                return response

            return reported

    return DeskRoute
