"""The SQL of the Postgres store: its tables, their version, and every statement it runs.

One table, ``roomkit_pending``, holds a row per request: the flat fields of
:mod:`~roomkit.stores._records` as columns, plus ``settled_at`` (for
retention) and ``changed_at`` (the last create or settle), both on the store's clock,
``seq`` (from a sequence, for the polling feed), ``unannounced`` (true from the insert until
the request's announcement is recorded or it settles) and ``settle_token`` (the token of the
settle call that won). ``roomkit_ledger`` is the spend-once ledger; ``roomkit_history``
(version 2, with the approval columns) each request's history, one row per entry; ``roomkit_outbox``
(version 3, its index of endings version 4) the notification outbox (see
:mod:`~roomkit.stores.outbox`); version 5 adds the quorum columns, and
``roomkit_chains`` (version 6) holds when each history was last appended to; version 7
adds to it each chain's signed head (``length``, ``head``, ``epoch``, ``mac``, and
``checked``, the length the last checkpoint took; see
:mod:`~roomkit.stores._trail`) and ``roomkit_checkpoints``, the trail's
checkpoints (:mod:`~roomkit.stores.postgres._trail`). Version 8 adds
``changed_tx``: the transaction that last created, settled, voted on or moved the deadline of
the row, which tells a waiter's backstop what changed since it last looked (see
:mod:`~roomkit.stores.postgres._changes`); rows older than the column
hold NULL, and are never named. Version 9 adds the outbox's ``claim``: the token of the claim
that took each row last (see :mod:`~roomkit.stores._lost_claims`). Version 10 adds the
ledger's ``token``: the token of the spend that wrote each row, by which a spend run again
after its COMMIT's reply was lost finds the row its own (a refund's mark row holds the
refund's token: see :mod:`~roomkit.stores.postgres._spending`).
``roomkit_schema`` holds the version of the tables: a store creates them on first use and
brings an older version up to date (one migration per version, under a lock, so two
processes opening at once take turns); a database whose version is newer than this code is
refused.

Every name is qualified with the store's PostgreSQL schema, so that several stores (or test
runs) share one database.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, overload

from roomkit.models.pending_input import PendingInput
from roomkit.stores._records import APPROVAL_FIELDS, FIELDS, FIRST_FIELDS, QUORUM_FIELDS, decode
from roomkit.stores._sql_columns import (
    COLUMNS,
    column_definitions,
    pending_listing,
    quote,
    readable_rows,
    settled_listing,
)
from roomkit.stores._trail import Anchoring
from roomkit.stores.outbox import IS_ENDING
from roomkit.stores.postgres._migrate import version_table

__all__ = [
    "MAX_PAYLOAD",
    "VERSION",
    "Statements",
    "decode_row",
    "decode_rows",
    "read_back",
    "stored",
]

logger = logging.getLogger("roomkit.tools.human_input.stores.postgres")

VERSION = 10
"""The version of the tables this code reads and writes (2: approvals and histories; 3: the
notification outbox; 4: its index of requests' endings, for the purge; 5: quorums and their
votes; 6: when each history was last appended to, for its audit retention; 7: each
history's signed head, and the checkpoints; 8: the transaction of each row's last change, for
the backstop of waiters; 9: the token of each outbox row's last claim; 10: the token of each
ledger row's spend)."""

_TYPES = {
    "detached": "integer",
    "withdrawn": "integer",
    "deadline": "double precision",
    "quorum": "integer",
    "veto": "integer",
}
_CONSTRAINTS = {"pending_id": " PRIMARY KEY", "status": " NOT NULL"}


# Version 1's table; version 2 adds the columns that came after.
_DEFINITIONS = column_definitions(_TYPES, _CONSTRAINTS, text="text", fields=FIRST_FIELDS)
_RETAINED = "(settled_at IS NULL OR settled_at > %s)"
_CARRIED = f"('record ' || json_build_array({COLUMNS})::text)"
_NOW = "COALESCE(%(now)s::double precision, extract(epoch FROM statement_timestamp()))"
"""The time a settle judges the deadline by: the store's clock, or else the server's."""
_TX = "pg_current_xact_id()::text::bigint"
"""The id of the transaction that writes a row (64 bits: it never wraps around)."""
MAX_PAYLOAD = 7900
"""Bytes a NOTIFY payload may hold, under the server's 8000."""


class Statements:
    """Every statement of a store whose tables live in ``schema``.

    Args:
        schema: a name :func:`check_schema_name` accepted.
    """

    def __init__(self, schema: str) -> None:
        s = f'"{schema}"'
        pending = f"{s}.roomkit_pending"
        ledger = f"{s}.roomkit_ledger"
        history = f"{s}.roomkit_history"
        chains = f"{s}.roomkit_chains"
        self.schema = schema
        self.anchoring = Anchoring.from_environment()
        """What the heads every append writes are signed with (the store's trail's)."""
        self.channel = f"roomkit_{schema}"
        """The NOTIFY channel of this schema's changes."""
        self.lock = f"roomkit schema {schema}"
        """The name of the advisory lock that migrations take."""
        self.prepare, self.read_version, self.write_version = version_table(
            schema, "roomkit_schema"
        )
        self.migrations: dict[int, list[str]] = {
            1: [
                f"CREATE SEQUENCE IF NOT EXISTS {s}.roomkit_pending_seq",
                f"CREATE TABLE IF NOT EXISTS {pending} (\n    {_DEFINITIONS},\n"
                "    settled_at double precision,\n    changed_at double precision,\n"
                f"    seq bigint NOT NULL DEFAULT nextval('{s}.roomkit_pending_seq'),\n"
                "    unannounced boolean,\n    settle_token text\n)",
                f'CREATE UNIQUE INDEX IF NOT EXISTS roomkit_pending_by_key ON {pending} ("key") '
                'WHERE "key" IS NOT NULL',
                f"CREATE INDEX IF NOT EXISTS roomkit_pending_open ON {pending} (room_id) "
                "WHERE status = 'pending'",
                f"CREATE INDEX IF NOT EXISTS roomkit_pending_by_settled_at ON {pending} "
                "(settled_at) WHERE settled_at IS NOT NULL",
                f"CREATE INDEX IF NOT EXISTS roomkit_pending_by_actor_settled ON {pending} "
                "(actor_id, settled_at)",
                f"CREATE TABLE IF NOT EXISTS {ledger} (entry text PRIMARY KEY, "
                "spent_at double precision NOT NULL, expires_at double precision)",
                f"CREATE INDEX IF NOT EXISTS roomkit_ledger_by_expiry ON {ledger} (expires_at) "
                "WHERE expires_at IS NOT NULL",
            ],
            2: [
                *(
                    f"ALTER TABLE {pending} ADD COLUMN IF NOT EXISTS {quote(name)} text"
                    for name in APPROVAL_FIELDS
                ),
                f"CREATE TABLE IF NOT EXISTS {history} (pending_id text NOT NULL, "
                "seq integer NOT NULL, entry text NOT NULL, PRIMARY KEY (pending_id, seq))",
            ],
            3: [
                f"CREATE TABLE IF NOT EXISTS {s}.roomkit_outbox (item_id text PRIMARY KEY, "
                "pending_id text NOT NULL, due double precision NOT NULL, body text NOT NULL, "
                "attempts integer NOT NULL DEFAULT 0, created double precision NOT NULL, "
                "done boolean NOT NULL DEFAULT false, receipt text, owner text)",
                f"CREATE INDEX IF NOT EXISTS roomkit_outbox_due ON {s}.roomkit_outbox (due) "
                "WHERE NOT done",
                f"CREATE INDEX IF NOT EXISTS roomkit_outbox_request ON {s}.roomkit_outbox "
                "(pending_id)",
            ],
            4: [
                f"CREATE INDEX IF NOT EXISTS roomkit_outbox_endings ON {s}.roomkit_outbox "
                f"(created) WHERE {IS_ENDING}",
            ],
            5: [
                f"ALTER TABLE {pending} ADD COLUMN IF NOT EXISTS {quote(name)} "
                f"{_TYPES.get(name, 'text')}"
                for name in QUORUM_FIELDS
            ],
            6: [
                f"CREATE TABLE IF NOT EXISTS {chains} (pending_id text PRIMARY KEY, "
                "last_at double precision NOT NULL)",
                f"CREATE INDEX IF NOT EXISTS roomkit_chains_by_age ON {chains} (last_at)",
            ],
            7: [
                f"ALTER TABLE {chains} ADD COLUMN IF NOT EXISTS length integer, "
                "ADD COLUMN IF NOT EXISTS head text, ADD COLUMN IF NOT EXISTS epoch integer, "
                "ADD COLUMN IF NOT EXISTS mac text, ADD COLUMN IF NOT EXISTS checked integer",
                f"CREATE TABLE IF NOT EXISTS {s}.roomkit_checkpoints (n integer PRIMARY KEY, "
                "body text NOT NULL, mac text NOT NULL)",
                f"CREATE INDEX IF NOT EXISTS roomkit_chains_unchecked ON {chains} (pending_id) "
                "WHERE checked IS DISTINCT FROM length",
            ],
            8: [
                # Without a default first: the rows already stored keep NULL, and the table
                # is not rewritten. New rows take their transaction's id from the default.
                f"ALTER TABLE {pending} ADD COLUMN IF NOT EXISTS changed_tx bigint",
                f"ALTER TABLE {pending} ALTER COLUMN changed_tx SET DEFAULT {_TX}",
                f"CREATE INDEX IF NOT EXISTS roomkit_pending_by_tx ON {pending} (changed_tx)",
            ],
            9: [f"ALTER TABLE {s}.roomkit_outbox ADD COLUMN IF NOT EXISTS claim text"],
            10: [f"ALTER TABLE {ledger} ADD COLUMN IF NOT EXISTS token text"],
        }
        """The statements that bring the tables from one version below each key to it."""

        self.select_by_id = f"SELECT {COLUMNS} FROM {pending} WHERE pending_id = %s AND {_RETAINED}"
        self.select_by_key = (
            f'SELECT {COLUMNS}, settled_at FROM {pending} WHERE "key" = %s FOR UPDATE'
        )
        self.select_many = (
            f"SELECT {COLUMNS} FROM {pending} WHERE pending_id = ANY(%s) AND {_RETAINED}"
        )
        self.exists = f"SELECT 1 FROM {pending} WHERE pending_id = %s"
        self.delete = f"DELETE FROM {pending} WHERE pending_id = %s"
        self.insert = (
            f"INSERT INTO {pending} ({COLUMNS}, changed_at, unannounced) "
            f"VALUES ({', '.join('%s' for _ in FIELDS)}, %s, true) "
            "ON CONFLICT DO NOTHING RETURNING pending_id, pg_notify(%s, %s)"
        )
        """Parameters: the fields, changed_at, the channel and the hint. A new request is not
        announced yet; the hint leaves when the row is committed."""
        self.insert_settled = (
            f"INSERT INTO {pending} ({COLUMNS}, changed_at, settled_at) "
            f"VALUES ({', '.join('%s' for _ in FIELDS)}, %s, %s) "
            "ON CONFLICT DO NOTHING RETURNING pending_id, pg_notify(%s, %s), pg_notify(%s, %s)"
        )
        """Parameters: the fields, changed_at, settled_at, the channel and the creation's
        hint, the channel and the settle's. A request settled as it is made owes no
        announcement; both hints leave when the row is committed."""
        self.mark_announced = (
            f"UPDATE {pending} SET unannounced = NULL WHERE pending_id = %s AND unannounced"
        )
        self.select_unannounced = f"SELECT unannounced FROM {pending} WHERE pending_id = %s"
        # The deadline came first: the settle records the timeout, and loses.
        late = f"(deadline IS NOT NULL AND deadline <= {_NOW} AND %(status)s <> 'timed_out')"
        self.settle = (
            f"UPDATE {pending} SET "
            f"status = CASE WHEN {late} THEN 'timed_out' ELSE %(status)s END, "
            f"result = CASE WHEN {late} THEN NULL ELSE %(result)s END, "
            f"reject_reason = CASE WHEN {late} THEN NULL ELSE %(reason)s END, "
            f"withdrawn = CASE WHEN {late} THEN 0 ELSE %(withdrawn)s END, "
            f"settled_by = CASE WHEN {late} THEN settled_by "
            "ELSE COALESCE(%(by)s, settled_by) END, "
            f"settle_token = CASE WHEN {late} THEN NULL ELSE %(token)s END, "
            f"settled_at = {_NOW}, changed_at = {_NOW}, changed_tx = {_TX}, "
            f"seq = nextval('{s}.roomkit_pending_seq'), unannounced = NULL "
            "WHERE pending_id = %(id)s AND status = 'pending' AND format = %(format)s "
            f"AND (%(status)s <> 'timed_out' OR (deadline IS NOT NULL AND deadline <= {_NOW})) "
            "AND NOT (%(plain)s AND (answer_schema IS NOT NULL "
            "OR COALESCE(kind, '') = 'approval')) "
            f"RETURNING {COLUMNS}, settle_token, pg_notify(%(channel)s, CASE WHEN "
            f"octet_length({_CARRIED}) <= {MAX_PAYLOAD} THEN {_CARRIED} ELSE %(hint)s END)"
        )
        """The check-and-set in one statement: the row lock orders racing settles, and the
        one that comes second finds the request no longer pending. Its NOTIFY carries the
        settled record (``record <JSON array of the columns>``), so that waiters elsewhere
        need no read, unless that is too long for a notification (then ``hint``, the
        ``settled <id>`` hint). A ``plain`` settle leaves a request whose answer needs a
        check against it alone (an answer schema, an approval). Named parameters: id,
        status, result, reason, withdrawn, by, token, plain, now (``None``: the server's
        clock, as the statement starts), format, channel, hint."""
        self.select_settled_many = (
            f"SELECT {COLUMNS}, settle_token FROM {pending} WHERE pending_id = ANY(%s)"
        )
        self.select_settled_one = (
            f"SELECT {COLUMNS}, settle_token FROM {pending} WHERE pending_id = %s"
        )
        self.set_deadline = (
            f"UPDATE {pending} SET deadline = %s, changed_tx = {_TX} WHERE pending_id = %s "
            "AND status = 'pending' AND (deadline IS NULL OR deadline > %s) RETURNING deadline"
        )
        self.select_state = f"SELECT status, deadline FROM {pending} WHERE pending_id = %s"
        self.purge = f"DELETE FROM {pending} WHERE settled_at <= %s"
        self.notify = "SELECT pg_notify(%s, %s)"
        self.changed_since = (
            f"SELECT pg_current_snapshot()::text, ARRAY(SELECT pending_id FROM {pending} "
            "WHERE changed_tx >= %(xmax)s::bigint OR changed_tx = ANY(%(xip)s::bigint[]) "
            "LIMIT %(limit)s)"
        )
        """The snapshot the statement reads in, and the ids of the rows whose last change
        the snapshot of the previous look did not see (named parameters: its xmax, its
        running transactions and the most ids wanted)."""
        self._pending = pending

        self.select_for_vote = (
            f"SELECT {COLUMNS}, settle_token, COALESCE(%s::double precision, "
            f"extract(epoch FROM statement_timestamp())) FROM {pending} WHERE pending_id = %s "
            "FOR UPDATE"
        )
        """Parameters: the store's clock reading (``None``: the server's), pending_id."""
        self.record_vote = (
            f"UPDATE {pending} SET votes = %s, approvers = %s, arguments = %s, "
            f"arguments_digest = %s, changed_at = %s, changed_tx = {_TX}, "
            f"seq = nextval('{s}.roomkit_pending_seq') "
            f"WHERE pending_id = %s RETURNING {COLUMNS}, pg_notify(%s, %s)"
        )
        self.select_approvers = (
            f"SELECT approvers, voters, quorum FROM {pending} WHERE pending_id = %s "
            "AND status = 'pending' FOR UPDATE"
        )
        self.set_approvers = (
            f"UPDATE {pending} SET approvers = %s, voters = %s WHERE pending_id = %s "
            f"RETURNING {COLUMNS}"
        )
        self.history_head = (
            f"SELECT seq, entry FROM {history} WHERE pending_id = %s ORDER BY seq DESC LIMIT 1"
        )
        self.append_history = f"INSERT INTO {history} (pending_id, seq, entry) VALUES (%s, %s, %s)"
        """Parameters: pending_id, the seq after the head read, the entry linked to that
        head; two racing appends collide on the key, and the loser links again."""
        self.append_history_first = (
            f"WITH landed AS ({self.append_history} ON CONFLICT DO NOTHING RETURNING "
            f"pending_id) UPDATE {chains} c SET length = %s, head = %s, epoch = %s, mac = %s "
            "FROM landed WHERE c.pending_id = landed.pending_id RETURNING c.pending_id"
        )
        """As :attr:`append_history`, then the chain's head as the whole append leaves it
        (length, digest, epoch, signature; its row is there: :attr:`touch_chain` came
        first); a row when the seq was free and the entry went in."""
        self.history_heads = (
            f"SELECT DISTINCT ON (pending_id) pending_id, seq, entry FROM {history} "
            "WHERE pending_id = ANY(%s) ORDER BY pending_id, seq DESC"
        )
        """Parameter: request ids; the last entry of each that has one."""
        self.touch_chain = (
            f"INSERT INTO {chains} (pending_id, last_at) VALUES (%s, "
            "COALESCE(%s::double precision, extract(epoch FROM statement_timestamp()))) "
            "ON CONFLICT (pending_id) DO UPDATE SET last_at = excluded.last_at"
        )
        """Parameters: pending_id, now (``None``: the server's clock): the chain's last append."""
        self.touch_head = (
            f"INSERT INTO {chains} (pending_id, last_at, length, head, epoch, mac) VALUES (%s, "
            "COALESCE(%s::double precision, extract(epoch FROM statement_timestamp())), "
            "%s, %s, %s, %s) ON CONFLICT (pending_id) DO UPDATE SET last_at = excluded.last_at, "
            "length = excluded.length, head = excluded.head, epoch = excluded.epoch, "
            "mac = excluded.mac"
        )
        """As :attr:`touch_chain`, with the chain's new head: length, digest, epoch, signature."""
        self.purge_chains = (
            f"DELETE FROM {chains} c WHERE last_at <= %s AND NOT EXISTS (SELECT 1 FROM "
            f"{pending} p WHERE p.pending_id = c.pending_id AND p.status = 'pending') "
            "RETURNING pending_id"
        )
        """Parameter: the clock minus the audit retention; the chains that go (never an
        open request's)."""
        self.drop_chains = f"DELETE FROM {history} WHERE pending_id = ANY(%s)"
        self.read_history = f"SELECT seq, entry FROM {history} WHERE pending_id = %s ORDER BY seq"

        self.ledger_prune = (
            f"DELETE FROM {ledger} WHERE expires_at IS NOT NULL AND expires_at <= %s"
        )
        self.ledger_spend = (
            f"INSERT INTO {ledger} AS l (entry, spent_at, expires_at, token) "
            "VALUES (%(entry)s, %(now)s, %(until)s, %(token)s) "
            "ON CONFLICT (entry) DO UPDATE SET spent_at = excluded.spent_at, "
            "expires_at = excluded.expires_at, token = excluded.token "
            "WHERE (l.expires_at IS NOT NULL AND l.expires_at <= %(now)s) "
            "OR l.token = %(token)s RETURNING entry"
        )
        """Parameters: ``entry``, ``now``, ``until``, ``token``; a row when this call spent it
        (run again with its token, when it had, though its reply was lost)."""
        self.ledger_record = (
            f"INSERT INTO {ledger} (entry, spent_at, expires_at) "
            "VALUES (%(entry)s, %(now)s, %(until)s) "
            "ON CONFLICT (entry) DO UPDATE SET spent_at = excluded.spent_at, "
            "expires_at = excluded.expires_at, token = NULL"
        )
        """Parameters: ``entry``, ``now``, ``until``."""
        self.ledger_refund = (
            f"WITH mark AS (INSERT INTO {ledger} (entry, spent_at, expires_at, token) "
            f"VALUES (chr({ord(_ESCAPED)}) || 'refund ' || %(token)s, %(now)s, %(now)s + %(keep)s, "
            "%(token)s) ON CONFLICT (entry) DO NOTHING RETURNING entry) "
            f"DELETE FROM {ledger} WHERE entry = %(entry)s AND EXISTS (SELECT FROM mark)"
        )
        """Parameters: ``entry``, ``token``, ``now``, ``keep``: deletes the entry's row and
        marks the refund's token, unless the token is marked (the refund ran already). The
        mark's name starts with the escape of :func:`stored` and no JSON follows it: no entry
        is stored under it."""
        self.ledger_read = (
            f"SELECT entry, spent_at FROM {ledger} WHERE entry = ANY(%s) "
            "AND (expires_at IS NULL OR expires_at > %s)"
        )

    def select_pending(self, filters: Mapping[str, str | None]) -> tuple[str, list[Any]]:
        """The statement listing pending requests with the given column filters."""
        return pending_listing(self._pending, filters, mark="%s", bound=stored)

    def select_settled(
        self, actor_ids: Sequence[str | None] | None, cutoff: float, limit: int
    ) -> tuple[str, list[Any]]:
        """The statement listing outcomes settled after ``cutoff``, newest first."""
        return settled_listing(
            self._pending, actor_ids, cutoff, limit, mark="%s", among=_among_actors
        )


def _among_actors(actor_ids: list[str]) -> tuple[str, list[Any]]:
    return "actor_id = ANY(%s)", [[stored(actor_id) for actor_id in actor_ids]]


_ESCAPED = "\x01"
"""Starts a text stored as JSON: PostgreSQL text holds no NUL character."""


@overload
def stored(value: str) -> str: ...
@overload
def stored(value: None) -> None: ...
@overload
def stored(value: str | None) -> str | None: ...
def stored(value: str | None) -> str | None:
    """``value`` as PostgreSQL text: as it is, or, when it holds a NUL (or starts with the
    escape), the escape followed by its JSON (which spells NUL ``\\u0000``)."""
    if value is None or ("\x00" not in value and not value.startswith(_ESCAPED)):
        return value
    return _ESCAPED + json.dumps(value)


def read_back(value: object) -> object:
    """The text :func:`stored` was given (anything else as it is)."""
    if isinstance(value, str) and value.startswith(_ESCAPED):
        try:
            return json.loads(value[1:])
        except (ValueError, RecursionError):  # a hand edit: read as the text it is
            return value
    return value


def decode_row(row: Iterable[Any]) -> PendingInput:
    """Rebuild a request from the record's columns in :data:`FIELDS` order (more may follow).

    Raises:
        CorruptRecordError: the row is not a record this library wrote.
    """
    return decode({name: read_back(value) for name, value in zip(FIELDS, row, strict=False)})


def decode_rows(rows: Iterable[Sequence[Any]]) -> list[PendingInput]:
    """Rebuild the requests of ``rows``, skipping (and logging) the rows that are corrupt."""
    return readable_rows(rows, decode_row, logger)
