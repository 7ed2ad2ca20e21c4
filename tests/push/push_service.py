"""A push service on loopback, and the browsers that subscribe to it.

:class:`PushService` is a small HTTP/1.1 server that takes Web Push POSTs the way a browser
vendor's push service does: it checks the VAPID ``Authorization`` header (an ES256 JWT whose
``aud`` is its own origin, signed by the key ``k=`` names, not expired), then decrypts the
``aes128gcm`` body with ``http_ece`` and the subscribing browser's private key and auth
secret, and keeps the message. Each endpoint may be told to answer another status (410 for
a browser that unsubscribed), and an answer may be held back once the push is taken
(:attr:`PushService.before_reply`: a sender killed before it hears back).

:class:`Browser` is what a browser holds for one subscription: its P-256 key pair and auth
secret; :meth:`Browser.subscription` is the JSON it gives the desk.
"""

from __future__ import annotations

import asyncio
import base64
import json
import os
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import http_ece
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.utils import encode_dss_signature
from tests.servers.loopback import HTTPServer


def b64decode(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def b64encode(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


@dataclass
class Browser:
    """One subscribing browser: its key pair and auth secret, and its endpoint."""

    endpoint: str
    key: ec.EllipticCurvePrivateKey = field(
        default_factory=lambda: ec.generate_private_key(ec.SECP256R1())
    )
    auth: bytes = field(default_factory=lambda: os.urandom(16))

    def subscription(self) -> dict[str, Any]:
        """``PushSubscription.toJSON()``, as the page posts it."""
        point = self.key.public_key().public_bytes(
            serialization.Encoding.X962, serialization.PublicFormat.UncompressedPoint
        )
        return {
            "endpoint": self.endpoint,
            "expirationTime": None,
            "keys": {"p256dh": b64encode(point), "auth": b64encode(self.auth)},
        }


@dataclass(frozen=True)
class Received:
    """One push the service took: to which browser, its headers, the VAPID claims, and the
    decrypted message."""

    endpoint: str
    headers: dict[str, str]
    claims: dict[str, Any]
    message: dict[str, Any]


def verify_vapid(authorization: str, audience: str) -> dict[str, Any]:
    """The claims of a ``vapid t=<jwt>, k=<key>`` header, once its ES256 signature verifies
    with ``k`` and its ``aud`` is ``audience``; ``AssertionError`` otherwise."""
    scheme, _, rest = authorization.partition(" ")
    assert scheme.lower() == "vapid", authorization
    parts = dict(item.strip().split("=", 1) for item in rest.split(","))
    header_b64, payload_b64, signature_b64 = parts["t"].split(".")
    header = json.loads(b64decode(header_b64))
    assert header == {"typ": "JWT", "alg": "ES256"}, header
    public = ec.EllipticCurvePublicKey.from_encoded_point(ec.SECP256R1(), b64decode(parts["k"]))
    raw = b64decode(signature_b64)
    assert len(raw) == 64
    signature = encode_dss_signature(int.from_bytes(raw[:32]), int.from_bytes(raw[32:]))
    try:
        public.verify(
            signature, f"{header_b64}.{payload_b64}".encode("ascii"), ec.ECDSA(hashes.SHA256())
        )
    except InvalidSignature:
        raise AssertionError("the VAPID signature does not verify") from None
    claims: dict[str, Any] = json.loads(b64decode(payload_b64))
    assert claims["aud"] == audience, claims
    assert time.time() < claims["exp"] <= time.time() + 24 * 3600, claims
    claims["k"] = parts["k"]
    return claims


class PushService(HTTPServer):
    """Takes pushes for the browsers made by :meth:`browser`; answers 201, or an endpoint's
    own status from :attr:`status`."""

    def __init__(self) -> None:
        super().__init__()
        self.received: list[Received] = []
        self.refused: list[str] = []
        """Why each push the service refused was refused (a bad signature, ...)."""
        self.status: dict[str, int] = {}
        """Per endpoint, the status to answer instead of 201."""
        self.attempts = 0
        self.before_reply: Callable[[int], Awaitable[None]] | None = None
        """Awaited with each push's number (from 1) once it is taken or refused, before it
        is answered."""
        self._browsers: dict[str, Browser] = {}
        self._changed = asyncio.Condition()

    def browser(self, name: str) -> Browser:
        """A new browser subscribed at ``<origin>/push/<name>``."""
        made = Browser(f"{self.origin}/push/{name}")
        self._browsers[made.endpoint] = made
        return made

    async def wait_for(self, count: int) -> list[Received]:
        """Wait until ``count`` pushes were taken."""
        async with self._changed:
            await self._changed.wait_for(lambda: len(self.received) >= count)
        return list(self.received)

    async def wait_attempts(self, count: int) -> None:
        """Wait until ``count`` pushes came, taken or not."""
        async with self._changed:
            await self._changed.wait_for(lambda: self.attempts >= count)

    def _take(self, path: str, headers: dict[str, str], body: bytes) -> int:
        endpoint = self.origin + path
        browser = self._browsers.get(endpoint)
        if browser is None:
            return 404
        if endpoint in self.status:
            return self.status[endpoint]
        try:
            claims = verify_vapid(headers.get("authorization", ""), self.origin)
            assert headers.get("content-encoding") == "aes128gcm", headers
            plain = http_ece.decrypt(
                body, private_key=browser.key, auth_secret=browser.auth, version="aes128gcm"
            )
            message = json.loads(plain)
        except (AssertionError, ValueError, KeyError) as error:
            self.refused.append(f"{type(error).__name__}: {error}")
            return 403
        self.received.append(Received(endpoint, headers, claims, message))
        return 201

    async def answer(
        self, method: str, path: str, headers: dict[str, str], body: bytes
    ) -> tuple[int, bytes]:
        async with self._changed:
            self.attempts += 1
            number = self.attempts
            status = self._take(path, headers, body)
            self._changed.notify_all()
        if self.before_reply is not None:
            await self.before_reply(number)
        return status, b""
