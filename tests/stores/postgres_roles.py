"""A role of its own for a PostgreSQL store test, and a look at the store's sessions."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from urllib.parse import urlsplit

import psycopg

LOOKS = 1000
"""How many times the server is asked whether the store's sessions have ended: each look is
a round trip, after which a session the store closed has long been gone."""


@asynccontextmanager
async def login_role(database: str, *setup: str) -> AsyncIterator[str]:
    """The DSN of a new role of ``database`` that may log in (password ``pw``), once the
    statements of ``setup`` ran as the database's owner (``{role}`` in them names the role);
    the role and what it owns are dropped after."""
    role = f"app{os.urandom(4).hex()}"
    async with await psycopg.AsyncConnection.connect(database, autocommit=True) as admin:
        await admin.execute(f"CREATE ROLE {role} LOGIN PASSWORD 'pw'")
        for statement in setup:
            await admin.execute(statement.format(role=role))
    address = urlsplit(database)
    yield f"postgresql://{role}:pw@{address.hostname}:{address.port}{address.path}"
    async with await psycopg.AsyncConnection.connect(database, autocommit=True) as admin:
        await admin.execute(f"DROP OWNED BY {role}")
        await admin.execute(f"DROP ROLE {role}")


async def sessions(database: str, name: str) -> int:
    """How many sessions named ``name`` the server still has, once those ending have ended."""
    async with await psycopg.AsyncConnection.connect(database, autocommit=True) as admin:
        for _ in range(LOOKS):
            cursor = await admin.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE application_name = %s", (name,)
            )
            row = await cursor.fetchone()
            assert row is not None
            if row[0] == 0:
                return 0
        return int(row[0])
