"""Answer links in notices: the desk's own signed, expiring, single-use answer links.

A link is ``<desk_url>/#token=<answer link>``: the desk page reads it from the fragment
(which never reaches a server's logs), and the desk spends it in the store's ledger on its
first answer, so it works once through any desk process on the store.
"""

from __future__ import annotations

import os

from roomkit._urls import http_url
from roomkit.auth.tokens import issue_answer_link, resolve_secret

__all__ = ["AnswerLinks", "desk_address"]

MIN_TTL = 60.0
"""The shortest life of a link: one for a request about to expire still opens."""
NO_DEADLINE_TTL = 86_400.0
"""The life of a link to a request without a deadline: a day."""


def desk_address(url: object, what: str) -> str:
    """``url``, when answer links can be made of it: an ``http://`` or ``https://`` URL naming
    a host, a port from 1 to 65535 if any, and no fragment.

    Raises:
        ValueError: it is not, naming ``what`` (``"desk_url"``, ``"--desk-url"``) and saying
            what to give; a link to a port no desk listens on, or to no host, opens nothing.
    """
    url = http_url(url, what)
    if "#" in url:
        # A link's own fragment carries its token: the page would read neither.
        raise ValueError(
            f"{what} holds a fragment (#...), where answer links put their token: give the "
            "desk's address without it"
        )
    return url


class AnswerLinks:
    """Issues answer links to one desk.

    Args:
        desk_url: the desk's address, as people open it.
        secret: the desk's secret; ``None`` resolves it as the desk does
            (``ROOMKIT_DESK_SECRET``, else the key file in ``data_dir``).
        data_dir: the desk's data folder (``$ROOMKIT_DESK_DATA``, else ``~/.roomkit/desk``,
            by default).

    Raises:
        ValueError: ``desk_url`` is not an ``http://`` or ``https://`` URL naming a host,
            names a port outside 1 to 65535, or holds a fragment (``#...``).
    """

    def __init__(
        self,
        desk_url: str,
        secret: str | bytes | None = None,
        *,
        data_dir: str | os.PathLike[str] | None = None,
    ) -> None:
        self.desk_url = desk_address(desk_url, "desk_url").rstrip("/")
        self._secret = resolve_secret(secret, data_dir=data_dir)

    def url(self, pending_id: str, actor_id: str, seconds_left: float | None) -> str:
        """A link answering ``pending_id`` as ``actor_id``, good until the request's
        deadline (at least :data:`MIN_TTL`; :data:`NO_DEADLINE_TTL` without one)."""
        ttl = NO_DEADLINE_TTL if seconds_left is None else max(MIN_TTL, seconds_left)
        return (
            f"{self.desk_url}/#token={issue_answer_link(self._secret, pending_id, actor_id, ttl)}"
        )
