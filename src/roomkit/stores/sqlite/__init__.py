"""The stores in one SQLite file, shared by the processes of one machine.

:class:`SQLiteStore` holds the pending requests, their histories, the spend-once ledger and
the notification outbox; :class:`SQLiteRoomStore` holds the rooms and the turn journal.
Both may share one file (:func:`roomkit.stores.open_url` opens them so). They need the
``sqlite`` extra.
"""

# First, so that a missing aiosqlite is named with the extra to install.
from roomkit.stores.sqlite import _connect  # noqa: F401
from roomkit.stores.sqlite._requests import SQLiteStore
from roomkit.stores.sqlite._rooms import SQLiteRoomStore

__all__ = ["SQLiteRoomStore", "SQLiteStore"]
