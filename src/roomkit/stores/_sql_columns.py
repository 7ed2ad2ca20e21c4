"""What the SQL stores (SQLite, PostgreSQL) share: the record's columns and its rows.

Both keep one record a row, its fields in :data:`~roomkit.stores._records.FIELDS`
order, each column named as its field.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from roomkit.core.exceptions import CorruptRecordError
from roomkit.models.pending_input import PendingInput
from roomkit.stores._records import FIELDS

__all__ = [
    "COLUMNS",
    "column_definitions",
    "pending_listing",
    "quote",
    "readable_rows",
    "settled_listing",
]


def quote(name: str) -> str:
    """A column name as SQL: quoted, since ``key`` is a keyword (every name alike)."""
    return f'"{name}"'


COLUMNS = ", ".join(quote(name) for name in FIELDS)
"""The record's columns, in :data:`FIELDS` order, ready for a SELECT or RETURNING list."""


def column_definitions(
    types: Mapping[str, str],
    constraints: Mapping[str, str],
    *,
    text: str,
    fields: Sequence[str] = FIELDS,
) -> str:
    """The record's column definitions for a CREATE TABLE: a field's type is ``types``' or
    ``text``, followed by its entry in ``constraints`` (for ``fields``, every one by
    default)."""
    return ",\n    ".join(
        f"{quote(name)} {types.get(name, text)}{constraints.get(name, '')}" for name in fields
    )


def pending_listing(
    table: str,
    filters: Mapping[str, str | None],
    *,
    mark: str,
    bound: Callable[[str], Any] = str,
) -> tuple[str, list[Any]]:
    """The statement listing the pending requests of ``table``, oldest first, with the
    given column filters (``None`` filters nothing), and its parameters.

    ``mark`` is the driver's parameter placeholder; ``bound`` gives what a filter's value
    is bound as (the value itself by default).
    """
    clauses = ["status = 'pending'"]
    parameters: list[Any] = []
    for column, value in filters.items():
        if value is not None:
            clauses.append(f"{quote(column)} = {mark}")
            parameters.append(bound(value))
    where = " AND ".join(clauses)
    return f"SELECT {COLUMNS} FROM {table} WHERE {where} ORDER BY seq", parameters


def settled_listing(
    table: str,
    actor_ids: Sequence[str | None] | None,
    cutoff: float,
    limit: int,
    *,
    mark: str,
    among: Callable[[list[str]], tuple[str, list[Any]]],
    unnamed: str = "actor_id IS NULL",
) -> tuple[str, list[Any]]:
    """The statement listing outcomes settled after ``cutoff``, newest first, and its
    parameters.

    ``actor_ids`` keeps the requests naming one of them (``None``: naming no actor).
    ``mark`` is the driver's parameter placeholder; ``among`` gives the clause (and its
    parameters) that keeps the requests naming one of the actors it is given, ``unnamed``
    the one that keeps the requests naming none.
    """
    clauses = [f"settled_at > {mark}"]
    parameters: list[Any] = [cutoff]
    if actor_ids is not None:
        named = [actor_id for actor_id in actor_ids if actor_id is not None]
        either = []
        if named:
            clause, values = among(named)
            either.append(clause)
            parameters.extend(values)
        if None in actor_ids:
            either.append(unnamed)
        clauses.append(f"({' OR '.join(either)})" if either else "1 = 0")
    parameters.append(limit)
    where = " AND ".join(clauses)
    return (
        f"SELECT {COLUMNS} FROM {table} WHERE {where} "
        f"ORDER BY settled_at DESC, seq DESC LIMIT {mark}",
        parameters,
    )


def readable_rows(
    rows: Iterable[Sequence[Any]],
    decode_row: Callable[[Sequence[Any]], PendingInput],
    logger: logging.Logger,
) -> list[PendingInput]:
    """The requests of ``rows`` rebuilt by ``decode_row``, skipping (and logging) the rows
    that are corrupt."""
    records = []
    for row in rows:
        try:
            records.append(decode_row(row))
        except CorruptRecordError as error:
            logger.warning("skipping an unreadable pending record: %s", error)
    return records
