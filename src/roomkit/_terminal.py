"""The ``roomkit pending`` commands, now in :mod:`roomkit.cli.pending` (re-exported here)."""

from roomkit.cli.pending import (
    TOKEN_ENV,
    Failure,
    answer,
    answer_body,
    approve,
    edit,
    listing,
    printable,
    reject,
    respond,
    show,
)

__all__ = [
    "TOKEN_ENV",
    "Failure",
    "answer",
    "answer_body",
    "approve",
    "edit",
    "listing",
    "printable",
    "reject",
    "respond",
    "show",
]
