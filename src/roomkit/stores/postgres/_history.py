"""The Postgres store's history appends: chained entries written inside a transaction open.

:func:`append_chained` is the one step every write that records history entries runs: the
settles of a batch that won, a plain ``append_history``, a settle inside the caller's own
transaction. It runs on a connection whose transaction is open, and its rows commit (or roll
back) with the rest of it.

The chain's check-and-set rests on the key ``(pending_id, seq)``: each chain's entries are
linked to the head read and take the seqs after it. The first one is inserted with ``ON
CONFLICT DO NOTHING``: when another transaction took that seq (its insert waits for that
one to end, so a rollback there frees the seq again), nothing of this chain is written, and
the head is read again (a statement of ``READ COMMITTED`` sees what committed before it
began) and the entries linked to it. Once the first seq is held, no other append can take
the ones after it: it would have to read the held one first, and it waits for this
transaction to end. The statement that inserts the first entry also writes the chain's new
head (signed with ``statements.anchoring``'s key, if it has one) into the chain's row,
when and only when that entry went in.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from psycopg import AsyncConnection

from roomkit.core.exceptions import StoreError
from roomkit.stores._history import first_prev, link_digest, linked_chain
from roomkit.stores._trail import Anchoring, Head
from roomkit.stores.postgres._schema import Statements, read_back, stored

__all__ = ["append_at", "append_chained", "linked_rows", "purge_chains"]

_RACES = 64
"""Times a chain is linked again because other appends took its seq first."""


async def append_chained(
    db: AsyncConnection[Any],
    statements: Statements,
    chains: Mapping[str, Sequence[Mapping[str, Any]]],
    now: float | None,
) -> dict[str, list[int]]:
    """Append each request's entries (checked already) to its chain, in order; their seqs.

    ``chains`` maps request ids to the entries to append; a request with none is left out.
    Call it only inside a transaction open on ``db``: the entries are written with it.
    ``now`` (the store's clock; ``None`` for the server's) is kept as each chain's last
    append, which its audit retention counts from.

    Raises:
        StoreError: other appends kept taking a chain's next seq (``_RACES`` times).
        psycopg.Error: as the statements raise it (the transaction is the caller's).
    """
    appended: dict[str, list[int]] = {}
    waiting = {pending_id: entries for pending_id, entries in chains.items() if entries}
    if waiting:
        async with db.cursor() as cursor:
            await cursor.executemany(statements.touch_chain, [(p, now) for p in sorted(waiting)])
    for _ in range(_RACES):
        if not waiting:
            return appended
        cursor = await db.execute(statements.history_heads, (list(waiting),))
        linked = _linked(await cursor.fetchall(), waiting, statements.anchoring)
        async with db.cursor() as cursor:
            firsts = [
                (pending_id, first, texts[0], *head)
                for pending_id, (first, texts, head) in linked.items()
            ]
            await cursor.executemany(statements.append_history_first, firsts, returning=True)
            landed: list[str] = []
            for _first in firsts:
                row = await cursor.fetchone()
                if row is not None:
                    landed.append(str(row[0]))
                cursor.nextset()
            rest: list[tuple[str, int, str]] = []
            for pending_id in landed:
                first, texts, _ = linked[pending_id]
                rest += [(pending_id, first + n, text) for n, text in enumerate(texts) if n]
            if rest:
                await cursor.executemany(statements.append_history, rest)
        for pending_id in landed:
            first, texts, _ = linked[pending_id]
            appended[pending_id] = list(range(first, first + len(texts)))
            del waiting[pending_id]
    if waiting:
        raise StoreError(f"the history of {next(iter(waiting))!r} kept growing under this append")
    return appended


async def append_at(
    db: AsyncConnection[Any],
    statements: Statements,
    pending_id: str,
    entry: Mapping[str, Any],
    seq: int,
    now: float | None,
) -> bool:
    """Append ``entry`` (checked already) as entry ``seq`` of the request's chain; ``False``,
    having written nothing but the chain's last append, when the chain is not ``seq`` long or
    another transaction takes that seq first (the caller rolls its transaction back then).

    Raises:
        psycopg.Error: as the statements raise it (the transaction is the caller's).
    """
    await db.execute(statements.touch_chain, (pending_id, now))
    cursor = await db.execute(statements.history_heads, ([pending_id],))
    linked = _linked(await cursor.fetchall(), {pending_id: (entry,)}, statements.anchoring)
    first, texts, head = linked[pending_id]
    if first != seq:
        return False
    cursor = await db.execute(statements.append_history_first, (pending_id, first, texts[0], *head))
    return await cursor.fetchone() is not None


def linked_rows(
    heads: Sequence[Sequence[Any]],
    chains: Mapping[str, Sequence[Mapping[str, Any]]],
    anchoring: Anchoring,
) -> tuple[list[tuple[str, int, str]], list[tuple[Any, ...]]]:
    """The rows of :attr:`Statements.append_history` that append ``chains`` after their
    heads, as ``heads`` (rows of :attr:`Statements.history_heads`) read them, and each
    chain's new head (without the time: pending_id, then the head) for
    :attr:`Statements.touch_head`, in the order of the ids."""
    linked = _linked(heads, chains, anchoring)
    rows = [
        (pending_id, first + n, text)
        for pending_id, (first, texts, _) in linked.items()
        for n, text in enumerate(texts)
    ]
    return rows, [(pending_id, *linked[pending_id][2]) for pending_id in sorted(linked)]


def _linked(
    rows: Sequence[Sequence[Any]],
    chains: Mapping[str, Sequence[Mapping[str, Any]]],
    anchoring: Anchoring,
) -> dict[str, tuple[int, list[str], Head]]:
    """Each chain's first seq, the texts of its entries, linked to its head in ``rows``
    (of :attr:`Statements.history_heads`), and the head they leave it with."""
    heads = {str(row[0]): (int(row[1]), str(read_back(row[2]))) for row in rows}
    linked: dict[str, tuple[int, list[str], Head]] = {}
    for pending_id, entries in chains.items():
        seq, last = heads.get(pending_id, (-1, None))
        prev = first_prev(pending_id) if last is None else link_digest(last)
        texts, digest = linked_chain(entries, prev)
        head = anchoring.head(pending_id, seq + 1 + len(texts), digest)
        linked[pending_id] = (seq + 1, [str(stored(text)) for text in texts], head)
    return linked


async def purge_chains(db: AsyncConnection[Any], statements: Statements, cutoff: float) -> int:
    """Drop every chain last appended to at or before ``cutoff`` whose request is not open;
    how many went. In one transaction on ``db``."""
    async with db.transaction():
        cursor = await db.execute(statements.purge_chains, (cutoff,))
        gone = [row[0] for row in await cursor.fetchall()]
        if gone:
            await db.execute(statements.drop_chains, (gone,))
    return len(gone)
