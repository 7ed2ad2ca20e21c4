"""The Postgres stores' tables, versioned: each store's version table, and the migration
that brings a store's tables to the code's version on the first connection, under an
advisory lock, refusing tables newer than the code (a user that may not create opens tables
their owner made at that version); a store opened only to read (``create=False``) looks at
its tables instead, and migrates nothing.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol

import psycopg
from psycopg import AsyncConnection

from roomkit.core.exceptions import StoreFormatError, StoreNotFoundError, StoreOutdatedError

__all__ = ["Migrations", "migrate", "up_to_date", "version_table"]


def version_table(schema: str, table: str) -> tuple[list[str], str, str]:
    """The statements of a version table ``table`` in ``schema`` (a checked name): those
    that create it (and the schema), the read of the version and its write."""
    s = f'"{schema}"'
    prepare = [
        # CREATE SCHEMA IF NOT EXISTS needs CREATE on the database even when the schema is
        # there: a user with CREATE on the schema alone makes its tables in it.
        f"DO $$ BEGIN IF to_regnamespace('{s}') IS NULL THEN CREATE SCHEMA {s}; END IF; END $$",
        f"CREATE TABLE IF NOT EXISTS {s}.{table} (version integer NOT NULL)",
    ]
    return (
        prepare,
        f"SELECT max(version) FROM {s}.{table}",
        f"INSERT INTO {s}.{table} (version) VALUES (%s)",
    )


class Migrations(Protocol):
    """What :func:`migrate` needs of a store's statements."""

    @property
    def lock(self) -> str:
        """The name of the advisory lock, and of the tables in messages."""

    @property
    def prepare(self) -> Sequence[str]:
        """Creates the schema and the version table when missing."""

    @property
    def read_version(self) -> str:
        """Reads the stored version."""

    @property
    def write_version(self) -> str:
        """Records a version reached."""

    @property
    def migrations(self) -> Mapping[int, Sequence[str]]:
        """The statements that bring the tables from one version below each key to it."""


async def migrate(db: AsyncConnection[Any], sql: Migrations, *, where: str, version: int) -> None:
    """Bring a store's tables to ``version`` in one transaction, under an advisory lock.

    ``sql.prepare`` runs first; then each migration above the stored version, each
    recorded. Two processes opening a new database take turns: CREATE ... IF NOT EXISTS
    alone races on the catalogue.

    A user that may not create (the schema, the version table) opens tables their owner
    made and brought to ``version``, without the lock: nothing is left to create or migrate.

    Raises:
        StoreFormatError: the stored version is newer than ``version`` (nothing changes).
        psycopg.errors.InsufficientPrivilege: the user may not create what is missing, or
            bring the tables to ``version``.
    """
    try:
        await _migrated(db, sql, where=where, version=version)
    except psycopg.errors.InsufficientPrivilege:
        if not await _at_version(db, sql, version):
            raise


async def _migrated(db: AsyncConnection[Any], sql: Migrations, *, where: str, version: int) -> None:
    async with db.transaction():
        await db.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", (sql.lock,))
        for statement in sql.prepare:
            await db.execute(statement)
        found = await _stored_version(db, sql)
        if found > version:
            raise StoreFormatError(
                f"the PostgreSQL store at {where} ({sql.lock}) holds tables of version "
                f"{found}, made by a newer roomkit; this one reads version {version}: upgrade "
                f"roomkit in this process (nothing was read or written)"
            )
        for step in range(found + 1, version + 1):
            for statement in sql.migrations[step]:
                await db.execute(statement)
            await db.execute(sql.write_version, (step,))


async def up_to_date(
    db: AsyncConnection[Any], sql: Migrations, *, where: str, schema: str, version: int
) -> bool:
    """Whether the request store's tables in ``schema`` are at ``version``, for a store opened
    only to read: ``False`` when they are newer (:func:`migrate` refuses them). Nothing is
    written.

    Raises:
        StoreNotFoundError: the schema holds no request store.
        StoreOutdatedError: the tables are of an earlier version (migrating them would
            write to the store).
    """
    cursor = await db.execute(
        "SELECT to_regclass(%s) IS NOT NULL AND to_regclass(%s) IS NOT NULL",
        (f'"{schema}".roomkit_schema', f'"{schema}".roomkit_pending'),
    )
    row = await cursor.fetchone()
    if row is None or not row[0]:
        raise StoreNotFoundError(
            f"the PostgreSQL database at {where} holds no roomkit store in schema "
            f"{schema!r} (no table roomkit_pending): nothing was created or changed in it"
        )
    found = await _stored_version(db, sql)
    if found < version:
        raise StoreOutdatedError(
            f"the PostgreSQL store at {where} (schema {schema!r}) holds tables of version "
            f"{found}, made by an earlier roomkit (this one uses version {version}), opened "
            "here only to read: nothing was created or changed in it. Open it once to write "
            "(create=True, the default: a desk on it, or an agent using it), which migrates "
            "it, then read it again",
            found=f"tables of version {found}; this roomkit uses {version}",
        )
    return found == version


async def _at_version(db: AsyncConnection[Any], sql: Migrations, version: int) -> bool:
    """Whether the tables are there, at ``version``, for this user to read."""
    try:
        async with db.transaction():
            return await _stored_version(db, sql) == version
    except psycopg.Error:
        return False


async def _stored_version(db: AsyncConnection[Any], sql: Migrations) -> int:
    """The version the tables were last brought to (0: none recorded)."""
    cursor = await db.execute(sql.read_version)
    row = await cursor.fetchone()
    return int(row[0]) if row is not None and row[0] is not None else 0
