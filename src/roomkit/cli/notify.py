"""``roomkit notify`` and ``roomkit desk --notify``: a notifier from a TOML file.

``roomkit notify --store URL --config notify.toml`` runs the notifier over the desk's store
in a process of its own until SIGTERM or Ctrl-C, then stops within about a second (what is
owed stays in the store's outbox for the next notifier). With the audit key (of
``ROOMKIT_AUDIT_KEY`` or ``audit.key`` in ``--data-dir``) it signs the heads it appends and
writes a checkpoint of the trail every minute and as it stops. The file is read and checked, and
its secrets taken from the environment, before anything starts: a mistake is one line
naming the key, and exit status 2 (:mod:`roomkit.notify.config`).
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from roomkit.cli._common import Failure, add_store_option, close_stores, open_stores
from roomkit.cli.audit import audit_keys, use_audit_keys

if TYPE_CHECKING:
    from roomkit.notify.config import NotifyConfig

__all__ = ["add_parser", "notify_config", "run_notifier"]

EXTRA = "notify"
"""The extra most notifiers run on (webhooks and email; Slack and Apprise have their own)."""


def notify_config(path: Path, *, store: str | None = None) -> NotifyConfig:
    """The checked file at ``path``; a mistake exits 2 with its one line. With ``store``
    (``roomkit notify``'s URL), the extra its back end needs is looked at too: the line
    names every extra missing, the file's and the store's, with one command for them all."""
    from roomkit._extras import extras_missing, lacking_extras
    from roomkit.core.exceptions import NotifyConfigError
    from roomkit.notify.config import load_notify_config
    from roomkit.stores import extra_of_url

    needed = extra_of_url(store) if store is not None else None
    lacking = lacking_extras([needed] if needed is not None else [])
    try:
        config = load_notify_config(path)
    except NotifyConfigError as error:
        if store is None or not error.missing_extras:
            raise Failure(str(error), 2) from None
        # The file's extras first, as it names them, then the store's.
        file_lacks = error.missing_extras
        lacking = {
            extra: set(file_lacks.get(extra, ())) | lacking.get(extra, set())
            for extra in [*file_lacks, *lacking]
        }
    if lacking:
        raise Failure(extras_missing("roomkit notify", lacking), 2)
    return config


def run_notifier(args: argparse.Namespace) -> int:
    """``roomkit notify``: deliver until SIGTERM or Ctrl-C, then exit 0.

    Ctrl-C before it notifies (before it prints the surfaces it notifies through), while
    its store is read, interrupts it: it exits 130, with nothing printed.

    Raises:
        Failure: a memory store or a wrong file (exit 2), or a store it cannot start on.
    """
    from roomkit._interrupts import Interrupts
    from roomkit.core.exceptions import StoreError
    from roomkit.notify.ladders import following
    from roomkit.stores import checkpointing
    from roomkit.tools.human_input import HumanInputHandler

    if args.store == "memory":
        raise Failure(
            "A memory store lives inside one process: give the store the agents and the desk "
            "share (--store sqlite:///path.db, redis://... or postgresql://...)",
            2,
        )
    config = notify_config(args.config, store=args.store)
    keys = audit_keys(args.data_dir)
    pending_store, room_store = open_stores(args.store, "roomkit notify")
    trail = use_audit_keys(pending_store, keys)
    interrupts = Interrupts()

    async def run() -> None:
        stop = asyncio.Event()
        # SIGTERM stops it whenever it comes; Ctrl-C is the interrupts' to tell apart.
        interrupts.terminate = stop.set
        try:
            handler = HumanInputHandler(store=pending_store, directory=config.directory)
            try:
                await handler.list_pending()
            except StoreError as error:
                raise Failure(f"Cannot start the notifier: {error}") from None
            notifier = config.notifier(handler, data_dir=args.data_dir)
            # The last checkpoint is taken once the notifier has stopped writing.
            async with checkpointing(trail), notifier, following(handler, config.ladder):
                names = ", ".join(notifier.surfaces)
                print(f"Notifying through {names}; Ctrl-C or SIGTERM stops", flush=True)
                interrupts.serve(stop.set)
                await stop.wait()
        finally:
            await close_stores(pending_store, room_store)

    status = interrupts.run(run)
    if status == 0:
        print("Stopped: what is owed stays in the store's outbox", file=sys.stderr, flush=True)
    return status


def add_parser(
    commands: argparse._SubParsersAction[argparse.ArgumentParser], data_dir: argparse.ArgumentParser
) -> None:
    """The ``notify`` command's arguments."""
    notify = commands.add_parser(
        "notify",
        parents=[data_dir],
        help="run the notifier over the desk's store, from a TOML file",
        description="Tell people about requests (webhooks, email, Slack, Apprise) until "
        "SIGTERM or Ctrl-C. The file names the surfaces, the people and a ladder; secrets "
        "come from environment variables. Answer links are signed with the desk's key. Another "
        "SIGTERM or Ctrl-C while it stops is logged, and a third exits at once.",
    )
    add_store_option(notify)
    notify.add_argument("--config", type=Path, required=True, help="the notifier's TOML file")
    notify.set_defaults(run=run_notifier, extra=EXTRA)
