"""The ``roomkit pending`` commands, now in :mod:`roomkit.cli.pending` (re-exported here)."""

from roomkit.cli import pending as _pending
from roomkit.cli.pending import *  # noqa: F403 -- this path re-exports every listed name

# One list of the names, kept where they live.
__all__ = list(_pending.__all__)
