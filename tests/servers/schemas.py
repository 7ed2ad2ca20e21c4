"""A PostgreSQL schema that the examples of a state machine take one after another.

Making a store's tables in a new schema takes a tenth of a second or more on the test
cluster: more than the rest of an example's opening. The examples of one hypothesis run
follow each other, each closing its stores before the next opens, so they can share one
schema: :func:`emptied` gives it back as a new store finds its tables (no row but the
version, every sequence from its start) at the cost of a few deletes.
"""

from __future__ import annotations

import psycopg

__all__ = ["emptied"]


async def emptied(dsn: str, schema: str) -> str:
    """Delete every row of the tables in ``schema`` but those of its version tables (the
    ``*_schema`` tables, which keep the store from making its tables again) and restart its
    sequences; a schema not made yet is left for the store to make. Returns ``schema``.

    Raises:
        psycopg.Error: the server could not be reached or refused a statement.
    """
    async with await psycopg.AsyncConnection.connect(dsn, connect_timeout=10) as db:
        tables = await db.execute(
            "SELECT tablename FROM pg_tables WHERE schemaname = %s AND tablename NOT LIKE %s",
            (schema, "%\\_schema"),
        )
        # No foreign key checked: the tables all empty together, in whatever order they come.
        await db.execute("SET LOCAL session_replication_role = replica")
        for (table,) in await tables.fetchall():
            await db.execute(f'DELETE FROM "{schema}"."{table}"')
        sequences = await db.execute(
            "SELECT sequencename FROM pg_sequences WHERE schemaname = %s", (schema,)
        )
        for (sequence,) in await sequences.fetchall():
            await db.execute(f'ALTER SEQUENCE "{schema}"."{sequence}" RESTART')
        await db.commit()
    return schema
