"""Who is calling the desk, and what they may see.

:class:`Access` applies the rule of who may see (and so answer) a request: the actor it
names; for a request with no actor, the participants of its room; an approval's approvers;
an administrator, everything; an answer link, its one request. Deciding an approval takes
being one of its approvers.

Who is calling is :mod:`roomkit.auth`'s to say: an :class:`Authenticator` turns a bearer
token into a :class:`Principal` (the default, :class:`TokenAuthenticator`, reads the desk's
own signed tokens), and :class:`LinkLedger` keeps the spent links and revoked tokens in the
handler's store ledger. They, and :class:`Access` (:mod:`roomkit.auth.access`, which every
surface that shows requests shares), keep their names here too.
"""

from __future__ import annotations

from roomkit.auth.access import Access
from roomkit.auth.authenticator import Authenticator, TokenAuthenticator
from roomkit.auth.ledger import (
    LINK_USED,
    REVOKED,
    SIGN_IN_USED,
    LinkLedger,
    actor_entry,
    link_entry,
    token_entry,
)
from roomkit.auth.principal import Principal, principal_problem

__all__ = [
    "LINK_USED",
    "REVOKED",
    "SIGN_IN_USED",
    "Access",
    "Authenticator",
    "LinkLedger",
    "Principal",
    "TokenAuthenticator",
    "actor_entry",
    "link_entry",
    "principal_problem",
    "token_entry",
]
