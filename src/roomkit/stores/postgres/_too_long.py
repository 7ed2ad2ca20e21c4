"""What the PostgreSQL stores say when the server refuses a value as too long for it.

PostgreSQL refuses an index entry past 2,704 bytes (``index row size ... exceeds btree
version 4 maximum 2704``), and any index entry past a page (``index row requires ...
bytes``), with SQLSTATE 54000, program_limit_exceeded. psycopg raises that as an
``OperationalError``, the class of a lost connection, but the server answered: nothing was
stored, and a retry fails the same. A create refuses ids past the bounds of
:mod:`roomkit.models.json_limits` before anything reaches the server; this names what was
too long should a value reach it another way.
"""

from __future__ import annotations

import re

import psycopg

from roomkit.core.exceptions import StoreError

__all__ = ["too_long_error"]

_INDEXED = {
    "roomkit_pending_by_key": "a request's key with its scope (room_id, channel_id, actor_id)",
    "roomkit_pending_open": "a request's room_id",
    "roomkit_pending_by_actor_settled": "a request's actor_id",
}
"""What the indexes of the requests' table hold, for a message naming what was too long."""
_INDEX_NAME = re.compile(r'for index "([^"]+)"')


def too_long_error(error: psycopg.Error, where: str) -> StoreError:
    """The error of a store whose server refused a value past its limits with ``error``
    (SQLSTATE class 54, program_limit_exceeded: an index entry too long, most often)."""
    index = getattr(error.diag, "constraint_name", None)
    if index is None:
        found = _INDEX_NAME.search(str(error))
        index = found.group(1) if found else None
    if index is None:
        what = "a value too long for one of its indexes"
    else:
        what = _INDEXED.get(index, f"a value of the index {index}")
        what = f"{what}, too long for its index {index}"
    return StoreError(
        f"the PostgreSQL store at {where} refused {what} ({_first_line(error)}); nothing was "
        "stored: pass shorter ids (a create refuses those past roomkit.models.json_limits"
        ".MAX_ID_CHARS, MAX_KEY_CHARS and MAX_SCOPED_KEY_BYTES)"
    )


def _first_line(error: BaseException) -> str:
    text = str(error).strip() or type(error).__name__
    return text.splitlines()[0]
