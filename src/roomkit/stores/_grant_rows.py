"""A grant read back from a store's row: :func:`grant_from_row`, and
:func:`readable_grants`, which lists the grants of many rows past any that cannot be read.

A row a hand edit broke (its body no JSON object, a count no whole number, a time no finite
number) is a :class:`~roomkit.core.exceptions.CorruptRecordError` where one grant is read,
and is skipped, logged, where grants are listed: the grants beside it still list, and still
cover their calls.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Iterable, Mapping
from typing import Any, TypeVar

from roomkit.core.exceptions import CorruptRecordError
from roomkit.stores.grants import COLUMNS, Grant, finite_time

__all__ = ["grant_from_row", "readable_grants"]

logger = logging.getLogger("roomkit.stores.grants")

T = TypeVar("T")

_MAX_ID_CHARS = 128
"""The most of a grant id an error quotes."""


def grant_from_row(row: Any) -> Grant:
    """A grant from a row of :data:`COLUMNS` (or a mapping of them).

    Raises:
        CorruptRecordError: the row is not one a store wrote (a hand edit left its body no
            JSON object, a list no list of names, a count no whole number, a time no
            finite number).
    """
    if isinstance(row, Mapping):
        row = [row[name.strip()] for name in COLUMNS.split(",")]
    try:
        body = json.loads(row[8])
        granted_by = body.get("granted_by") or []
        if not (isinstance(granted_by, list) and all(isinstance(n, str) for n in granted_by)):
            raise TypeError(f"granted_by is no list of names: {granted_by!r}")
        return Grant(
            grant_id=row[0],
            tool=row[1],
            expires_at=finite_time("expires_at", float(row[2])),
            max_uses=None if row[3] is None else int(row[3]),
            uses=int(row[4]),
            created_at=finite_time("created_at", float(row[5])),
            revoked_at=None if row[6] is None else float(row[6]),
            granted_by=tuple(granted_by),
            digest=body.get("digest"),
            schema=body.get("schema"),
            actor_id=body.get("actor_id"),
            room_id=body.get("room_id"),
            quorum=int(body.get("quorum") or 1),
            source=body.get("source"),
            extra=dict(body.get("extra") or {}),
            revoked_by=row[7],
        )
    except (TypeError, ValueError, AttributeError, OverflowError, RecursionError) as error:
        raise CorruptRecordError(
            f"grant {str(row[0])[:_MAX_ID_CHARS]!r} cannot be read ({str(error)[:200]}): "
            "roomkit did not write it so"
        ) from None


def readable_grants(rows: Iterable[T], read: Callable[[T], Grant | None]) -> list[Grant]:
    """The grants ``read`` makes of ``rows``, skipping (and logging) each that cannot be
    read, so that one grant a hand edit broke neither fails a listing nor stops the grants
    beside it from covering their calls."""
    grants = []
    for row in rows:
        try:
            grant = read(row)
        except CorruptRecordError as error:
            logger.warning("skipping an unreadable grant: %s", error)
            continue
        if grant is not None:
            grants.append(grant)
    return grants
