"""What PostgreSQL text cannot hold, and a settle as the Postgres store records it.

PostgreSQL ``text`` has no NUL character: a request's id or a settle token holding one is
refused (:func:`check_nul`); an answer, a reason, a name or a ledger entry is stored escaped
instead (:func:`~roomkit.stores.postgres._schema.stored`).
"""

from __future__ import annotations

from typing import Any

from roomkit.core.exceptions import InvalidTextError
from roomkit.models.pending_input import PendingInputStatus
from roomkit.stores._checks import Outcome
from roomkit.stores._ledger import check_entry
from roomkit.stores.postgres._batch import Recorded
from roomkit.stores.postgres._schema import stored

__all__ = ["as_recorded", "check_nul", "ledger_entry"]


def as_recorded(
    pending_id: str, status: PendingInputStatus, token: str, outcome: Outcome
) -> Recorded | None:
    """A checked settle as what it records; ``None`` for an id PostgreSQL never stored.

    Raises:
        InvalidTextError: the token holds a NUL.
    """
    check_nul({"token": token})
    if "\x00" in pending_id:
        return None
    # An answer, a reason or a name may hold any text: a NUL is stored escaped.
    result, reason, withdrawn, settled_by = outcome[:4]
    return Recorded(
        status.value, stored(result), stored(reason), int(withdrawn), stored(settled_by), token
    )


def check_nul(fields: dict[str, Any]) -> None:
    """Refuse text PostgreSQL cannot hold: its ``text`` type has no NUL character."""
    for name, value in fields.items():
        if isinstance(value, str) and "\x00" in value:
            raise InvalidTextError(
                f"{name} cannot be stored: it holds a NUL character (\\x00), which PostgreSQL "
                f"text cannot hold"
            )


def ledger_entry(entry: str) -> str:
    """``entry`` as the ledger's table holds it (escaped when it holds a NUL).

    Raises:
        TypeError, ValueError: it is no ledger entry.
        InvalidTextError: it holds a lone surrogate.
    """
    return stored(check_entry(entry))
