"""The SQL of the SQLite store: its schema and every statement it runs.

One table, ``roomkit_pending``, holds a row per request: the flat fields of
:mod:`~roomkit.stores._records` as columns, plus ``settled_at`` (for
retention), ``changed_at`` (the last create or settle), both on the store's clock,
``seq``, the change counter, ``unannounced`` (1 from the insert until the request's
announcement is recorded or it settles; NULL after, and in rows older than the column) and
``settle_token`` (the token of the settle call that won, so that the same call run again
after a fault knows it won; NULL in rows older than the column). A one-row
table, ``roomkit_pending_seq``, hands out ``seq`` values: every create, settle, vote and
earlier deadline takes the next one inside its own write transaction, so ``seq`` grows in
commit order across every process (the file has one writer at a time), and ``seq > n``
lists exactly what moved since a reader saw ``n``.
``roomkit_history`` holds each request's history, one row per entry, numbered from 0 by
``seq``, and outlives the request's retention (it is the audit of what was decided and run);
``roomkit_chains`` when each chain was last appended to, on the store's clock, so that a
chain can go ``audit_retention`` seconds after its last entry once its request is closed,
and its signed head (``length``, ``head``, ``epoch``, ``mac``: see
:mod:`~roomkit.stores._trail`), written by the same statement, with
``checked``, the length the last checkpoint took (NULL: none took the chain yet);
``roomkit_checkpoints`` the trail's checkpoints (:mod:`~roomkit.stores.sqlite._trail`).
A fourth table, ``roomkit_ledger``, is the spend-once ledger (its statements are in
:mod:`~roomkit.stores.sqlite._ledger`); ``roomkit_grants``, the standing grants, is made by
:mod:`~roomkit.stores.sqlite._grants` at their first use. A file made by an earlier version
gains the columns it lacks from :data:`ADDED_COLUMNS` (and :data:`ADDED_CHAIN_COLUMNS`)
when it is opened.

Every COMMIT waits for each page it wrote to reach the disk, so a write touches only the
pages its readers need: the indexes of settled rows (the purge's, the listing of outcomes)
hold settled rows only, the index of open rows (the pending listing) open ones only, and
the history and the chains' heads are tables keyed by their primary key alone (``WITHOUT
ROWID``), with no second tree to write; the chains' index by age is made by the first purge
of old histories (:data:`CHAINS_BY_AGE`), where one runs, and their index of unchecked heads
by the first checkpoint (:data:`CHAINS_UNCHECKED`). A file made by an earlier version
has its indexes over every row replaced when it is opened (its history and chains tables
stay as they are: both shapes answer the same statements).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from roomkit.models.pending_input import PendingInput
from roomkit.stores._records import FIELDS, decode
from roomkit.stores._sql_columns import (
    COLUMNS,
    column_definitions,
    pending_listing,
    readable_rows,
    settled_listing,
)

__all__ = [
    "ADDED_CHAIN_COLUMNS",
    "ADDED_COLUMNS",
    "ADD_SETTLE_TOKEN",
    "ADD_UNANNOUNCED",
    "APPEND_HISTORY",
    "BUMP_SEQ",
    "CHAINS_BY_AGE",
    "CHAINS_UNCHECKED",
    "CHAIN_COLUMNS",
    "CHANGED_SINCE",
    "CHANGES_SINCE",
    "COLUMNS",
    "INSERT",
    "INSERT_SETTLED",
    "MADE_TABLES",
    "MARK_ANNOUNCED",
    "PENDING_COLUMNS",
    "PURGE",
    "READ_HISTORY",
    "READ_SEQ",
    "RECORD_VOTE",
    "SCHEMA",
    "SELECT_APPROVERS",
    "SELECT_BY_ID",
    "SELECT_BY_KEY",
    "SELECT_FOR_SETTLE",
    "SELECT_RECORD",
    "SELECT_STATE",
    "SELECT_UNANNOUNCED",
    "SEQ_BEFORE",
    "SETTLE",
    "SETTLE_IN_TIME",
    "SET_APPROVERS",
    "SET_DEADLINE",
    "decode_row",
    "decode_rows",
    "select_many",
    "select_pending",
    "select_settled",
]

logger = logging.getLogger("roomkit.tools.human_input.stores.sqlite")

# Column types beyond TEXT; SQLite stores what it is given, the types only set affinity.
_TYPES = {
    "detached": "INTEGER",
    "withdrawn": "INTEGER",
    "deadline": "REAL",
    "quorum": "INTEGER",
    "veto": "INTEGER",
}
_CONSTRAINTS = {"pending_id": " PRIMARY KEY NOT NULL", "status": " NOT NULL"}


_DEFINITIONS = column_definitions(_TYPES, _CONSTRAINTS, text="TEXT")

SCHEMA = f"""
PRAGMA journal_mode = WAL;
BEGIN IMMEDIATE;
CREATE TABLE IF NOT EXISTS roomkit_pending (
    {_DEFINITIONS},
    settled_at REAL,
    changed_at REAL,
    seq INTEGER NOT NULL,
    unannounced INTEGER,
    settle_token TEXT
);
CREATE TABLE IF NOT EXISTS roomkit_pending_seq (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    value INTEGER NOT NULL
);
INSERT OR IGNORE INTO roomkit_pending_seq (id, value) VALUES (1, 0);
CREATE UNIQUE INDEX IF NOT EXISTS roomkit_pending_by_key
    ON roomkit_pending ("key") WHERE "key" IS NOT NULL;
CREATE INDEX IF NOT EXISTS roomkit_pending_by_seq ON roomkit_pending (seq);
DROP INDEX IF EXISTS roomkit_pending_by_status;
DROP INDEX IF EXISTS roomkit_pending_by_settled_at;
DROP INDEX IF EXISTS roomkit_pending_by_actor_settled;
CREATE INDEX IF NOT EXISTS roomkit_pending_open ON roomkit_pending (seq) WHERE status = 'pending';
CREATE INDEX IF NOT EXISTS roomkit_pending_settled
    ON roomkit_pending (settled_at) WHERE settled_at IS NOT NULL;
CREATE INDEX IF NOT EXISTS roomkit_pending_settled_by_actor
    ON roomkit_pending (actor_id, settled_at) WHERE settled_at IS NOT NULL;
CREATE TABLE IF NOT EXISTS roomkit_ledger (
    entry TEXT PRIMARY KEY NOT NULL,
    spent_at REAL NOT NULL,
    expires_at REAL
);
CREATE INDEX IF NOT EXISTS roomkit_ledger_by_expiry
    ON roomkit_ledger (expires_at) WHERE expires_at IS NOT NULL;
CREATE TABLE IF NOT EXISTS roomkit_history (
    pending_id TEXT NOT NULL,
    seq INTEGER NOT NULL,
    entry TEXT NOT NULL,
    PRIMARY KEY (pending_id, seq)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS roomkit_chains (
    pending_id TEXT PRIMARY KEY NOT NULL,
    last_at REAL NOT NULL,
    length INTEGER,
    head TEXT,
    epoch INTEGER,
    mac TEXT,
    checked INTEGER
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS roomkit_checkpoints (
    n INTEGER PRIMARY KEY NOT NULL,
    body TEXT NOT NULL,
    mac TEXT NOT NULL
);
COMMIT;
"""
"""Switch the file to WAL and create what is missing; safe to run on every open."""

MADE_TABLES = tuple(re.findall(r"CREATE TABLE IF NOT EXISTS (\w+)", SCHEMA))
"""The tables :data:`SCHEMA` makes: a file made by an earlier version may lack some."""
SCHEMA_NAMES = "SELECT type, name FROM sqlite_master WHERE type IN ('table', 'index')"

READ_SEQ = "SELECT value FROM roomkit_pending_seq WHERE id = 1"
BUMP_SEQ = "UPDATE roomkit_pending_seq SET value = value + 1 WHERE id = 1 RETURNING value"

# A settled record is retained while ``settled_at > ?`` (the clock minus the retention).
_RETAINED = "(settled_at IS NULL OR settled_at > ?)"

SELECT_BY_ID = f"SELECT {COLUMNS} FROM roomkit_pending WHERE pending_id = ? AND {_RETAINED}"
SELECT_RECORD = f"SELECT {COLUMNS} FROM roomkit_pending WHERE pending_id = ?"
SELECT_FOR_SETTLE = f"SELECT {COLUMNS}, settle_token FROM roomkit_pending WHERE pending_id = ?"
SELECT_BY_KEY = f'SELECT {COLUMNS}, settled_at FROM roomkit_pending WHERE "key" = ?'
SELECT_STATE = "SELECT status, deadline FROM roomkit_pending WHERE pending_id = ?"

INSERT = (
    f"INSERT INTO roomkit_pending ({COLUMNS}, settled_at, changed_at, seq, unannounced) "
    f"VALUES ({', '.join('?' for _ in FIELDS)}, NULL, ?, ?, 1)"
)
"""Parameters: the fields, changed_at, seq. A new request is not announced yet."""
INSERT_SETTLED = (
    f"INSERT INTO roomkit_pending ({COLUMNS}, settled_at, changed_at, seq, unannounced) "
    f"VALUES ({', '.join('?' for _ in FIELDS)}, ?, ?, ?, NULL)"
)
"""Parameters: the fields, settled_at, changed_at, seq. A request settled as it is made owes
no announcement."""

PENDING_COLUMNS = "SELECT name FROM pragma_table_info('roomkit_pending')"
ADD_UNANNOUNCED = "ALTER TABLE roomkit_pending ADD COLUMN unannounced INTEGER"
"""Brings a file made before the column existed up to date (its rows read as announced)."""
ADD_SETTLE_TOKEN = "ALTER TABLE roomkit_pending ADD COLUMN settle_token TEXT"
"""Brings a file made before settle tokens up to date (its settled rows name no call)."""
ADDED_COLUMNS = {
    "unannounced": ADD_UNANNOUNCED,
    "settle_token": ADD_SETTLE_TOKEN,
    "kind": 'ALTER TABLE roomkit_pending ADD COLUMN "kind" TEXT',
    "arguments_digest": 'ALTER TABLE roomkit_pending ADD COLUMN "arguments_digest" TEXT',
    "approvers": 'ALTER TABLE roomkit_pending ADD COLUMN "approvers" TEXT',
    "quorum": 'ALTER TABLE roomkit_pending ADD COLUMN "quorum" INTEGER',
    "veto": 'ALTER TABLE roomkit_pending ADD COLUMN "veto" INTEGER',
    "voters": 'ALTER TABLE roomkit_pending ADD COLUMN "voters" TEXT',
    "votes": 'ALTER TABLE roomkit_pending ADD COLUMN "votes" TEXT',
}
"""The columns added since the first version, and the statement that adds each."""
CHAIN_COLUMNS = "SELECT name FROM pragma_table_info('roomkit_chains')"
ADDED_CHAIN_COLUMNS = {
    name: f"ALTER TABLE roomkit_chains ADD COLUMN {name} {kind}"
    for name, kind in (
        ("length", "INTEGER"),
        ("head", "TEXT"),
        ("epoch", "INTEGER"),
        ("mac", "TEXT"),
        ("checked", "INTEGER"),
    )
}
"""The columns of ``roomkit_chains`` added since it came: its signed head."""
CHAINS_UNCHECKED = (
    "CREATE INDEX IF NOT EXISTS roomkit_chains_unchecked ON roomkit_chains (pending_id) "
    "WHERE checked IS NOT length"
)
"""The heads a checkpoint has yet to take, so that it reads those and not every chain: made
by the first checkpoint (only a store with an audit key takes them), so that a file never
checkpointed writes no entry of it on every append."""
MARK_ANNOUNCED = (
    "UPDATE roomkit_pending SET unannounced = NULL WHERE pending_id = ? AND unannounced = 1"
)
SELECT_UNANNOUNCED = "SELECT unannounced FROM roomkit_pending WHERE pending_id = ?"

_SETTLE_SET = (
    "UPDATE roomkit_pending SET status = ?, result = ?, reject_reason = ?, withdrawn = ?, "
    "settled_by = COALESCE(?, settled_by), settle_token = ?, settled_at = ?, changed_at = ?, "
    "unannounced = NULL, seq = "
)
"""What every settle writes, up to the change counter's value."""

SETTLE = f"{_SETTLE_SET}? WHERE pending_id = ? RETURNING {COLUMNS}"
"""Parameters: status, result, reason, withdrawn, settled_by, settle_token, settled_at,
changed_at, seq, pending_id. A settled request owes no announcement: the announcer's
``mark_announced`` after it then writes nothing, and costs no sync of the file."""

SETTLE_IN_TIME = (
    f"{_SETTLE_SET}(SELECT value + 1 FROM roomkit_pending_seq WHERE id = 1) "
    "WHERE pending_id = ? AND status = 'pending' AND (deadline IS NULL OR "
    f"(typeof(deadline) = 'real' AND deadline > ?)) RETURNING {COLUMNS}"
)
"""Parameters: as :data:`SETTLE` without ``seq``, then the clock. :data:`SETTLE` of a request
still pending whose deadline (a number, or none) has not passed, with the change counter's
next value (:data:`BUMP_SEQ` takes it after); it writes no other row."""

SET_DEADLINE = "UPDATE roomkit_pending SET deadline = ?, seq = ? WHERE pending_id = ?"
"""Parameters: deadline, seq, pending_id: waiters elsewhere learn of an earlier deadline."""

RECORD_VOTE = (
    "UPDATE roomkit_pending SET votes = ?, approvers = ?, arguments = ?, arguments_digest = ?, "
    f"changed_at = ?, seq = ? WHERE pending_id = ? RETURNING {COLUMNS}"
)
"""Parameters: votes, approvers, arguments, arguments_digest (each as encoded), changed_at,
seq, pending_id."""

SELECT_APPROVERS = (
    "SELECT status, approvers, voters, quorum FROM roomkit_pending WHERE pending_id = ?"
)
SET_APPROVERS = (
    f"UPDATE roomkit_pending SET approvers = ?, voters = ? WHERE pending_id = ? RETURNING {COLUMNS}"
)
HISTORY_HEAD = (
    "SELECT seq, CAST(entry AS BLOB) FROM roomkit_history "
    "WHERE pending_id = ? ORDER BY seq DESC LIMIT 1"
)
"""Parameter: pending_id; the chain's head, read inside the append's write transaction, as
the bytes stored: an entry there that is not UTF-8 (no store writes one) is linked to as it
is, and ``roomkit audit verify`` names it, rather than failing every append after it."""
APPEND_HISTORY = "INSERT INTO roomkit_history (pending_id, seq, entry) VALUES (?, ?, ?)"
"""Parameters: pending_id, the seq after the head, the entry's text."""
TOUCH_CHAIN = (
    "INSERT INTO roomkit_chains (pending_id, last_at, length, head, epoch, mac) "
    "VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (pending_id) DO UPDATE SET "
    "last_at = excluded.last_at, length = excluded.length, head = excluded.head, "
    "epoch = excluded.epoch, mac = excluded.mac"
)
"""Parameters: pending_id, now (when the chain was last appended to, on the store's clock),
and its head: length, digest, epoch, signature."""
CHAINS_BY_AGE = "CREATE INDEX IF NOT EXISTS roomkit_chains_by_age ON roomkit_chains (last_at)"
"""The chains by their last append, which the purge of old histories reads: made by the
first purge (only a store with an ``audit_retention`` purges them), so that a file whose
histories are kept for good writes no entry of it on every append."""
PURGE_CHAINS = (
    "DELETE FROM roomkit_chains WHERE last_at <= ? AND NOT EXISTS (SELECT 1 FROM "
    "roomkit_pending p WHERE p.pending_id = roomkit_chains.pending_id AND p.status = 'pending') "
    "RETURNING pending_id"
)
"""Parameter: the clock minus the audit retention; the chains that go, none of an open
request's."""
DROP_CHAIN = "DELETE FROM roomkit_history WHERE pending_id = ?"
READ_HISTORY = (
    "SELECT seq, CAST(entry AS BLOB) FROM roomkit_history WHERE pending_id = ? ORDER BY seq"
)
"""Parameter: pending_id. The entries are read as bytes, so that bytes there that are not
UTF-8 (no store writes them) are named by :func:`~roomkit.stores._history.read_entry`
instead of failing the read."""

PURGE = "DELETE FROM roomkit_pending WHERE settled_at <= ? RETURNING pending_id"
"""Parameter: the clock minus the retention; the complement of what reads call retained."""

CHANGES_SINCE = f"SELECT {COLUMNS}, seq FROM roomkit_pending WHERE seq > ? ORDER BY seq"
"""Rows: the record's columns, then ``seq``; the feed hands settled records to listeners."""
CHANGED_SINCE = (
    "SELECT value, NULL FROM roomkit_pending_seq WHERE id = 1 UNION ALL SELECT NULL, pending_id "
    "FROM (SELECT pending_id FROM roomkit_pending WHERE seq > ? ORDER BY seq LIMIT ?)"
)
"""Parameters: the counter last seen, the most ids wanted. Rows: the change counter (its id
``NULL``), and the id of each request changed since, all read in one snapshot."""
SEQ_BEFORE = "SELECT COALESCE(MAX(seq), 0) FROM roomkit_pending WHERE changed_at < ?"
"""The last change counter known to be older than a time (a row changed later has more)."""

# Well under SQLite's smallest limit on bound parameters (999 before 3.32).
_CHUNK = 500


def select_many(pending_ids: Sequence[str]) -> list[tuple[str, list[Any]]]:
    """Statements and parameters that read ``pending_ids`` (before the retention bound)."""
    statements = []
    for start in range(0, len(pending_ids), _CHUNK):
        chunk = list(pending_ids[start : start + _CHUNK])
        marks = ", ".join("?" for _ in chunk)
        statements.append(
            (
                f"SELECT {COLUMNS} FROM roomkit_pending "
                f"WHERE pending_id IN ({marks}) AND {_RETAINED}",
                chunk,
            )
        )
    return statements


def select_pending(filters: Mapping[str, str | None]) -> tuple[str, list[Any]]:
    """The statement listing pending requests, oldest first, with the given column filters."""
    return pending_listing("roomkit_pending", filters, mark="?")


def select_settled(
    actor_ids: Sequence[str | None] | None, cutoff: float, limit: int
) -> tuple[str, list[Any]]:
    """The statement listing outcomes settled after ``cutoff``, newest first.

    ``actor_ids`` keeps the requests naming one of them (``None``: naming no actor).
    """
    return settled_listing(
        "roomkit_pending",
        actor_ids,
        cutoff,
        limit,
        mark="?",
        among=_among_actors,
        unnamed=f"(actor_id IS NULL AND {_SETTLED})",
    )


# Each branch of the actors' OR names the settled rows, so that each reads the index of
# settled rows by actor (partial, as the SQLite planner sees it per branch).
_SETTLED = "settled_at IS NOT NULL"


def _among_actors(actor_ids: list[str]) -> tuple[str, list[Any]]:
    marks = ", ".join("?" for _ in actor_ids)
    return f"(actor_id IN ({marks}) AND {_SETTLED})", list(actor_ids)


def decode_row(row: Sequence[Any]) -> PendingInput:
    """Rebuild a request from a row of :data:`COLUMNS`.

    Raises:
        CorruptRecordError: the row is not a record this library wrote.
    """
    # A row may carry more columns after the record's own (``settled_at``).
    return decode(dict(zip(FIELDS, row, strict=False)))


def decode_rows(rows: Iterable[Sequence[Any]]) -> list[PendingInput]:
    """Rebuild the requests of ``rows``, skipping (and logging) the rows that are corrupt."""
    return readable_rows(rows, decode_row, logger)
