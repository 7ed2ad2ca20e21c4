"""The stores on a Redis server, shared by every process that reaches it.

:class:`RedisStore` holds the pending requests, their histories, the spend-once ledger and
the notification outbox; :class:`RedisRoomStore` holds the rooms and the turn journal.
Both use the same key prefix by default (``roomkit``). They need the ``redis`` extra.
"""

# First, so that a missing redis-py is named with the extra to install.
from roomkit.stores.redis import _link  # noqa: F401
from roomkit.stores.redis._requests import DEFAULT_URL, RedisStore
from roomkit.stores.redis._rooms import RedisRoomStore

__all__ = ["DEFAULT_URL", "RedisRoomStore", "RedisStore"]
