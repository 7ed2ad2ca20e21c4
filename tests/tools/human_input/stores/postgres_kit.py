"""The Postgres store's :class:`~tests.tools.human_input.stores.store_kit.Backend`: a schema
of the test's own on the session's cluster, and plain connections to look at what the
stores wrote there."""

from __future__ import annotations

import uuid
from typing import Any

import psycopg
from tests.tools.human_input.stores.store_kit import FOREIGN, RESYNC, Changes

from roomkit.stores._records import FIELDS
from roomkit.stores.postgres import PostgresStore


def new_schema() -> str:
    """A schema name no other test uses."""
    return f"t{uuid.uuid4().hex[:12]}"


class PostgresBackend:
    kind = "postgres"
    logger = "roomkit.tools.human_input.stores.postgres"
    repeats_own_writes = True

    def __init__(self, dsn: str, schema: str | None = None) -> None:
        self.dsn = dsn
        self.schema = schema or new_schema()
        self.elsewhere = [self.kind, dsn, self.schema]
        self._made: list[PostgresStore] = []

    def make(self, **options: Any) -> PostgresStore:
        store = PostgresStore(self.dsn, schema=self.schema, **options)
        self._made.append(store)
        return store

    async def live(self, changes: Changes) -> None:
        """NOTIFY keeps nothing for a listener that is not there yet: wait for LISTEN."""
        await changes.arrival(RESYNC)

    async def write_foreign(self, **overrides: str) -> None:
        values: dict[str, object] = {**dict.fromkeys(FIELDS), **FOREIGN, **overrides}
        columns = ", ".join(f'"{name}"' for name in values)
        marks = ", ".join("%s" for _ in values)
        async with await psycopg.AsyncConnection.connect(self.dsn, autocommit=True) as db:
            await db.execute(
                f'INSERT INTO "{self.schema}".roomkit_pending ({columns}) VALUES ({marks})',
                list(values.values()),
            )

    async def stored_ids(self) -> set[str]:
        async with await psycopg.AsyncConnection.connect(self.dsn, autocommit=True) as db:
            cursor = await db.execute(f'SELECT pending_id FROM "{self.schema}".roomkit_pending')
            return {row[0] for row in await cursor.fetchall()}

    async def stored_status(self, pending_id: str) -> str | None:
        async with await psycopg.AsyncConnection.connect(self.dsn, autocommit=True) as db:
            cursor = await db.execute(
                f'SELECT status FROM "{self.schema}".roomkit_pending WHERE pending_id = %s',
                (pending_id,),
            )
            row = await cursor.fetchone()
        return None if row is None else str(row[0])

    async def close(self) -> None:
        for store in self._made:
            await store.close()
