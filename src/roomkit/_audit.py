"""The ``roomkit audit`` commands, now in :mod:`roomkit.cli.audit` (re-exported here)."""

from roomkit.cli.audit import audit_keys, checkpoint, export, key, use_audit_keys, verify
from roomkit.stores import first_break

__all__ = [
    "audit_keys",
    "checkpoint",
    "export",
    "first_break",
    "key",
    "use_audit_keys",
    "verify",
]
