"""Who a credential speaks for: a :class:`Principal`, and the kinds of credential.

A credential is one of the :class:`CredentialKind` s: a person's token (an administrator's
too), an answer link for one request, or a sign-in link. Tokens name their kind in their
``kind`` claim; a token signed before that claim existed has its kind read from its other
claims (see :func:`roomkit.auth.tokens.token_kind`).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from roomkit.auth.names import actor_name_problem

__all__ = ["CredentialKind", "Principal", "principal_problem"]


class CredentialKind(StrEnum):
    """What a credential is, and so what it is for."""

    ACTOR = "actor"
    """A person's token (``roomkit token ACTOR``; ``--admin`` for an administrator): their
    session on the desk and on ``roomkit mcp --http``."""
    ANSWER_LINK = "answer"
    """An answer link: reads and answers one request on the desk, once."""
    SIGN_IN_LINK = "sign-in"
    """A sign-in link: traded once, by ``POST /api/sign-in``, for a person's token."""


@dataclass(frozen=True, slots=True)
class Principal:
    """The person behind a request to the desk."""

    actor_id: str
    """Their participant id; answers are recorded as settled by it."""
    admin: bool = False
    """Sees and answers every request."""
    request_id: str | None = None
    """Set for an answer link: the one request it reads and answers."""
    link_id: str | None = None
    """An answer link's single-use nonce; the desk refuses it once spent."""
    expires_at: float | None = None
    """When the credential stops being valid (seconds since the epoch), if ever."""
    token_id: str | None = None
    """An actor token's nonce: ``roomkit revoke TOKEN`` revokes the token by it."""
    issued_at: float | None = None
    """When the credential was issued (seconds since the epoch): ``roomkit revoke --actor``
    refuses the actor's credentials issued until then. ``None`` (a credential of another
    authenticator) leaves them to that authenticator."""
    sign_in: bool = False
    """A sign-in link: good for ``POST /api/sign-in`` only, once (its ``link_id`` is
    spent), which trades it for an actor token; every other route refuses it."""

    @property
    def kind(self) -> CredentialKind:
        """The kind of credential the principal came with."""
        if self.sign_in:
            return CredentialKind.SIGN_IN_LINK
        if self.request_id is not None:
            return CredentialKind.ANSWER_LINK
        return CredentialKind.ACTOR


_IDS = ("request_id", "link_id", "token_id")


def principal_problem(principal: Principal) -> str | None:
    """What makes ``principal`` unusable, or ``None`` when it is usable.

    Its ids end up in responses, logs and the store: ``actor_id`` must be an actor name
    (:mod:`roomkit.auth.names`), and each other id, when set, text UTF-8 can encode (an
    id holding a lone surrogate, ``"\\ud800"``, is refused). The message names the field,
    never its value.
    """
    problem = actor_name_problem(principal.actor_id)
    if problem is not None:
        return f"actor_id {problem}"
    for name in _IDS:
        value = getattr(principal, name)
        if value is None:
            continue
        if not isinstance(value, str) or not value:
            return f"{name} is empty or not a string"
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return f"{name} is not valid text (it holds a lone surrogate)"
    return None
