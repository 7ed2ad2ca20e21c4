"""What the desk's JSON bodies must say they are: ``Content-Type: application/json``.

FastAPI reads a body as JSON only when its ``Content-Type`` says so (``application/json``,
or a ``+json`` type); any other body, or one with no ``Content-Type`` at all (what ``curl
-d`` sends is a form), reaches the route as bytes and fails its model with "Input should be
a valid dictionary", which names neither the header nor the fix. A route of the desk that
reads JSON answers such a body with 415 and a detail saying which header to send, and its
OpenAPI document lists that 415.
"""

from __future__ import annotations

import email.message
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse

__all__ = ["NOT_JSON", "not_json_refusal", "takes_json"]

NOT_JSON = (
    "The body must be sent as JSON, with the header Content-Type: application/json (it came {})"
)
"""The 415's detail; ``{}`` says which ``Content-Type`` the request had."""


def takes_json(route: Any) -> bool:
    """Whether the FastAPI ``route`` reads a JSON body (not a form, and not no body)."""
    from fastapi import params

    field = getattr(route, "body_field", None)
    return field is not None and not isinstance(field.field_info, params.Form)


def _is_json(content_type: str | None) -> bool:
    # The test FastAPI applies before it parses a body as JSON.
    if not content_type:
        return False
    message = email.message.Message()
    message["content-type"] = content_type
    subtype = message.get_content_subtype()
    return message.get_content_maintype() == "application" and (
        subtype == "json" or subtype.endswith("+json")
    )


async def not_json_refusal(route: Any, request: Request) -> JSONResponse | None:
    """The 415 for a body that ``route`` could not read because it was not sent as JSON;
    ``None`` when the route reads no JSON, or the body came as JSON (or there was none)."""
    content_type = request.headers.get("content-type")
    if not takes_json(route) or _is_json(content_type) or not await request.body():
        return None
    came = f"as {content_type[:100]!r}" if content_type else "with no Content-Type"
    return JSONResponse({"detail": NOT_JSON.format(came)}, status_code=415)
