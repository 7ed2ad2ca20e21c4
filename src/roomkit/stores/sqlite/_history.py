"""The SQLite store's history appends: chained entries written inside a write already open.

:func:`append_chained` is the one step every write that records history entries runs: a
settle that wins, an insert that creates, a plain ``append_history``. It runs inside a write
of the store's :class:`~roomkit.stores.sqlite._batch.WriteBatcher`, whose
``BEGIN IMMEDIATE`` transaction holds the file's write lock: the head it reads cannot move
before its inserts, so the read and the inserts are the chain's check-and-set, and the
entries commit (or roll back) with the rest of the write, and so does the chain's head
(signed with the store's audit key, if it has one), written by the statement that keeps
the time of the chain's last append.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Mapping, Sequence
from typing import Any

from roomkit.core.exceptions import CorruptRecordError
from roomkit.stores._history import first_prev, link_digest, linked_chain, stored_seq
from roomkit.stores._trail import Anchoring
from roomkit.stores.sqlite import _schema as sql
from roomkit.stores.sqlite._batch import Undo
from roomkit.stores.sqlite._link import query

__all__ = ["append_chained", "purge_chains"]


def append_chained(
    db: sqlite3.Connection,
    pending_id: str,
    entries: Sequence[Mapping[str, Any]],
    now: float,
    anchoring: Anchoring,
) -> list[int]:
    """Append ``entries`` (checked already) to the request's chain, in order; their seqs.

    Call it only inside a write the batcher runs (the write lock held): that is what makes
    the head read here the head the inserts follow. ``now`` (the write's reading of the
    store's clock) is kept as the chain's last append, which its audit retention counts
    from, beside the chain's new head as ``anchoring`` signs it.

    Raises:
        Undo: with a :class:`~roomkit.core.exceptions.CorruptRecordError`, when the head's
            ``seq`` is no whole number (a hand edit left text there): the write that
            appends goes back whole, and fails alone.
    """
    if not entries:
        return []
    head = query(db, sql.HISTORY_HEAD, (pending_id,))
    try:
        # Text and bytes sort after every number: a seq left holding them is the head read.
        first = stored_seq(head[0][0], pending_id) + 1 if head else 0
    except CorruptRecordError as error:
        raise Undo(error) from None
    prev = link_digest(bytes(head[0][1])) if head else first_prev(pending_id)
    texts, digest = linked_chain(entries, prev)
    db.executemany(
        sql.APPEND_HISTORY,
        [(pending_id, seq, text) for seq, text in enumerate(texts, start=first)],
    )
    signed = anchoring.head(pending_id, first + len(texts), digest)
    db.execute(sql.TOUCH_CHAIN, (pending_id, now, *signed))
    return list(range(first, first + len(texts)))


def purge_chains(db: sqlite3.Connection, cutoff: float) -> int:
    """Drop every chain last appended to at or before ``cutoff`` whose request is not open;
    how many went. Inside a write, as :func:`append_chained`."""
    db.execute(sql.CHAINS_BY_AGE)
    gone = query(db, sql.PURGE_CHAINS, (cutoff,))
    db.executemany(sql.DROP_CHAIN, gone)
    return len(gone)
