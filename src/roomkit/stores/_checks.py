"""The checks every durable store makes before anything reaches storage.

A request, an outcome, a deadline, a settle token or a number of seconds is checked here
with the same message whichever store is used, and listings are put in the one order every
store uses.
"""

from __future__ import annotations

import math
import secrets
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

from roomkit._storable import unencodable_text
from roomkit.core.exceptions import InvalidTextError
from roomkit.models.pending_input import PendingInput, PendingInputStatus
from roomkit.stores._history import check_entries

if TYPE_CHECKING:
    from roomkit.stores.grants import Grant

__all__ = [
    "Outcome",
    "check_audit_retention",
    "check_deadline",
    "check_grant_text",
    "check_history",
    "check_insertable",
    "check_outcome",
    "check_revoker",
    "check_settle",
    "check_settle_text",
    "check_token",
    "creation_order",
    "seconds",
    "storable_id",
]

_PENDING = PendingInputStatus.PENDING
_SETTLED_AT_INSERT = (PendingInputStatus.RESOLVED, PendingInputStatus.REJECTED)
"""The outcomes a request settled as it is made is inserted with."""


class Outcome(NamedTuple):
    """What a settle records besides its status and its token, as the caller gave it."""

    result: str | None
    reason: str | None
    withdrawn: bool
    settled_by: str | None
    history: tuple[dict[str, Any], ...] = ()
    """The entries to append to the request's history if this settle wins, checked."""
    grant: Grant | None = None
    """The standing grant to record if this settle wins, in its transaction (a store that
    can: :class:`~roomkit.stores.grants.SettlesGranting`)."""

    @classmethod
    def given(cls, outcome: Mapping[str, Any]) -> Outcome:
        """The outcome a settle's keyword arguments give (``result``, ``reason``,
        ``withdrawn``, ``settled_by``), unchecked."""
        return cls(
            outcome.get("result"),
            outcome.get("reason"),
            outcome.get("withdrawn", False),
            outcome.get("settled_by"),
        )


def creation_order(record: PendingInput) -> tuple[float, str]:
    """The key that lists requests oldest first: creation time, then id for a tie.

    The time is compared as seconds since the epoch, so that times given in different
    zones (or without one, taken as local time) sort as the instants they are.
    """
    return record.created_at.timestamp(), record.pending_id


def seconds(name: str, value: object, *, zero: bool, finite: bool = True) -> float:
    """``value`` as a number of seconds, or an error that names the argument.

    Raises:
        TypeError: ``value`` is not an ``int`` or ``float`` (a ``bool`` is not a number).
        ValueError: it is NaN, negative, zero when ``zero`` is false, or infinite when
            ``finite`` is true.
    """
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise TypeError(f"{name} must be a number of seconds, got {type(value).__name__}")
    if math.isnan(value) or value < 0 or (value == 0 and not zero):
        bound = ">= 0" if zero else "> 0"
        raise ValueError(f"{name} must be {bound} seconds, got {value!r}")
    if finite and math.isinf(value):
        raise ValueError(f"{name} must be finite, got {value!r}")
    return float(value)


def check_insertable(request: PendingInput, *, settled: bool = False) -> None:
    """Refuse a request that is not pending (with ``settled``: neither resolved nor
    rejected, a request settled as it is made), or that holds text storage cannot encode.

    Raises:
        ValueError: ``request`` is settled already (with ``settled``: it is not).
        InvalidTextError: a field holds a lone surrogate (nothing is written).
    """
    if settled:
        if request.status not in _SETTLED_AT_INSERT:
            raise ValueError(
                f"a request inserted settled is resolved or rejected, not {request.status}"
            )
        _check_text(
            result=request.result, reason=request.reject_reason, settled_by=request.settled_by
        )
    elif request.status is not _PENDING:
        raise ValueError(f"only a pending request can be inserted, not {request.status}")
    _check_text(**{name: getattr(request, name) for name in _REQUEST_TEXTS})


def check_settle_text(
    result: str | None, reason: str | None, settled_by: str | None, token: str
) -> None:
    """Refuse an outcome whose text storage cannot encode, before it joins a batch.

    Raises:
        InvalidTextError: ``result``, ``reason``, ``settled_by`` or ``token`` holds a lone
            surrogate.
    """
    _check_text(result=result, reason=reason, settled_by=settled_by, token=token)


def check_settle(
    pending_id: str,
    status: PendingInputStatus,
    token: str | None,
    given: Outcome,
    history: Sequence[object],
) -> tuple[PendingInputStatus, str, Outcome] | None:
    """A settle's arguments checked: its status, its token (a new one for ``None``), and
    ``given`` (the result, the reason, ``withdrawn`` and ``settled_by`` as the caller gave
    them) with ``history`` checked in it.

    ``None`` comes back when no stored record can have ``pending_id`` (the settle then
    loses at once, writing nothing, and ``history`` goes unchecked).

    Raises:
        ValueError: ``status`` is ``PENDING`` or not a status, ``token`` is empty, or an
            entry of ``history`` is no entry.
        TypeError: ``token`` is not a ``str``, or ``history`` is not a sequence of
            JSON-serialisable entries.
        InvalidTextError: a text, the token or an entry holds a lone surrogate.
    """
    outcome = check_outcome(status)
    token = check_token(token)
    check_settle_text(given.result, given.reason, given.settled_by, token)
    if not storable_id(pending_id):
        return None
    return outcome, token, given._replace(history=check_history(history))


def check_audit_retention(audit_retention: object, retention_seconds: float) -> float | None:
    """``audit_retention`` checked: ``None`` (keep every history), or seconds no shorter than
    the retention of the records (``math.inf`` is ``None``).

    Raises:
        TypeError: it is not a number of seconds.
        ValueError: it is negative, NaN, or shorter than ``retention_seconds``.
    """
    if audit_retention is None:
        return None
    kept = seconds("audit_retention", audit_retention, zero=True, finite=False)
    if kept < retention_seconds:
        raise ValueError(
            f"audit_retention ({kept:g} s) must be at least retention_seconds "
            f"({retention_seconds:g} s): a request's history outlives its record; pass None "
            f"to keep histories for good"
        )
    return None if math.isinf(kept) else kept


def check_history(history: Sequence[object]) -> tuple[dict[str, Any], ...]:
    """A settle's ``history=`` checked: entries a store can append, before anything is sent.

    Raises:
        TypeError, ValueError, InvalidTextError: as
            :func:`~roomkit.stores._history.check_entries`.
    """
    return check_entries(history) if history else ()


def storable_id(pending_id: str) -> bool:
    """Whether ``pending_id`` can name a stored record: none holds a lone surrogate."""
    return type(pending_id) is str and (
        pending_id.isascii() or unencodable_text(pending_id) is None
    )


_REQUEST_TEXTS = (
    "tool_name",
    "arguments",
    "room_id",
    "tool_call_id",
    "channel_id",
    "actor_id",
    "key",
    "answer_schema",
)
"""The fields of a new request that hold text (or JSON with text in it) to store."""


_GRANT_TEXTS = (
    "tool",
    "granted_by",
    "digest",
    "schema",
    "actor_id",
    "room_id",
    "source",
    "extra",
)
"""The fields of a grant that hold text (or JSON with text in it) to store."""


def check_grant_text(grant: Grant) -> None:
    """Refuse a grant holding text storage cannot encode, before anything is written: every
    store, the memory store too, so that code tried on one fails on none of the others.

    Raises:
        InvalidTextError: a field holds a lone surrogate (nothing is written).
    """
    _check_text(**{f"grant {name}": getattr(grant, name) for name in _GRANT_TEXTS})


def check_revoker(by: str | None) -> None:
    """Refuse a revoke whose ``by`` storage cannot encode, before anything is written.

    Raises:
        InvalidTextError: ``by`` holds a lone surrogate (nothing is written).
    """
    _check_text(**{"the revoker's name": by})


def _check_text(**fields: object) -> None:
    for name, value in fields.items():
        problem = unencodable_text(value)
        if problem is not None:
            raise InvalidTextError(
                f"{name} cannot be stored: it holds {problem}, which UTF-8 cannot encode"
            )


def check_outcome(status: PendingInputStatus) -> PendingInputStatus:
    """``status`` as an outcome a settle may record.

    Raises:
        ValueError: ``status`` is ``PENDING``, or not a status at all.
    """
    outcome = PendingInputStatus(status)
    if outcome is _PENDING:
        raise ValueError("settle needs an outcome: RESOLVED, REJECTED or TIMED_OUT, not PENDING")
    return outcome


def check_deadline(deadline: float) -> float:
    """``deadline`` as a float, once it is known to be a time a clock can reach.

    Raises:
        ValueError: ``deadline`` is infinite or NaN.
    """
    if not math.isfinite(deadline):
        raise ValueError(f"deadline must be a finite time, got {deadline!r}")
    return float(deadline)


def check_token(token: str | None) -> str:
    """``token`` as a settle token, or a new random one when it is ``None``.

    Raises:
        TypeError: ``token`` is not a ``str``.
        ValueError: ``token`` is empty.
    """
    if token is None:
        return secrets.token_hex(8)
    if not isinstance(token, str):
        raise TypeError(f"token must be a str, got {type(token).__name__}")
    if not token:
        raise ValueError("token must be a non-empty str (or None for a new one)")
    return token
