"""The desk's signed tokens and its secret.

A token is ``payload.signature``: the payload is compact JSON in unpadded base64url, the
signature the HMAC-SHA256 of the encoded payload under the desk's secret, also base64url.
Each token names its kind (:class:`~roomkit.auth.principal.CredentialKind`) in its ``kind``
claim:

- an actor token, ``{"sub": actor_id, "kind": "actor", "adm": bool, "iat": epoch, "exp":
  epoch, "jti": nonce}``, for a person (or an administrator) using the desk, 30 days by
  default;
- an answer link, ``{"sub": actor_id, "kind": "answer", "req": pending_id, "iat": epoch,
  "exp": epoch, "jti": nonce}``, good for one request only, once, until it expires;
- a sign-in link, ``{"sub": actor_id, "kind": "sign-in", "adm": bool, "use": "sign-in",
  "iat": epoch, "exp": epoch, "jti": nonce}``, good for nothing but ``POST /api/sign-in``,
  once, which trades it for an actor token (what ``roomkit desk`` prints, 15 minutes by
  default).

A token signed before the ``kind`` claim existed still reads: its kind is that of its other
claims (``use`` makes a sign-in link, ``req`` an answer link, neither an actor token), and a
``kind`` that disagrees with them makes a token malformed. The subject is an actor name
(:mod:`roomkit.auth.names`), checked when a token is issued and when it is read.

The nonce names the token in the store's ledger, where a spent link or a revoked token is
recorded (see :class:`~roomkit.auth.ledger.LinkLedger`). The payload must be strict JSON: no
repeated key, no ``NaN`` or infinite number (an ``exp`` of ``1e400`` would never come).

The secret comes from ``ROOMKIT_DESK_SECRET``, or from a key file the desk creates (mode
0600) in its data folder on first run, so the desk and ``roomkit token`` sign alike.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
import logging
import math
import os
import secrets
import time
from pathlib import Path
from typing import Any

from roomkit._files import create_once
from roomkit.auth.names import actor_name_problem, check_actor_name
from roomkit.auth.principal import CredentialKind
from roomkit.core.exceptions import AnswerLinkExpiredError, DeskAuthError
from roomkit.models.clock import positive_seconds

__all__ = [
    "DATA_ENV",
    "DEFAULT_TOKEN_TTL",
    "KEY_FILE",
    "KIND_CLAIM",
    "SECRET_ENV",
    "SESSION_TTL",
    "SIGN_IN",
    "data_folder",
    "default_data_dir",
    "issue_answer_link",
    "issue_sign_in_link",
    "issue_token",
    "load_or_create_secret",
    "read_token",
    "resolve_secret",
    "secret_key",
    "token_claims",
    "token_kind",
]

logger = logging.getLogger("roomkit.desk")

SECRET_ENV = "ROOMKIT_DESK_SECRET"
"""The environment variable that holds the desk's secret."""
KEY_FILE = "desk.key"
"""The key file's name in the desk's data folder."""
DATA_ENV = "ROOMKIT_DESK_DATA"
"""The environment variable naming the desk's data folder when none is given."""


def default_data_dir() -> Path:
    """Where the desk keeps its key file when no data folder is given and
    ``$ROOMKIT_DESK_DATA`` is not set: ``~/.roomkit/desk``, the home folder read now.

    The module's ``DEFAULT_DATA_DIR`` is this folder too, read when it is looked up: importing
    roomkit reads no home folder (a workflow sandbox, a container user with no home).

    Raises:
        RuntimeError: the home folder cannot be found (no ``$HOME``, and the user has no
            entry in the password database): set ``$ROOMKIT_DESK_DATA``, or pass a data
            folder.
    """
    return Path.home() / ".roomkit" / "desk"


def __getattr__(name: str) -> Any:
    # DEFAULT_DATA_DIR is read when used, not when the module is imported; it stays out of
    # __all__, so that ``import *`` (the old path roomkit.desk.tokens) does not read it.
    if name == "DEFAULT_DATA_DIR":
        return default_data_dir()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def data_folder(data_dir: str | os.PathLike[str] | None = None) -> Path:
    """The desk's data folder: ``data_dir`` if given, else ``$ROOMKIT_DESK_DATA``, else
    :func:`default_data_dir`. Every process that signs or checks the desk's links (the desk,
    the notifier, ``roomkit mcp``) finds the same key there.

    Raises:
        RuntimeError: neither is given and the home folder cannot be found.
    """
    if data_dir is not None:
        return Path(data_dir)
    return Path(os.environ.get(DATA_ENV) or default_data_dir())


MIN_SECRET_BYTES = 16
MAX_TOKEN_CHARS = 4096
DEFAULT_LINK_TTL = 900.0
DEFAULT_TOKEN_TTL = 30 * 86_400.0
MAX_TTL = 10 * 365 * 86_400.0
"""The longest a token or link may last: ten years (a longer one would, in effect, never
expire; an actor token that lasts until revoked is ``ttl=None``)."""
"""Seconds an actor token stays valid unless told otherwise: 30 days."""
SIGN_IN = "sign-in"
"""The ``use`` claim of a sign-in link."""
KIND_CLAIM = "kind"
"""The claim that names a token's kind."""
SESSION_TTL = 12 * 3600.0
"""Seconds the token a sign-in link is traded for stays valid: 12 hours."""


def _b64encode(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def _b64decode(text: str) -> bytes:
    """Decode unpadded base64url, refusing any text that is not the canonical encoding.

    The decoder skips stray characters and ignores the spare bits of the last one: without
    the round trip, several spellings of one signature would all pass.
    """
    data = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    if _b64encode(data) != text:
        raise ValueError("not canonical base64url")
    return data


_GENERATE = "generate one with `python -c 'import secrets; print(secrets.token_urlsafe(32))'`"


def secret_key(secret: str | bytes) -> bytes:
    """The secret as bytes, refused when too short to resist guessing.

    Raises:
        ValueError: the secret is shorter than 16 bytes, or text UTF-8 cannot encode (an
            environment variable holding bytes that are not UTF-8).
    """
    try:
        key = secret.encode("utf-8") if isinstance(secret, str) else bytes(secret)
    except UnicodeEncodeError:
        raise ValueError(f"The desk secret holds bytes that are not UTF-8: {_GENERATE}") from None
    if len(key) < MIN_SECRET_BYTES:
        raise ValueError(f"The desk secret must be at least {MIN_SECRET_BYTES} bytes; {_GENERATE}")
    return key


def _sign(secret: str | bytes, claims: dict[str, Any]) -> str:
    payload = _b64encode(json.dumps(claims, separators=(",", ":")).encode("utf-8"))
    digest = hmac.new(secret_key(secret), payload.encode("ascii"), hashlib.sha256).digest()
    return f"{payload}.{_b64encode(digest)}"


def _issue(
    secret: str | bytes,
    actor_id: str,
    kind: CredentialKind,
    claims: dict[str, Any],
    ttl: float | None,
    now: float | None,
) -> str:
    """A signed ``kind`` credential for ``actor_id`` with ``claims``: issued ``now`` (the
    current time by default), valid ``ttl`` seconds (``None``: until revoked), with an id of
    its own."""
    issued = time.time() if now is None else now
    signed: dict[str, Any] = {"sub": actor_id, KIND_CLAIM: kind.value, **claims, "iat": issued}
    if ttl is not None:
        signed["exp"] = int(issued + _ttl(ttl))
    signed["jti"] = secrets.token_urlsafe(12)
    return _sign(secret, signed)


def _check_actor(actor_id: object) -> str:
    """``actor_id``, once it is an actor name; ``ValueError`` otherwise."""
    return check_actor_name(actor_id, what="actor_id")


def _check_id(name: str, value: object) -> str:
    if not isinstance(value, str) or not value:
        raise ValueError(f"{name} must be a non-empty string, got {value!r}")
    return value


def _ttl(ttl: object) -> float:
    """``ttl``, checked: a positive number of seconds, at most :data:`MAX_TTL`.

    Raises:
        TypeError: it is no number.
        ValueError: it is not positive, not finite, or over ten years.
    """
    seconds = positive_seconds("ttl", ttl)
    if seconds > MAX_TTL:
        raise ValueError(
            f"ttl is at most {MAX_TTL:.0f} seconds (ten years), got {ttl}: a token that "
            "lasts until revoked is issued with no ttl (ttl=None)"
        )
    return seconds


def issue_token(
    secret: str | bytes,
    actor_id: str,
    *,
    admin: bool = False,
    ttl: float | None = DEFAULT_TOKEN_TTL,
    now: float | None = None,
) -> str:
    """A bearer token for ``actor_id``, signed with the desk's secret.

    Args:
        secret: the desk's secret (see :func:`resolve_secret`).
        actor_id: the person the token speaks for (a participant id).
        admin: the bearer sees and answers every request.
        ttl: seconds the token stays valid, 30 days by default; ``None`` makes a token
            that expires only when revoked (``roomkit revoke``).
        now: the issue time (seconds since the epoch); the current time by default.
    """
    claims = {"adm": bool(admin)}
    return _issue(secret, _check_actor(actor_id), CredentialKind.ACTOR, claims, ttl, now)


def issue_answer_link(
    secret: str | bytes,
    pending_id: str,
    actor_id: str,
    ttl: float = DEFAULT_LINK_TTL,
    *,
    now: float | None = None,
) -> str:
    """A single-use token that reads and answers (or rejects) one request, as ``actor_id``.

    Put it where only that person sees it (a URL fragment, never a query string: URLs are
    logged). The desk refuses it once it has answered or rejected, and after ``ttl`` seconds.
    """
    actor = _check_actor(actor_id)
    claims = {"req": _check_id("pending_id", pending_id)}
    return _issue(secret, actor, CredentialKind.ANSWER_LINK, claims, ttl, now)


def issue_sign_in_link(
    secret: str | bytes,
    actor_id: str,
    *,
    admin: bool = False,
    ttl: float = DEFAULT_LINK_TTL,
    now: float | None = None,
) -> str:
    """A single-use token that signs ``actor_id`` in to the desk page, once, within ``ttl``.

    It reads and answers nothing itself: ``POST /api/sign-in`` trades it for an actor token,
    and the desk refuses it after that (through any desk process on the store).
    """
    # The use is kept beside the kind: a desk that reads no kind claim still sees a
    # sign-in link.
    claims = {"adm": bool(admin), "use": SIGN_IN}
    return _issue(secret, _check_actor(actor_id), CredentialKind.SIGN_IN_LINK, claims, ttl, now)


def read_token(secret: str | bytes, token: str, *, now: float) -> dict[str, Any]:
    """The claims of a token this secret signed, checked for shape and expiry.

    Raises:
        DeskAuthError: the token is malformed, forged, tampered with or expired
            (:class:`~roomkit.core.exceptions.AnswerLinkExpiredError` for an answer link).
            The message never quotes the token.
    """
    claims = token_claims(secret, token)
    expires = claims.get("exp")
    if expires is not None and now >= expires:
        if token_kind(claims) is CredentialKind.ANSWER_LINK:
            raise AnswerLinkExpiredError("answer link expired")
        raise DeskAuthError("token expired")
    return claims


def token_claims(secret: str | bytes, token: str) -> dict[str, Any]:
    """The claims of a token this secret signed, checked for shape, expired or not.

    Raises:
        DeskAuthError: the token is malformed, forged or tampered with.
    """
    if not isinstance(token, str) or not 0 < len(token) <= MAX_TOKEN_CHARS:
        raise DeskAuthError("malformed token")
    key = secret_key(secret)
    payload, dot, signature = token.partition(".")
    if not dot or not payload or "." in signature:
        raise DeskAuthError("malformed token")
    try:
        given = _b64decode(signature)
        expected = hmac.new(key, payload.encode("ascii"), hashlib.sha256).digest()
    except (binascii.Error, UnicodeEncodeError, ValueError):
        raise DeskAuthError("malformed token") from None
    if not hmac.compare_digest(given, expected):
        raise DeskAuthError("bad token signature")
    try:
        claims = json.loads(
            _b64decode(payload),
            object_pairs_hook=_unique_keys,
            parse_constant=_no_constant,
            parse_float=_finite_float,
        )
    except (binascii.Error, ValueError):
        raise DeskAuthError("malformed token") from None
    if not isinstance(claims, dict):
        raise DeskAuthError("malformed token")
    _check_claims(claims)
    return claims


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    claims = dict(pairs)
    if len(claims) != len(pairs):
        raise ValueError("a claim is repeated")
    return claims


def _no_constant(name: str) -> float:
    raise ValueError(f"{name} is not a number a token may hold")


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError("a token's numbers are finite")
    return value


def _is_time(value: object) -> bool:
    """A finite number of seconds since the epoch (an ``int`` too big for a float is not)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return False
    try:
        return math.isfinite(float(value))
    except OverflowError:
        return False


def token_kind(claims: dict[str, Any]) -> CredentialKind:
    """The kind of the token whose claims are ``claims``: a sign-in link with ``use``, an
    answer link with ``req``, an actor token with neither.

    A token signed since tokens name their kind also says it in its ``kind`` claim, which
    :func:`token_claims` refuses when it disagrees; a token signed before reads the same.
    """
    if claims.get("use") == SIGN_IN:
        return CredentialKind.SIGN_IN_LINK
    if "req" in claims:
        return CredentialKind.ANSWER_LINK
    return CredentialKind.ACTOR


def _check_claims(claims: dict[str, Any]) -> None:
    subject, expires, nonce = claims.get("sub"), claims.get("exp"), claims.get("jti")
    if not isinstance(subject, str) or not subject:
        raise DeskAuthError("token names no actor")
    problem = actor_name_problem(subject)
    if problem is not None:
        raise DeskAuthError(f"the token's actor {problem}")
    if expires is not None and not _is_time(expires):
        raise DeskAuthError("malformed token expiry")
    if "iat" in claims and not _is_time(claims["iat"]):
        raise DeskAuthError("malformed token issue time")
    if nonce is not None and (not isinstance(nonce, str) or not nonce):
        raise DeskAuthError("malformed token id")
    if "req" in claims:
        if expires is None or not isinstance(claims["req"], str) or nonce is None:
            raise DeskAuthError("malformed answer link")
        if "use" in claims:
            raise DeskAuthError("malformed answer link")
    elif not isinstance(claims.get("adm", False), bool):
        raise DeskAuthError("malformed token")
    if "use" in claims and (claims["use"] != SIGN_IN or expires is None or nonce is None):
        raise DeskAuthError("malformed sign-in link")
    if KIND_CLAIM in claims and claims[KIND_CLAIM] != token_kind(claims).value:
        raise DeskAuthError("malformed token kind")


def load_or_create_secret(data_dir: str | os.PathLike[str]) -> bytes:
    """The secret in ``data_dir``'s key file, created (mode 0600) on first call.

    Two processes starting at once agree: each writes a key of its own beside the key file
    and links it into place, so the file is never seen before its key is in; whichever links
    first wins, and the other reads what it wrote.
    """
    folder = Path(data_dir)
    folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    path = folder / KEY_FILE
    made = not path.exists() and create_once(path, (secrets.token_urlsafe(48) + "\n").encode())
    if made:
        logger.info("Created the desk's key file %s", path)
    return _read_key(path)


def _read_key(path: Path) -> bytes:
    try:
        key = path.read_bytes().strip()
    except OSError as error:
        # The same type, worded to say what to do: a folder in the key's place, say.
        raise type(error)(
            f"the desk's key file {path} cannot be read ({error.strerror or error}): move it "
            "away, and the desk makes a new key (the tokens and links the old one signed stop "
            "working)"
        ) from None
    if path.stat().st_mode & 0o077:
        logger.warning("The desk's key file %s is readable by others: chmod 600 it", path)
    if len(key) < MIN_SECRET_BYTES:
        raise ValueError(f"The desk's key file {path} holds no usable key: delete it")
    return key


def resolve_secret(
    secret: str | bytes | None = None, *, data_dir: str | os.PathLike[str] | None = None
) -> bytes:
    """The desk's secret: ``secret`` if given, else ``ROOMKIT_DESK_SECRET``, else the key file.

    The key file lives in ``data_dir`` (by default ``$ROOMKIT_DESK_DATA``, else
    ``~/.roomkit/desk``: see :func:`data_folder`) and is created on first use.
    """
    if secret is not None:
        return secret_key(secret)
    from_env = os.environ.get(SECRET_ENV)
    if from_env:
        return secret_key(from_env)
    return load_or_create_secret(data_folder(data_dir))
