"""Credentials: the desk's signed tokens, who they speak for, and the one gate that admits them.

Every surface that takes a credential (the desk's API, WebSocket and page, ``roomkit mcp
--http``, a Slack click) asks :class:`CredentialGate` for the :class:`Principal` behind it,
for a named :class:`Use`; a credential is refused everywhere but its own use. The tokens
(:func:`issue_token`, :func:`issue_answer_link`, :func:`issue_sign_in_link`) name their
:class:`CredentialKind`, and the person they speak for is an actor name
(:func:`check_actor_name`). Nothing here needs a web framework: the desk's FastAPI
dependency (``roomkit.desk.Gate``) stands on this gate.
"""

from __future__ import annotations

from roomkit.auth.authenticator import Authenticator, TokenAuthenticator
from roomkit.auth.gate import CredentialGate, Refused, Use
from roomkit.auth.ledger import LinkLedger
from roomkit.auth.names import MAX_ACTOR_CHARS, check_actor_name
from roomkit.auth.principal import CredentialKind, Principal
from roomkit.auth.tokens import (
    SECRET_ENV,
    issue_answer_link,
    issue_sign_in_link,
    issue_token,
    load_or_create_secret,
    resolve_secret,
)

__all__ = [
    "MAX_ACTOR_CHARS",
    "SECRET_ENV",
    "Authenticator",
    "CredentialGate",
    "CredentialKind",
    "LinkLedger",
    "Principal",
    "Refused",
    "TokenAuthenticator",
    "Use",
    "check_actor_name",
    "issue_answer_link",
    "issue_sign_in_link",
    "issue_token",
    "load_or_create_secret",
    "resolve_secret",
]
