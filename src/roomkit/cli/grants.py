"""``roomkit grants``: list and revoke the standing grants kept in the desk's store.

``list`` prints one line per grant, newest first: its id, state (``live``, ``revoked``,
``expired``, ``used up``), tool, uses, who granted it, what it covers and when it ends;
``--json`` prints one JSON object per line instead. ``revoke GRANT_ID`` revokes one for
every process on the store. Both read ``--store`` as ``roomkit desk --store`` does; the
memory store lives inside the desk process, so they refuse it, and a ``sqlite:///`` file that
does not exist (opening it would make an empty one).
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, TypeVar

from roomkit._storable import unencodable_text
from roomkit.cli._common import Failure, add_store_option, on_stores, printable, refuse_missing_file

if TYPE_CHECKING:
    from roomkit.stores.grants import Grant, GrantStore

__all__ = ["add_parser", "describe", "list_grants", "revoke_grant"]

T = TypeVar("T")


def _check_text(option: str, value: str | None) -> None:
    """Exit 2 when ``value`` holds bytes that are not UTF-8 (read as lone surrogates),
    which no store can keep or look up."""
    if value is not None and unencodable_text(value) is not None:
        raise Failure(
            f"{option} holds bytes that are not UTF-8 text: type it again in UTF-8 (check "
            "the terminal's encoding)",
            2,
        )


def _with_grants(url: str, command: str, work: Callable[[GrantStore], Awaitable[T]]) -> T:
    """Run ``work`` on the grants of the store ``url``; the store's faults exit 1."""
    from roomkit.stores.grants import KeepsGrants

    if url == "memory":
        raise Failure(
            "A memory store lives inside the desk process: name the desk's shared store "
            "(--store sqlite:///path.db, redis://... or postgresql://...)",
            2,
        )
    refuse_missing_file(url)

    async def on_grants(store: object) -> T:
        if not isinstance(store, KeepsGrants):
            raise Failure(f"The store {printable(url)} keeps no grants", 2)
        return await work(store.grants)

    return on_stores(url, command, on_grants, "Could not reach the grants", create=False)


def _when(seconds: float) -> str:
    try:
        return datetime.fromtimestamp(seconds, UTC).isoformat(timespec="seconds")
    except (OverflowError, OSError, ValueError):
        # Past the calendar (a hand edit of the store): the seconds as stored.
        return f"{seconds!r} seconds since the epoch"


def describe(grant: Grant, now: float) -> str:
    """One line about ``grant`` at ``now``, safe for a terminal."""
    uses = f"{grant.uses}/{grant.max_uses}" if grant.max_uses is not None else f"{grant.uses}"
    covers = "arguments " + grant.digest[:12] if grant.digest else "schema"
    scope = [f"actor {grant.actor_id}"] if grant.actor_id is not None else []
    scope += [f"room {grant.room_id}"] if grant.room_id is not None else []
    by = ", ".join(grant.granted_by)
    fields = [
        grant.grant_id,
        grant.state(now),
        grant.tool,
        f"uses {uses}",
        f"by {by} (quorum {grant.quorum})",
        f"{covers} for {' and '.join(scope)}",
        f"until {_when(grant.expires_at)}",
    ]
    return printable("  ".join(fields), limit=400)


def list_grants(args: argparse.Namespace) -> int:
    """``roomkit grants list``: the grants, newest first."""
    _check_text("--tool", args.tool)

    async def read(grants: GrantStore) -> tuple[list[Grant], float]:
        return await grants.list(tool=args.tool, live=args.live), grants.clock()

    found, now = _with_grants(args.store, "roomkit grants list", read)
    for grant in found:
        if args.json:
            view: dict[str, Any] = {**grant.to_json(), "state": grant.state(now)}
            print(json.dumps(view, sort_keys=True))
        else:
            print(describe(grant, now))
    if not found and not args.json:
        print("No grants")
    return 0


def revoke_grant(args: argparse.Namespace) -> int:
    """``roomkit grants revoke GRANT_ID``: revoke one grant for every process."""
    from roomkit.auth.names import check_actor_name
    from roomkit.stores.grants import check_grant_id

    try:
        check_grant_id(args.grant_id)
    except ValueError as error:
        raise Failure(str(error), 2) from None
    _check_text("--by", args.by)
    if args.by is not None:
        # Kept with the grant as who revoked it, as the desk keeps a caller's name.
        try:
            check_actor_name(args.by, what="--by")
        except ValueError as error:
            raise Failure(str(error), 2) from None

    async def revoke(grants: GrantStore) -> tuple[bool, Grant | None]:
        # Read only to say why nothing was revoked: a grant a hand edit left unreadable
        # is revoked all the same, and said so.
        done = await grants.revoke(args.grant_id, by=args.by)
        return done, None if done else await grants.get(args.grant_id)

    done, grant = _with_grants(args.store, "roomkit grants revoke", revoke)
    name = printable(args.grant_id)
    if not done and grant is None:
        raise Failure(f"No grant {name} in this store (`roomkit grants list` shows them)")
    if not done:
        raise Failure(f"Grant {name} was revoked already")
    print(f"Revoked grant {name}: it covers no call from now on")
    return 0


def add_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """The ``grants`` command's arguments."""
    grants = commands.add_parser("grants", help="list and revoke standing grants")
    actions = grants.add_subparsers(dest="action", required=True, metavar="{list,revoke}")
    listing = actions.add_parser("list", help="the grants, newest first")
    add_store_option(listing, required=False)
    listing.add_argument("--tool", help="only the grants of this tool")
    listing.add_argument("--live", action="store_true", help="only the grants still in force")
    listing.add_argument("--json", action="store_true", help="one JSON object per line")
    listing.set_defaults(run=list_grants)
    revoking = actions.add_parser("revoke", help="revoke a grant for every process")
    revoking.add_argument("grant_id", help="the grant's id, as `roomkit grants list` shows it")
    add_store_option(revoking, required=False)
    revoking.add_argument("--by", help="who revokes it, kept with the grant")
    revoking.set_defaults(run=revoke_grant)
