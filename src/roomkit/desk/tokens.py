"""The desk's signed tokens and its secret: :mod:`roomkit.auth.tokens`, under its first name.

Token signing lives in :mod:`roomkit.auth.tokens`, below the desk, where ``roomkit mcp`` and
the notifier's answer links read it without the desk; this path keeps working.
"""

from __future__ import annotations

from typing import Any

from roomkit.auth import tokens as _tokens
from roomkit.auth.tokens import *  # noqa: F403 -- this path re-exports every listed name

# Constants the module held without listing them, for code that imported them from here.
from roomkit.auth.tokens import DEFAULT_LINK_TTL as DEFAULT_LINK_TTL
from roomkit.auth.tokens import MAX_TOKEN_CHARS as MAX_TOKEN_CHARS
from roomkit.auth.tokens import MIN_SECRET_BYTES as MIN_SECRET_BYTES

# One list of the names, kept where they live.
__all__ = list(_tokens.__all__)


def __getattr__(name: str) -> Any:
    # DEFAULT_DATA_DIR, as roomkit.auth.tokens reads it: when used.
    if name == "DEFAULT_DATA_DIR":
        return _tokens.default_data_dir()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
