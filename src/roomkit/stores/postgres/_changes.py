"""Which requests changed since a look, on PostgreSQL, in the order changes commit.

Every create, settle, vote and earlier deadline records in the row it writes the id of its
transaction (``changed_tx``). Neither that id nor ``seq`` grows in commit order: a
transaction that took a lower one can commit after one that took a higher one, so asking
for "everything above the highest seen" would skip it for good, and an overlap window would
only bound how late a commit may come. A look keeps instead, as its mark, the snapshot it read
in (``pg_current_snapshot()``): its ``xmax`` and the transactions still running then
(``xip``). A row's last change is new to the next look exactly when that snapshot did not
see the transaction that wrote it: its id is at or above ``xmax``, or in ``xip`` (a lower id
not in ``xip`` had ended, and its rows were seen). This is the server's own visibility rule,
so a change is named by the first look after its commit however long it took to commit, and
a change once named comes again only when the row changes again. The index on
``changed_tx`` finds those rows; a look that finds none reads no record.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from roomkit.stores._durable_base import LISTED
from roomkit.stores.base import ChangeMark, ChangesSince
from roomkit.stores.postgres._schema import read_back

__all__ = ["changes_since"]

_NOTHING_AFTER = 2**63 - 1
"""An ``xmax`` no transaction reaches: a first look reads the snapshot alone."""


async def changes_since(
    rows: Callable[[str, Any], Awaitable[list[Any]]], statement: str, mark: ChangeMark | None
) -> ChangesSince:
    """The requests whose last change the snapshot of ``mark`` did not see, and the mark of
    this look's snapshot.

    Args:
        rows: runs one read and returns its rows (the store's).
        statement: the store's ``changed_since`` statement.
        mark: the mark of the previous look (its ``xmax``, then the ids running then), or
            ``None`` for a first look.
    """
    after, running = (_NOTHING_AFTER, []) if mark is None else (mark[0], list(mark[1:]))
    parameters = {"xmax": after, "xip": running, "limit": LISTED + 1}
    ((snapshot, ids),) = await rows(statement, parameters)
    _, xmax, xip = str(snapshot).split(":")
    now = (int(xmax), *(int(xid) for xid in xip.split(",") if xid))
    named = frozenset(str(read_back(pending_id)) for pending_id in ids)
    # An xmax below the mark's: the server's history went back (a restored backup).
    known = mark is not None and now[0] >= mark[0] and len(named) <= LISTED
    return ChangesSince(now, named if known else None)
