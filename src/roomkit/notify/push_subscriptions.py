"""Web Push: the desk's VAPID key and each person's subscriptions, kept in its data folder.

The desk makes its VAPID key pair once, on first use, as ``push-vapid.pem`` (mode 0600)
beside its secret's key file (``desk.key``): browsers subscribe with its public half (what
``GET /api/push/key`` gives the page), and the private half signs every push, so the desk
and a notifier reading the same folder push alike. Each person's subscriptions (one per
browser or phone that turned notifications on) are kept in ``push-subscriptions.json``
beside it, whatever request store the desk runs on: a notifier in another process reads
them there, and drops those the push service reports gone.

A write takes a lock file (``push-subscriptions.lock``) and replaces the file in one
``rename``, so that desks and notifiers sharing the folder never read half a file or lose
each other's writes. The key needs the ``push`` extra (``cryptography``, which
``pywebpush`` brings).
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import fcntl
import hmac
import json
import logging
import os
import re
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote, unquote_to_bytes, urlsplit

from roomkit._extras import requires_extra
from roomkit._files import create_once
from roomkit.auth.tokens import data_folder

__all__ = [
    "MAX_PER_PERSON",
    "SUBSCRIPTIONS_FILE",
    "VAPID_FILE",
    "PushSubscriptions",
    "Subscription",
    "load_or_create_vapid_key",
    "subscription_of",
    "vapid_public_key",
]

logger = logging.getLogger("roomkit.notify")

VAPID_FILE = "push-vapid.pem"
"""The VAPID key's file in the desk's data folder."""
SUBSCRIPTIONS_FILE = "push-subscriptions.json"
"""The subscriptions' file in the desk's data folder."""
MAX_PER_PERSON = 10
"""Subscriptions kept per person: a new one beyond these replaces the oldest."""
MAX_ENDPOINT_CHARS = 2048


def _b64decode(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def _b64encode(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


# -- the VAPID key ---------------------------------------------------------------------------


def _ec() -> Any:
    with requires_extra("Web Push's VAPID key", "push"):
        from cryptography.hazmat.primitives import serialization
        from cryptography.hazmat.primitives.asymmetric import ec
    return ec, serialization


def load_or_create_vapid_key(data_dir: str | os.PathLike[str] | None = None) -> bytes:
    """The PEM of the VAPID private key in ``data_dir`` (``$ROOMKIT_DESK_DATA``, else
    ``~/.roomkit/desk``, by default),
    made (P-256, mode 0600) on first call.

    Raises:
        ImportError: the ``push`` extra is not installed (the message says how to).
        ValueError: the file holds no P-256 private key (remove it to make a new one; the
            browsers subscribed with the old one must subscribe again), or cannot be read or
            made (a folder in its place, another user's file); the message names the file.
    """
    ec, serialization = _ec()
    folder = data_folder(data_dir)
    path = folder / VAPID_FILE
    try:
        if not path.exists():
            # The desk's folder, made as its key file makes it: for its user alone.
            folder.mkdir(parents=True, exist_ok=True, mode=0o700)
            key = ec.generate_private_key(ec.SECP256R1())
            pem: bytes = key.private_bytes(
                serialization.Encoding.PEM,
                serialization.PrivateFormat.PKCS8,
                serialization.NoEncryption(),
            )
            if create_once(path, pem):
                logger.info("Made the desk's VAPID key for Web Push in %s", path)
        pem = path.read_bytes()
    except OSError as error:
        raise ValueError(
            f"The VAPID key {path} cannot be read or made ({error.strerror or error}): it must "
            "be a file the desk's user may read, in a folder it may write (remove what is "
            "there to make a new key; the browsers subscribed with the old one must "
            "subscribe again)"
        ) from None
    vapid_public_key(pem, where=str(path))
    return pem


def vapid_public_key(pem: bytes | str, *, where: str = "the VAPID key") -> str:
    """The public half of a VAPID private key, as browsers take it: the uncompressed P-256
    point in unpadded base64url (``applicationServerKey``).

    Raises:
        ValueError: ``pem`` is not a P-256 private key in PEM.
    """
    ec, serialization = _ec()
    data = pem.encode("ascii") if isinstance(pem, str) else pem
    try:
        key = serialization.load_pem_private_key(data, password=None)
    except (ValueError, TypeError) as error:
        raise ValueError(
            f"{where} is not a PEM private key ({error}): remove it to make a new one"
        ) from None
    if not isinstance(key, ec.EllipticCurvePrivateKey) or key.curve.name != "secp256r1":
        raise ValueError(f"{where} is not a P-256 (secp256r1) key: remove it to make a new one")
    point: bytes = key.public_key().public_bytes(
        serialization.Encoding.X962, serialization.PublicFormat.UncompressedPoint
    )
    return _b64encode(point)


# -- subscriptions ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Subscription:
    """One browser's push subscription, as ``PushSubscription.toJSON()`` gives it."""

    endpoint: str
    """The push service's URL for this browser (``https://``)."""
    p256dh: str
    """The browser's P-256 public key, unpadded base64url."""
    auth: str
    """The browser's 16-byte authentication secret, unpadded base64url."""
    added: float = 0.0
    """When it was given to the desk (epoch seconds)."""

    def info(self) -> dict[str, Any]:
        """The ``subscription_info`` dict ``pywebpush`` takes."""
        return {"endpoint": self.endpoint, "keys": {"p256dh": self.p256dh, "auth": self.auth}}


def _endpoint_problem(endpoint: object) -> str | None:
    if not isinstance(endpoint, str) or not endpoint:
        return "endpoint must be the push service's URL"
    if len(endpoint) > MAX_ENDPOINT_CHARS:
        return f"endpoint is longer than {MAX_ENDPOINT_CHARS} characters"
    if not all("!" <= ch <= "~" for ch in endpoint) or "\\" in endpoint:
        # URL parsers part ways on these (a browser reads "\\" as "/", this one strips a
        # tab): the host checked must be the host posted to.
        return (
            "endpoint must be a URL as the browser's push service gives it: printable ASCII, "
            "no spaces, control characters or backslashes"
        )
    parts = urlsplit(endpoint)
    try:
        port = parts.port
    except ValueError:
        return "endpoint's port is not a number from 1 to 65535"
    if port == 0:
        # Nothing listens there: every push to it would fail, and be tried again for a day.
        return (
            "endpoint's port 0 is no port a push service listens on: give the endpoint as "
            "the browser's PushSubscription has it"
        )
    if "@" in parts.netloc:
        return "endpoint must not name a user (user@host): give the push service's URL as it is"
    # Which hosts, and plain HTTP to which, is the push_hosts list's to say (PushHosts).
    if parts.scheme in ("https", "http") and parts.hostname:
        return None
    return "endpoint must be an https:// URL (the browser's push service)"


_BASE64URL = re.compile(r"[A-Za-z0-9_-]+={0,2}")


def _key_problem(name: str, value: object, size: int) -> str | None:
    if not isinstance(value, str) or not value or len(value) > 200:
        return f"keys.{name} must be base64url text"
    if not _BASE64URL.fullmatch(value):
        # The decoder would skip what is not of its alphabet: the key kept would not be
        # the one the browser gave.
        return f"keys.{name} is not base64url (letters, digits, - and _ only)"
    try:
        raw = _b64decode(value)
    except (binascii.Error, ValueError):
        return f"keys.{name} is not base64url"
    if len(raw) != size or (name == "p256dh" and raw[0] != 4):
        return (
            f"keys.{name} is not a {'P-256 public key' if name == 'p256dh' else '16-byte secret'}"
        )
    return None


def _point_problem(p256dh: str) -> str | None:
    ec, _ = _ec()
    try:
        ec.EllipticCurvePublicKey.from_encoded_point(ec.SECP256R1(), _b64decode(p256dh))
    except ValueError:
        return "keys.p256dh is not a point on P-256: no message can be encrypted to it"
    return None


def subscription_of(value: object, *, added: float | None = None) -> Subscription:
    """The :class:`Subscription` in ``value`` (``PushSubscription.toJSON()``'s shape:
    ``{"endpoint": ..., "keys": {"p256dh": ..., "auth": ...}}``), its key a point on P-256.

    Raises:
        ValueError: ``value`` is not that shape; the message names what is wrong.
        ImportError: the ``push`` extra is not installed (the message says how to).
    """
    subscription = _shaped(value, added=added)
    problem = _point_problem(subscription.p256dh)
    if problem is not None:
        raise ValueError(problem)
    return subscription


def _shaped(value: object, *, added: float | None = None) -> Subscription:
    """The :class:`Subscription` in ``value``, its shape checked (not its key's point:
    reading the file needs no ``push`` extra, and a push drops a key that cannot be used)."""
    if not isinstance(value, Mapping):
        raise ValueError("a push subscription is an object with endpoint and keys")
    endpoint, keys = value.get("endpoint"), value.get("keys")
    problem = _endpoint_problem(endpoint)
    if problem is not None:
        raise ValueError(problem)
    if not isinstance(keys, Mapping):
        raise ValueError("keys must be an object with p256dh and auth")
    p256dh, auth = keys.get("p256dh"), keys.get("auth")
    problem = _key_problem("p256dh", p256dh, 65) or _key_problem("auth", auth, 16)
    if problem is not None:
        raise ValueError(problem)
    # Kept unpadded, as browsers give them: the same keys padded are the same subscription.
    return Subscription(
        str(endpoint),
        str(p256dh).rstrip("="),
        str(auth).rstrip("="),
        time.time() if added is None else added,
    )


_DEFAULT_PORTS = {"https": 443, "http": 80}


def _unescaped(text: str) -> str:
    """``text`` with every escape undone, a byte a character."""
    return unquote_to_bytes(text).decode("latin-1")


def _escaped(text: str, safe: str) -> str:
    """:func:`_unescaped` ``text`` with every character but a letter, a digit, ``-._~`` and
    ``safe`` escaped in capitals: of the spellings a server reads the same (``%21`` and
    ``!``, ``|`` and ``%7C``), one."""
    return quote(text.encode("latin-1"), safe=safe)


def _without_dots(path: str) -> str:
    """``path`` with its ``.`` and ``..`` segments taken out, as the URL a push is sent to
    has them (``/p/x/../y`` is ``/p/y``)."""
    segments = path.split("/")
    kept: list[str] = []
    for index, segment in enumerate(segments):
        if segment in (".", ".."):
            if segment == ".." and len(kept) > 1:
                kept.pop()
            if index == len(segments) - 1:
                kept.append("")  # "/p/x/.." is "/p/"
        else:
            kept.append(segment)
    return "/".join(kept)


def _device_of(endpoint: str) -> str:
    """The device an endpoint reaches, however its URL is spelt: the scheme and host in
    small letters, the host without its final dot, the port named, no fragment (never
    sent), the path without dot segments, each character escaped or not alike. Two
    spellings a server might tell apart may read as one device, never the reverse: another
    person's device is refused however it is written."""
    parts = urlsplit(endpoint)
    host = (parts.hostname or "").rstrip(".")
    port = parts.port or _DEFAULT_PORTS.get(parts.scheme, 0)
    # Unescaped first, so that "%2E" is a dot as the sender reads it.
    path = _escaped(_without_dots(_unescaped(parts.path)), "/")
    query = f"?{_escaped(_unescaped(parts.query), '=&')}" if parts.query else ""
    return f"{parts.scheme}://[{host}]:{port}{path or '/'}{query}"


def _same_keys(one: Subscription, other: Subscription) -> bool:
    """Whether two subscriptions hold the same keys (compared in constant time)."""
    mine = f"{one.p256dh}\x00{one.auth}".encode()
    theirs = f"{other.p256dh}\x00{other.auth}".encode()
    return hmac.compare_digest(mine, theirs)


class PushSubscriptions:
    """Each person's push subscriptions, in the desk's data folder.

    One endpoint belongs to one person: a browser subscribed again by someone else (a shared
    device, signed in by another person) moves to them, when it gives the subscription's own
    keys (``p256dh`` and ``auth``), which only the browser holding it has. Whoever learnt
    only the endpoint's URL cannot take the device.

    Args:
        data_dir: the desk's data folder (``$ROOMKIT_DESK_DATA``, else ``~/.roomkit/desk``,
            by default).
    """

    def __init__(self, data_dir: str | os.PathLike[str] | None = None) -> None:
        self.folder = data_folder(data_dir)
        self.path = self.folder / SUBSCRIPTIONS_FILE
        self._seen: tuple[int, int, int] | None = None
        self._people: dict[str, list[Subscription]] = {}

    def of(self, actor_id: str) -> list[Subscription]:
        """``actor_id``'s subscriptions, oldest first (read again when the file changed)."""
        return list(self._read().get(actor_id, ()))

    def reaches(self, actor_id: str) -> bool:
        """Whether ``actor_id`` has a subscription."""
        return bool(self._read().get(actor_id))

    def add(self, actor_id: str, subscription: Subscription) -> bool:
        """Keep ``subscription`` for ``actor_id``; beyond :data:`MAX_PER_PERSON`, the oldest
        goes. A known endpoint of theirs is refreshed; one another person has moves to
        ``actor_id`` only with the same keys (the same browser, signed in by them). An
        endpoint is known however its URL is spelt (the host's case, its port, an escaped
        letter, a fragment).

        Returns:
            Whether it was kept: ``False`` when another person has the endpoint with other
            keys, and it stays theirs.
        """
        device = _device_of(subscription.endpoint)
        with self._writing() as people:
            for owner, held in people.items():
                for known in held if owner != actor_id else ():
                    if _device_of(known.endpoint) == device and not _same_keys(known, subscription):
                        return False
            for owner in list(people):
                people[owner] = [s for s in people[owner] if _device_of(s.endpoint) != device]
            kept = [*people.get(actor_id, []), subscription]
            people[actor_id] = kept[-MAX_PER_PERSON:]
        return True

    def remove(self, endpoint: str, *, actor_id: str | None = None) -> bool:
        """Forget the subscription at ``endpoint`` (only ``actor_id``'s, when given); whether
        there was one."""
        found = False
        with self._writing() as people:
            for owner in list(people):
                if actor_id is not None and owner != actor_id:
                    continue
                kept = [s for s in people[owner] if s.endpoint != endpoint]
                found = found or len(kept) != len(people[owner])
                people[owner] = kept
        return found

    # -- the file ----------------------------------------------------------------------------

    def _read(self) -> dict[str, list[Subscription]]:
        try:
            stat = self.path.stat()
        except FileNotFoundError:
            self._seen, self._people = None, {}
            return self._people
        # A write replaces the file: a new inode, even within one tick of the clock.
        seen = (stat.st_ino, stat.st_mtime_ns, stat.st_size)
        if seen != self._seen:
            self._people = self._load()
            self._seen = seen
        return self._people

    def _load(self) -> dict[str, list[Subscription]]:
        document = self._document()
        if document is None:
            logger.error("Cannot read %s: no push is sent until it is fixed", self.path)
            return {}
        return self._people_of(document)

    def _document(self) -> dict[str, Any] | None:
        """The file's JSON (``{}`` when there is no file), or ``None`` when it cannot be read
        or is not of the file's shape (``{"people": {name: [subscription, ...]}}``: a
        person's entry of another shape is skipped, not the file)."""
        try:
            document: object = json.loads(self.path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return {}
        except (OSError, ValueError) as error:
            logger.debug("Cannot read %s: %s", self.path, error)
            return None
        listed = document.get("people", {}) if isinstance(document, dict) else None
        if not isinstance(document, dict) or not isinstance(listed, dict):
            logger.debug('Cannot read %s: it is not {"people": {...}}', self.path)
            return None
        return document

    def _people_of(self, document: Mapping[str, Any]) -> dict[str, list[Subscription]]:
        people: dict[str, list[Subscription]] = {}
        for actor, entries in document.get("people", {}).items():
            if not isinstance(entries, list):
                logger.warning(
                    "Skipping the push subscriptions of %r in %s: not a list", actor, self.path
                )
                continue
            for entry in entries:
                try:
                    added = entry.get("added", 0.0) if isinstance(entry, dict) else 0.0
                    people.setdefault(str(actor), []).append(_shaped(entry, added=added))
                except ValueError as error:
                    logger.warning(
                        "Skipping a push subscription of %r in %s: %s", actor, self.path, error
                    )
        return people

    @contextlib.contextmanager
    def _writing(self) -> Iterator[dict[str, list[Subscription]]]:
        """The subscriptions to change in place, written back in one rename under the lock."""
        self.folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        lock = os.open(self.folder / "push-subscriptions.lock", os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(lock, fcntl.LOCK_EX)
            document = self._document()
            if document is None:
                # Written over, the devices it lists would be lost: it is kept aside instead.
                aside = self.path.with_name(f"{self.path.name}.unreadable-{time.time_ns()}")
                os.replace(self.path, aside)
                logger.error(
                    "Cannot read %s: kept as %s (fix it and move it back to restore the "
                    "devices it lists); starting a new one",
                    self.path,
                    aside,
                )
                document = {}
            people = self._people_of(document)
            yield people
            document = {
                "people": {
                    actor: [{**s.info(), "added": s.added} for s in kept]
                    for actor, kept in people.items()
                    if kept
                }
            }
            temporary = self.path.with_suffix(f".{os.getpid()}.tmp")
            fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            with os.fdopen(fd, "w", encoding="utf-8") as file:
                json.dump(document, file, separators=(",", ":"))
            os.replace(temporary, self.path)
            self._seen = None
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)
            os.close(lock)
