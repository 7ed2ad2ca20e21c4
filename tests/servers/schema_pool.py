"""PostgreSQL schemas that tests give back, handed out again empty under a new name.

A store opened on a new schema makes its tables and indexes there: some 30 ms of the
server's work, more than the rest of most tests on PostgreSQL. A :class:`SchemaPool` keeps
the schemas earlier tests of the session used, and hands one out as a store finds the tables
it made itself a moment ago: every row deleted but the versions, every sequence back at its
start, no grants table (a new schema has none until a grant is added), and the schema renamed
to a name no test has used. The new name is what keeps the tests apart: every statement of a
store names its schema, and its NOTIFY channel and advisory locks are named after it, so a
store an earlier test left open (its connections, its LISTEN, the statements it prepared
before the rename) reaches nothing of the next test.

A schema is handed out again only when it is exactly as stores make it: each of its tables,
columns (in order), defaults, indexes, constraints, sequences, versions, owners and grants
is what a request store, its grants and a room store make on a new schema, no trigger,
function, rule, policy or type was added, and every store's tables are there whole. A test
that changed any of it (a trigger it left, a column it dropped, a version it wrote, a role
it granted to), or whose connections still hold a lock in the schema, leaves it to itself:
the next test gets a brand-new schema. A test that needs one anyway (a store making its
tables, a migration) names its own, with :func:`~tests.servers.stores.fresh_prefix`.
"""

from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Self

import psycopg
from psycopg import sql
from tests.servers.stores import fresh_prefix

__all__ = ["SchemaPool"]

_SHAPE = """
WITH ns AS (SELECT oid, nspowner, nspacl FROM pg_namespace WHERE nspname = {name}),
rel AS (SELECT c.* FROM pg_class c JOIN ns ON c.relnamespace = ns.oid)
SELECT 'schema ' || pg_get_userbyid(nspowner) || ' ' || coalesce(nspacl::text, '') FROM ns
UNION ALL SELECT format('relation %s %s %s %s %s %s', relname, relkind,
    pg_get_userbyid(relowner), relacl, relrowsecurity, relpersistence) FROM rel
UNION ALL SELECT format('column %s %s %s %s %s %s', c.relname, a.attnum, a.attname,
    format_type(a.atttypid, a.atttypmod), a.attnotnull, pg_get_expr(d.adbin, d.adrelid))
  FROM pg_attribute a JOIN rel c ON a.attrelid = c.oid
  LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
  WHERE a.attnum > 0 AND c.relkind IN ('r', 'p', 'v', 'm', 'f')
UNION ALL SELECT 'index ' || pg_get_indexdef(i.indexrelid)
  FROM pg_index i JOIN rel c ON i.indrelid = c.oid
UNION ALL SELECT format('constraint %s %s %s', c.relname, k.conname, pg_get_constraintdef(k.oid))
  FROM pg_constraint k JOIN ns ON k.connamespace = ns.oid LEFT JOIN rel c ON c.oid = k.conrelid
UNION ALL SELECT format('trigger %s %s', c.relname, t.tgname)
  FROM pg_trigger t JOIN rel c ON t.tgrelid = c.oid WHERE NOT t.tgisinternal
UNION ALL SELECT format('rule %s %s', c.relname, r.rulename)
  FROM pg_rewrite r JOIN rel c ON r.ev_class = c.oid
UNION ALL SELECT format('policy %s %s', c.relname, p.polname)
  FROM pg_policy p JOIN rel c ON p.polrelid = c.oid
UNION ALL SELECT format('function %s(%s)', proname, pg_get_function_identity_arguments(p.oid))
  FROM pg_proc p JOIN ns ON p.pronamespace = ns.oid
UNION ALL SELECT format('type %s %s', typname, typtype)
  FROM pg_type t JOIN ns ON t.typnamespace = ns.oid
UNION ALL SELECT format('sequence %s %s %s %s %s %s %s', c.relname, s.seqtypid::regtype,
    s.seqstart, s.seqincrement, s.seqmin, s.seqmax, s.seqcycle)
  FROM pg_sequence s JOIN rel c ON s.seqrelid = c.oid
UNION ALL SELECT format('versions %s %s', relname, query_to_xml(format(
    'SELECT version FROM %I.%I ORDER BY 1', {name}, relname), false, true, ''))
  FROM rel WHERE relkind = 'r' AND relname LIKE '%\\_schema'
UNION ALL SELECT format('locked %s', l.pid)
  FROM pg_locks l JOIN rel c ON l.relation = c.oid WHERE l.pid <> pg_backend_pid()
"""
"""Every line that says how a schema is made: the tables, what belongs to them, the rows of
its version tables, and whether another connection holds a lock in it."""


class SchemaPool:
    """The schemas one cluster's tests gave back, each handed out again once, emptied and
    renamed; a brand-new name when none is sound.

    Args:
        dsn: the cluster's DSN, as its superuser.
    """

    def __init__(self, dsn: str) -> None:
        self._dsn = dsn
        self._given_back: list[str] = []
        self._db: psycopg.Connection[Any] | None = None
        self._made: _Made | None = None

    def take(self) -> str:
        """A schema no other test uses: one given back, emptied under a new name, else a
        brand-new one."""
        while self._given_back:
            schema, renamed = self._given_back.pop(), fresh_prefix()
            try:
                if self._recycled(schema, renamed):
                    return renamed
            except psycopg.Error:
                # The server was restarted, or the schema is not one a store made: drop the
                # connection, and this schema with it.
                self.close()
        return fresh_prefix()

    def give_back(self, schema: str) -> None:
        """Offer the schema of a test that has ended to a later test."""
        self._given_back.append(schema)

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def close(self) -> None:
        """Close the pool's connection (the next :meth:`take` opens another)."""
        if self._db is not None:
            self._db.close()
            self._db = None

    def _connection(self) -> psycopg.Connection[Any]:
        if self._db is None:
            self._db = psycopg.connect(
                self._dsn, connect_timeout=10, application_name="roomkit-tests-schemas"
            )
        return self._db

    def _recycled(self, schema: str, renamed: str) -> bool:
        """Empty ``schema`` and rename it ``renamed``, when it is sound and nothing holds it."""
        if self._made is None:
            self._made = self._made_by_stores()
        db = self._connection()
        lines = self._shape(db, schema)
        if not self._made.sound(lines):
            db.rollback()
            return False
        tables = _tables(lines)
        dropped = _tables(self._made.grants) & tables
        statements = [
            sql.SQL("LOCK TABLE {} IN ACCESS EXCLUSIVE MODE NOWAIT").format(
                sql.SQL(", ").join(sql.Identifier(schema, name) for name in sorted(tables))
            ),
            # A new schema has no grants table until a grant is added: neither has this one.
            *(sql.SQL("DROP TABLE {}").format(sql.Identifier(schema, name)) for name in dropped),
            # No foreign key checked: the tables all empty together.
            sql.SQL("SET LOCAL session_replication_role = replica"),
            *(
                sql.SQL("DELETE FROM {}").format(sql.Identifier(schema, name))
                for name in sorted(tables - dropped)
                if not name.endswith("_schema")
            ),
            sql.SQL(
                "SELECT setval(seqrelid, seqstart, false) FROM pg_sequence JOIN pg_class c "
                "ON c.oid = seqrelid WHERE c.relnamespace = {}::regnamespace"
            ).format(sql.Literal(f'"{schema}"')),
            sql.SQL("ALTER SCHEMA {} RENAME TO {}").format(
                sql.Identifier(schema), sql.Identifier(renamed)
            ),
        ]
        db.execute(sql.SQL(";\n").join(statements))
        db.commit()
        return True

    @staticmethod
    def _shape(db: psycopg.Connection[Any], schema: str) -> frozenset[str]:
        """How ``schema`` is made, the schema's name spelled ``§`` (empty: no such schema)."""
        query = sql.SQL(_SHAPE).format(name=sql.Literal(schema))
        rows = db.execute(query).fetchall()
        return frozenset(str(row[0]).replace(schema, "§") for row in rows)

    def _made_by_stores(self) -> _Made:
        """What the stores make on a new schema."""
        requests, granted, rooms = fresh_prefix(), fresh_prefix(), fresh_prefix()
        # The stores are async, and a test's loop may be running: they run on a loop of
        # their own, in a thread.
        with ThreadPoolExecutor(1) as thread:
            thread.submit(asyncio.run, _make_tables(self._dsn, requests, granted, rooms)).result()
        db = self._connection()
        shapes = [self._shape(db, schema) for schema in (requests, granted, rooms)]
        for schema in (requests, granted, rooms):
            db.execute(sql.SQL("DROP SCHEMA {} CASCADE").format(sql.Identifier(schema)))
        db.commit()
        [namespace] = (line for line in shapes[0] if line.startswith("schema "))
        return _Made(
            namespace,
            requests=shapes[0] - {namespace},
            grants=shapes[1] - shapes[0],
            rooms=shapes[2] - {namespace},
        )


@dataclass(frozen=True)
class _Made:
    """The lines of a schema in which stores made their tables: the schema's own, and those
    of each store's part (a request store's tables, its grants', a room store's)."""

    namespace: str
    requests: frozenset[str]
    grants: frozenset[str]
    rooms: frozenset[str]

    def sound(self, lines: frozenset[str]) -> bool:
        """Whether ``lines`` are those of the schema with some of the parts, each whole and
        unchanged, and nothing else."""
        if self.namespace not in lines:
            return False
        rest = lines - {self.namespace}
        found = [part for part in (self.requests, self.grants, self.rooms) if part & rest]
        return bool(found) and rest == frozenset().union(*found)


def _tables(lines: frozenset[str]) -> frozenset[str]:
    """The names of the tables among a schema's lines."""
    relations = (line.split()[1:3] for line in lines if line.startswith("relation "))
    return frozenset(name for name, kind in relations if kind == "r")


async def _make_tables(dsn: str, requests: str, granted: str, rooms: str) -> None:
    """Have the stores make their tables: a request store's in ``requests``, the same with
    its grants' in ``granted``, a room store's in ``rooms``."""
    from roomkit.stores.grants import Grant
    from roomkit.stores.postgres import PostgresRoomStore, PostgresStore

    async with PostgresStore(dsn, schema=requests):
        pass
    async with PostgresStore(dsn, schema=granted) as store:
        await store.grants.add(
            Grant(grant_id="g", tool="t", granted_by=("a",), expires_at=store.clock() + 60)
        )
    store = PostgresRoomStore(dsn, schema=rooms)
    try:
        await store.open()
    finally:
        await store.close()
