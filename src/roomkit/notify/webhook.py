"""Webhooks: one signed JSON POST per notice, per the Standard Webhooks specification.

The body is a flat JSON object (``type``, ``pending_id``, ``kind``, ``tool``, ``arguments``,
``actor``, ``approvers``, ``room``, ``deadline``, ``outcome``, ``answered_by``,
``answered_via``, ``answer_url``, ``answer_urls``). The headers ``webhook-id`` (the same on
every retry of one delivery, so a receiver drops repeats), ``webhook-timestamp`` and
``webhook-signature`` let the receiver check it with the ``standardwebhooks`` package and
the ``whsec_...`` secret.
"""

from __future__ import annotations

import json
import logging
import ssl
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from roomkit._extras import requires_extra
from roomkit.models.clock import bounded_seconds

with requires_extra("roomkit.notify.Webhook", "notify"):
    from standardwebhooks import Webhook as _Signer

from roomkit._urls import http_url
from roomkit.notify._header_values import header_name_problem, header_value_problem
from roomkit.notify._http import Origin
from roomkit.notify._lanes import retry_policy
from roomkit.notify.retry import Retry
from roomkit.notify.surface import DeliveryError, Notice, Person, surface_name

__all__ = ["Webhook", "webhook_body"]

logger = logging.getLogger("roomkit.notify")

_RETRIED = frozenset({408, 429})
_USER_AGENT = "roomkit-notify"
# Set by the webhook itself on every POST: another of each would contradict it.
_OWN_HEADERS = frozenset(
    {
        "host",
        "content-length",
        "transfer-encoding",
        "connection",
        "content-type",
        "webhook-id",
        "webhook-timestamp",
        "webhook-signature",
    }
)


def webhook_body(notice: Notice) -> dict[str, Any]:
    """The flat JSON object a webhook posts for ``notice``."""
    request = notice.request
    return {
        "type": notice.type,
        "pending_id": request.pending_id,
        "kind": getattr(request, "kind", "question"),
        "tool": request.tool_name,
        "arguments": request.arguments,
        "actor": request.actor_id,
        "approvers": list(notice.approvers),
        "room": request.room_id,
        "created_at": request.created_at.isoformat(),
        "deadline": None if notice.deadline_at is None else notice.deadline_at.isoformat(),
        "outcome": notice.outcome,
        "answered_by": notice.answered_by,
        "answered_via": notice.answered_via,
        "answer_url": notice.answer_url,
        "answer_urls": dict(notice.answer_urls),
        "desk_url": notice.desk_url,
    }


def _failure(error: OSError) -> str:
    """What went wrong with a POST, in a few words and what to check."""
    if isinstance(error, TimeoutError):
        return "did not answer in time"
    if isinstance(error, ssl.SSLCertVerificationError):
        return (
            f"has a TLS certificate that does not verify ({error.verify_message}): check "
            "the receiver's certificate and its chain"
        )
    if isinstance(error, ssl.SSLError):
        return f"failed the TLS handshake ({error.reason or error}): check that it serves HTTPS"
    if isinstance(error, ConnectionError) and not isinstance(error, ConnectionRefusedError):
        return f"broke off the exchange ({error})"
    return (
        f"is unreachable ({type(error).__name__}: {error}): check the URL and that the "
        "receiver is running"
    )


def _extra_headers(headers: Mapping[str, str] | None) -> dict[str, str]:
    """The ``headers=`` to send with each POST, their values without surrounding whitespace
    (the newline a file read for a token ends with); one that cannot be sent, refused."""
    if headers is None:
        return {}
    if not isinstance(headers, Mapping):
        raise TypeError(
            "Webhook(headers=...) takes a mapping of header names to values, such as "
            f"{{'Authorization': 'Bearer ...'}}, not {type(headers).__name__}"
        )
    checked: dict[str, str] = {}
    for name, value in headers.items():
        problem = header_name_problem(name)
        if problem is not None:
            raise ValueError(f"Webhook(headers=...): the header name {name!r} {problem}")
        if name.lower() in _OWN_HEADERS:
            raise ValueError(
                f"Webhook(headers=...): {name!r} is set by the webhook itself on every POST; "
                "leave it out"
            )
        text = value.strip() if isinstance(value, str) else value
        problem = header_value_problem(text)
        if problem is not None:
            # The value may be a secret: only its header is named.
            raise ValueError(
                f"Webhook(headers=...): the value of {name!r} {problem}: check where it "
                "came from (a file or variable it was read from, say)"
            )
        checked[name] = text
    return checked


class Webhook:
    """POST each notice to ``url``, signed with ``secret``.

    Args:
        url: the receiver (``https://`` in production; ``http://`` for a local one).
        secret: the signing secret in its ``whsec_<base64>`` form (what a Standard
            Webhooks receiver is configured with).
        retry: when to try again after a 5xx, 408, 429, timeout or connection error (never
            after another 4xx); :class:`~roomkit.notify.retry.Retry`'s defaults otherwise.
        timeout: seconds one POST may take.
        headers: more headers to send (an ``Authorization`` the receiver wants, say); each
            value is sent without its surrounding whitespace. A ``User-Agent`` here is sent
            instead of roomkit's own (``roomkit-notify``).
        name: the surface's name, recorded in histories (at most 256 characters, as any
            surface's); give each webhook its own.

    Raises:
        ValueError: a URL that is not ``http(s)://``, names no host, or a port that is no
            number from 1 to 65535; a secret not in its ``whsec_`` form;
            a header whose name is not one, that the webhook sets itself (``content-type``,
            ``webhook-id``, ...), or whose value holds a line break, a control character
            or a letter outside ASCII; a ``timeout`` that is not a positive, finite number of
            seconds; a ``name`` longer than a surface may be.
        TypeError: ``headers`` is not a mapping, ``timeout`` not a number, or ``name`` not a
            ``str``.
        InvalidTextError: ``name`` holds text UTF-8 cannot encode.
    """

    def __init__(
        self,
        url: str,
        secret: str,
        *,
        retry: Retry | None = None,
        timeout: float = 10.0,
        headers: Mapping[str, str] | None = None,
        name: str = "webhook",
    ) -> None:
        self.name = surface_name(name, what="Webhook(name=...)", example="webhook")
        url = http_url(url, "Webhook(url=...)")
        if not isinstance(secret, str) or not secret.startswith("whsec_"):
            raise ValueError(
                "Webhook(secret=...) takes the signing secret in its 'whsec_<base64>' form; "
                'make one with `python -c "import base64, secrets; '
                "print('whsec_' + base64.b64encode(secrets.token_bytes(24)).decode())\"`"
            )
        try:
            self._signer = _Signer(secret)
        except Exception as error:
            raise ValueError(
                f"Webhook(secret=...) is not a usable whsec_ secret: {error}"
            ) from None
        self._headers = _extra_headers(headers)
        if not any(name.lower() == "user-agent" for name in self._headers):
            self._headers = {"user-agent": _USER_AGENT, **self._headers}
        self.url = url
        self.retry = retry_policy("Webhook(retry=...)", retry, Retry())
        self._origin = Origin(url, timeout=bounded_seconds("Webhook(timeout=...)", timeout))

    def reaches(self, recipient: str | None, person: Person | None) -> bool:
        """A webhook tells no one in particular: it takes each notice once."""
        return recipient is None

    async def send(self, notice: Notice) -> Mapping[str, Any] | None:
        """POST the notice; raises :class:`DeliveryError` saying what went wrong."""
        data = json.dumps(webhook_body(notice), separators=(",", ":"))
        now = datetime.now(UTC)
        headers = {
            **self._headers,
            "content-type": "application/json",
            "webhook-id": notice.delivery_id,
            "webhook-timestamp": str(int(now.timestamp())),
            "webhook-signature": self._signer.sign(notice.delivery_id, now, data),
        }
        try:
            status = await self._origin.post(data.encode("utf-8"), headers)
        except OSError as error:  # timeouts, refusals, resets, TLS, answers that are not HTTP
            raise DeliveryError(f"webhook {self.url} {_failure(error)}", retry=True) from None
        if status < 300:
            return {"status": status}
        retry = status >= 500 or status in _RETRIED
        hint = "" if retry else ": check the URL, the secret and what the receiver expects"
        raise DeliveryError(f"webhook {self.url} answered {status}{hint}", retry=retry)

    async def aclose(self) -> None:
        await self._origin.aclose()
