"""``roomkit notify``, now in :mod:`roomkit.cli.notify` (re-exported here)."""

from roomkit.cli.notify import add_parser as add_notify_parser
from roomkit.cli.notify import notify_config, run_notifier

__all__ = ["add_notify_parser", "notify_config", "run_notifier"]
