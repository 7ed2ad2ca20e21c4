"""The ledger names of an adapter's marks: a resume's claim, a kept generation.

A name is made of the run's key and the ids of its pauses, which frameworks choose (a thread
id, a call id each) and may make long: sixteen interrupts of one step, or a long thread
id, run past the ledger's 512 characters. A name that would is kept by its SHA-256 digest
instead, so that every run can be claimed and resumed whatever its ids.
"""

from __future__ import annotations

import hashlib

__all__ = ["ledger_name"]

_LONGEST = 400
"""The longest name kept as it is; the ledger takes 512 characters."""


def ledger_name(prefix: str, name: str) -> str:
    """``prefix:name`` as the ledger keeps it: as it is when short, else by its digest."""
    if len(prefix) + len(name) < _LONGEST:
        return f"{prefix}:{name}"
    return f"{prefix}:sha256:{hashlib.sha256(name.encode('utf-8', 'surrogatepass')).hexdigest()}"
