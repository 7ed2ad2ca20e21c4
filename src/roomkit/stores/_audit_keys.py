"""The audit key: what anchors the trail outside the database that holds it.

A history's chain shows an edit in its middle, not one at its end, nor a chain deleted
whole: whoever can write to the database can link entries as well as the store does. What
they cannot make is an HMAC-SHA256 under a key the database does not hold. Each process
that writes to a store signs with that key the head of every chain it appends to, and the
checkpoints of every head (:mod:`~roomkit.stores._checkpoints`);
``roomkit audit verify`` checks them with it.

The key comes from ``ROOMKIT_AUDIT_KEY`` or from the file ``audit.key`` in the desk's data
folder (``roomkit audit key`` creates it, mode 0600, beside the desk's own key file). Either
holds one key or several, separated by white space or commas: the first signs, every one
checks, so that a key is rotated by putting a new one first and keeping the old ones after
it for as long as what they signed is verified. A signature names its key by a short id
(``kid:hex``), derived from the key, so that verify says which key it lacks.
"""

from __future__ import annotations

import hashlib
import hmac
import logging
import os
import secrets
from collections.abc import Sequence
from pathlib import Path

__all__ = [
    "AUDIT_KEY_ENV",
    "AUDIT_KEY_FILE",
    "AuditKeys",
    "create_audit_key",
    "load_audit_keys",
]

logger = logging.getLogger("roomkit.audit")

AUDIT_KEY_ENV = "ROOMKIT_AUDIT_KEY"
"""The environment variable that holds the audit key (or keys, the signing one first)."""
AUDIT_KEY_FILE = "audit.key"
"""The audit key file's name in the desk's data folder."""

_MIN_KEY_BYTES = 16
_KEY_ID = b"roomkit audit key id"


class AuditKeys:
    """The key a process signs the trail with, and the older ones it still checks.

    Args:
        keys: one key or more, the signing one first; each at least 16 bytes.

    Raises:
        ValueError: no key, or one too short to resist guessing.
    """

    __slots__ = ("_by_id", "_signer", "kid")

    def __init__(self, keys: Sequence[str | bytes]) -> None:
        raw = [key.encode("utf-8") if isinstance(key, str) else bytes(key) for key in keys]
        if not raw:
            raise ValueError("an audit key is needed: generate one with `roomkit audit key`")
        for key in raw:
            if len(key) < _MIN_KEY_BYTES:
                raise ValueError(
                    f"an audit key must be at least {_MIN_KEY_BYTES} bytes; generate one "
                    "with `roomkit audit key`"
                )
        self._by_id = {_key_id(key): hmac.new(key, digestmod=hashlib.sha256) for key in raw}
        self.kid = _key_id(raw[0])
        """The id of the signing key, as signatures name it."""
        self._signer = self._by_id[self.kid]

    @classmethod
    def from_text(cls, text: str) -> AuditKeys:
        """The keys of ``text``: separated by white space or commas, the signing one first.

        Raises:
            ValueError: ``text`` holds no key, or one too short.
        """
        return cls(text.replace(",", " ").split())

    @classmethod
    def from_environment(cls) -> AuditKeys | None:
        """The keys of ``ROOMKIT_AUDIT_KEY``; ``None`` when it is unset or empty.

        Raises:
            ValueError: it holds a key too short.
        """
        text = os.environ.get(AUDIT_KEY_ENV, "")
        return cls.from_text(text) if text.strip() else None

    def sign(self, message: str) -> str:
        """The signature of ``message`` under the signing key: ``kid:hex``."""
        return f"{self.kid}:{_mac(self._signer, message)}"

    def check(self, message: str, signature: object) -> str | None:
        """Why ``signature`` is not the signature of ``message`` under one of these keys;
        ``None`` when it is."""
        if not isinstance(signature, str) or signature.count(":") != 1:
            return "it carries no signature"
        kid, _, given = signature.partition(":")
        signer = self._by_id.get(kid)
        if signer is None:
            return (
                f"it is signed with audit key {kid!r}, which was not given (a rotated key "
                "stays after the new one for as long as what it signed is verified)"
            )
        if not hmac.compare_digest(given, _mac(signer, message)):
            return "its signature does not hold: it was edited, or signed without the key"
        return None


def _key_id(key: bytes) -> str:
    return hmac.new(key, _KEY_ID, hashlib.sha256).hexdigest()[:12]


def _mac(signer: hmac.HMAC, message: str) -> str:
    # Copying a keyed state skips hashing the key's pads again on every signature.
    mac = signer.copy()
    mac.update(message.encode("utf-8", "surrogatepass"))
    return mac.hexdigest()


def load_audit_keys(data_dir: str | os.PathLike[str] | None = None) -> AuditKeys | None:
    """The audit keys: ``ROOMKIT_AUDIT_KEY``, else ``data_dir``'s ``audit.key`` when it
    exists; ``None`` when neither holds one (nothing is created).

    Raises:
        ValueError: a key is too short, or the file holds none.
        OSError: the file exists but cannot be read.
    """
    from_env = AuditKeys.from_environment()
    if from_env is not None or data_dir is None:
        return from_env
    path = Path(data_dir) / AUDIT_KEY_FILE
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    if path.stat().st_mode & 0o077:
        logger.warning("The audit key file %s is readable by others: chmod 600 it", path)
    if not text.strip():
        raise ValueError(f"The audit key file {path} holds no key: delete it or add one")
    return AuditKeys.from_text(text)


def create_audit_key(data_dir: str | os.PathLike[str], *, rotate: bool = False) -> Path:
    """Write a new audit key to ``data_dir``'s ``audit.key`` (mode 0600); its path.

    Without ``rotate`` an existing file is left as it is. With ``rotate`` the new key goes
    first (it signs from now on) and the keys already there stay after it (they still
    check what they signed).

    Raises:
        OSError: the folder or the file cannot be written.
    """
    folder = Path(data_dir)
    folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    path = folder / AUDIT_KEY_FILE
    new = secrets.token_urlsafe(32)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        if not rotate:
            return path
        kept = path.read_text(encoding="utf-8").strip()
        # Written beside the file and moved over it: a crash leaves one whole key file.
        spare = folder / f".{AUDIT_KEY_FILE}.{secrets.token_hex(4)}"
        fd = os.open(spare, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as file:
            file.write(f"{new}\n{kept}\n" if kept else f"{new}\n")
        os.replace(spare, path)
        return path
    with os.fdopen(fd, "w", encoding="ascii") as file:
        file.write(new + "\n")
    return path
