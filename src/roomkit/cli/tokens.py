"""``roomkit token`` and ``roomkit revoke``: the desk's tokens, issued and ended.

Both use the desk's secret (``ROOMKIT_DESK_SECRET``, or the key file in ``--data-dir``), so
they need no extra of their own; ``revoke`` writes to the desk's store, where every desk
process reads it, and needs that store's extra.
"""

from __future__ import annotations

import argparse
import os
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import parse_qs

from roomkit.auth.tokens import DEFAULT_TOKEN_TTL, SECRET_ENV
from roomkit.cli._common import (
    Failure,
    add_store_option,
    check_ttl,
    existing_secret,
    on_stores,
    printable,
    quoted,
    refuse_missing_file,
)

if TYPE_CHECKING:
    from roomkit.stores import DurableStore, PendingStore

__all__ = ["add_parsers", "revoke", "token"]


def token(args: argparse.Namespace) -> int:
    """``roomkit token ACTOR``: print a token for ``ACTOR``, signed with the desk's key."""
    from roomkit.auth.names import check_actor_name
    from roomkit.auth.tokens import issue_token

    check_ttl(
        "--ttl",
        args.ttl,
        ": every token expires (the default is 30 days; `roomkit revoke` ends one sooner)",
    )
    try:
        # Before the secret: a name refused leaves no key file behind.
        check_actor_name(args.actor, what="ACTOR")
    except ValueError as error:
        raise Failure(str(error), 2) from None
    chosen = args.data_dir_given
    secret = existing_secret(args.data_dir)
    try:
        print(issue_token(secret, args.actor, admin=args.admin, ttl=args.ttl))
    except ValueError as error:
        raise Failure(str(error), 2) from None
    if not chosen and not os.environ.get(SECRET_ENV):
        # A desk started with another --data-dir refuses this token: say which key signed
        # it (on stderr, so `$(roomkit token ...)` captures the token alone).
        print(
            f"Signed with the key in {args.data_dir} (no --data-dir given): the desk takes "
            f"it when it runs with --data-dir {quoted(args.data_dir)}",
            file=sys.stderr,
        )
    return 0


def _token_of(given: str) -> str:
    """The token ``roomkit revoke`` was given: itself, or the one a link carries in its
    fragment (``<desk>/#token=...``, as a notice or ``roomkit desk`` shows it)."""
    _, hashed, fragment = given.partition("#")
    found = parse_qs(fragment).get("token") if hashed else None
    return found[0] if found else given


def revoke(args: argparse.Namespace) -> int:
    """``roomkit revoke``: record one token, or every token of an actor, as spent."""
    from roomkit.auth.ledger import (
        actor_entry,
        kept_until,
        link_entry,
        revoked_link_entry,
        token_entry,
    )
    from roomkit.auth.names import check_actor_name
    from roomkit.auth.principal import CredentialKind
    from roomkit.auth.tokens import token_claims, token_kind
    from roomkit.core.exceptions import DeskAuthError
    from roomkit.stores import SpendLedger

    if (args.token is None) == (args.actor is None):
        raise Failure("Revoke one token (TOKEN) or every token of an actor (--actor NAME)", 2)
    if args.store == "memory":
        raise Failure(
            "A memory store lives inside the desk process: revoke on the desk's shared "
            "store (--store sqlite:///path.db or redis://...)",
            2,
        )
    until: float | None = None
    also: str | None = None
    if args.actor is not None:
        try:
            check_actor_name(args.actor, what="--actor")
        except ValueError as error:
            raise Failure(str(error), 2) from None
        entry, what = actor_entry(args.actor), f"every token of {printable(args.actor)}"
    else:
        given = _token_of(args.token)
        if "." not in given:
            # Every token is two parts joined by a dot; a bare word is most likely the
            # actor whose tokens were meant.
            raise Failure(
                f"{printable(given)} is not a token (a token holds a '.'): to revoke every "
                f"token of that actor, run `roomkit revoke --actor {printable(given)}` with "
                "the same --store",
                2,
            )
        try:
            claims = token_claims(existing_secret(args.data_dir), given)
        except DeskAuthError as error:
            raise Failure(f"Not a token of this desk: {error}", 2) from None
        if not isinstance(claims.get("jti"), str):
            raise Failure(
                "This token carries no id (it predates revocation): revoke its actor's "
                f"tokens with `roomkit revoke --actor {printable(claims['sub'])}`"
            )
        until = kept_until(None if claims.get("exp") is None else float(claims["exp"]))
        kind = token_kind(claims)
        # A link is refused by its link entry, whether it answers or signs in; its revoked
        # entry refuses it too where a spent link still reads its request.
        link = kind is not CredentialKind.ACTOR
        entry = link_entry(claims["jti"]) if link else token_entry(claims["jti"])
        if link:
            also = revoked_link_entry(claims["jti"])
        named = {
            CredentialKind.ANSWER_LINK: "answer link",
            CredentialKind.SIGN_IN_LINK: "sign-in link",
        }
        what = f"the {named.get(kind, 'token')} of {printable(claims['sub'])}"

    async def record(store: PendingStore | DurableStore) -> float:
        # Every shared store keeps its ledger with its requests, where each desk reads it.
        if not isinstance(store, SpendLedger):
            raise Failure(f"{type(store).__name__} keeps no ledger of revoked tokens", 2)
        if also is not None:
            await store.record_spent(also, until=until)
        return await store.record_spent(entry, until=until)

    # A revocation in a database no desk reads would leave the token working.
    refuse_missing_file(args.store)
    when = on_stores(args.store, "roomkit revoke", record, "Could not record the revocation")
    stamp = datetime.fromtimestamp(when, UTC).isoformat(timespec="seconds")
    print(f"Revoked {what} (issued until {stamp})" if args.actor else f"Revoked {what}")
    return 0


def add_parsers(
    commands: argparse._SubParsersAction[argparse.ArgumentParser], data_dir: argparse.ArgumentParser
) -> None:
    """The ``token`` and ``revoke`` commands' arguments."""
    # The token command tells a folder it was given from the default one.
    token_data_dir = argparse.ArgumentParser(add_help=False)
    token_data_dir.add_argument(
        "--data-dir",
        type=Path,
        help=f"the folder of the desk's key file, as `roomkit desk` has it (default: "
        f"$ROOMKIT_DESK_DATA or ~/.roomkit/desk; unless {SECRET_ENV} is set)",
    )
    issuing = commands.add_parser(
        "token", parents=[token_data_dir], help="issue a token for a person"
    )
    issuing.add_argument("actor", help="the participant id the token speaks for")
    issuing.add_argument("--admin", action="store_true", help="sees and answers everything")
    issuing.add_argument(
        "--ttl",
        type=float,
        default=DEFAULT_TOKEN_TTL,
        help=f"seconds until it expires (default: {DEFAULT_TOKEN_TTL:.0f}, 30 days)",
    )
    issuing.set_defaults(run=token)

    revoking = commands.add_parser(
        "revoke", parents=[data_dir], help="revoke a token, or every token of an actor"
    )
    revoking.add_argument(
        "token",
        nargs="?",
        help="the token to revoke, or the link that carries it (<desk>/#token=...)",
    )
    revoking.add_argument("--actor", help="revoke every token of this actor issued until now")
    add_store_option(revoking, required=False)
    revoking.set_defaults(run=revoke)
