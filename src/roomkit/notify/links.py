"""Answer links in notices: the desk's own signed, expiring, single-use answer links.

A link is ``<desk_url>/#token=<answer link>``: the desk page reads it from the fragment
(which never reaches a server's logs), and the desk spends it in the store's ledger on its
first answer, so it works once through any desk process on the store.
"""

from __future__ import annotations

import os

from roomkit.auth.tokens import issue_answer_link, resolve_secret

__all__ = ["AnswerLinks"]

MIN_TTL = 60.0
"""The shortest life of a link: one for a request about to expire still opens."""
NO_DEADLINE_TTL = 86_400.0
"""The life of a link to a request without a deadline: a day."""


class AnswerLinks:
    """Issues answer links to one desk.

    Args:
        desk_url: the desk's address, as people open it.
        secret: the desk's secret; ``None`` resolves it as the desk does
            (``ROOMKIT_DESK_SECRET``, else the key file in ``data_dir``).
        data_dir: the desk's data folder (``$ROOMKIT_DESK_DATA``, else ``~/.roomkit/desk``,
            by default).
    """

    def __init__(
        self,
        desk_url: str,
        secret: str | bytes | None = None,
        *,
        data_dir: str | os.PathLike[str] | None = None,
    ) -> None:
        if not isinstance(desk_url, str) or not desk_url.startswith(("http://", "https://")):
            raise ValueError(f"desk_url must be an http:// or https:// URL, not {desk_url!r}")
        self.desk_url = desk_url.rstrip("/")
        self._secret = resolve_secret(secret, data_dir=data_dir)

    def url(self, pending_id: str, actor_id: str, seconds_left: float | None) -> str:
        """A link answering ``pending_id`` as ``actor_id``, good until the request's
        deadline (at least :data:`MIN_TTL`; :data:`NO_DEADLINE_TTL` without one)."""
        ttl = NO_DEADLINE_TTL if seconds_left is None else max(MIN_TTL, seconds_left)
        return (
            f"{self.desk_url}/#token={issue_answer_link(self._secret, pending_id, actor_id, ttl)}"
        )
