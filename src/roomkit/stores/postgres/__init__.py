"""The stores in a PostgreSQL database, shared by every process that reaches it.

:class:`PostgresStore` holds the pending requests, their histories, the spend-once ledger and
the notification outbox; :class:`PostgresRoomStore` holds the rooms and the turn journal.
Both use the same schema by default (``public``). They need the ``postgres`` extra.
"""

from roomkit._extras import requires_extra

with requires_extra("roomkit.stores.postgres (PostgresStore, PostgresRoomStore)", "postgres"):
    import psycopg  # noqa: F401
    import psycopg_pool  # noqa: F401

from roomkit.stores.postgres._requests import PostgresStore
from roomkit.stores.postgres._rooms import PostgresRoomStore

__all__ = ["PostgresRoomStore", "PostgresStore"]
