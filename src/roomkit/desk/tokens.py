"""The desk's signed tokens and its secret: :mod:`roomkit.auth.tokens`, under its first name.

Token signing lives in :mod:`roomkit.auth.tokens`, below the desk, where ``roomkit mcp`` and
the notifier's answer links read it without the desk; this path keeps working.
"""

from __future__ import annotations

from roomkit.auth.tokens import (
    DEFAULT_DATA_DIR,
    DEFAULT_TOKEN_TTL,
    KEY_FILE,
    KIND_CLAIM,
    SECRET_ENV,
    SESSION_TTL,
    SIGN_IN,
    issue_answer_link,
    issue_sign_in_link,
    issue_token,
    load_or_create_secret,
    read_token,
    resolve_secret,
    secret_key,
    token_claims,
    token_kind,
)

# Constants the module held without listing them, for code that imported them from here.
from roomkit.auth.tokens import DEFAULT_LINK_TTL as DEFAULT_LINK_TTL
from roomkit.auth.tokens import MAX_TOKEN_CHARS as MAX_TOKEN_CHARS
from roomkit.auth.tokens import MIN_SECRET_BYTES as MIN_SECRET_BYTES

__all__ = [
    "DEFAULT_DATA_DIR",
    "DEFAULT_TOKEN_TTL",
    "KEY_FILE",
    "KIND_CLAIM",
    "SECRET_ENV",
    "SESSION_TTL",
    "SIGN_IN",
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
