"""The error a back end raises when the client library its extra installs is missing."""

from __future__ import annotations

__all__ = ["missing_client"]


def missing_client(stores: str, package: str, extra: str) -> ImportError:
    """The error for ``stores`` (e.g. ``"Redis stores (RedisStore, RedisRoomStore)"``), which
    need ``package``, installed by the extra ``extra``."""
    return ImportError(f"The {stores} need {package}: pip install 'roomkit-hitl[{extra}]'")
