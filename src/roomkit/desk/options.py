"""The desk's options: declared and documented here once, checked once by :class:`Desk`.

:class:`DeskOptions` names the keywords that :class:`~roomkit.desk.api.Desk`,
:func:`~roomkit.desk.api.desk_router` and :func:`~roomkit.desk.app.create_desk_app` take
(the last two pass them on to a ``Desk``). A set of options may be kept as a dict and
spread, or a ``Desk`` built once and handed to either::

    options: DeskOptions = {"secret": secret, "allowed_hosts": ["desk.example.com"]}
    app = create_desk_app(kit, **options)
    app = create_desk_app(Desk(kit, **options))  # the same desk, built beforehand
"""

from __future__ import annotations

import os
from collections.abc import Collection, Mapping
from typing import TYPE_CHECKING, Any, TypedDict

if TYPE_CHECKING:
    from roomkit.desk.auth import Authenticator
    from roomkit.desk.limits import DeskLimits
    from roomkit.notify.notifier import Notifier
    from roomkit.notify.slack import Slack
    from roomkit.notify.surface import Directory
    from roomkit.tools.human_input import HumanInputHandler

__all__ = ["DeskOptions", "check_option_names"]


class DeskOptions(TypedDict, total=False):
    """The options of a desk; every one may be left out (or given as ``None``)."""

    handler: HumanInputHandler | None
    """The handler whose requests the desk shows; the kit's only routed handler by default
    (with SQLite or Redis, a handler on the agents' store lets the desk run in a process of
    its own)."""
    auth: Authenticator | None
    """Turns bearer tokens into principals; a :class:`~roomkit.desk.auth.TokenAuthenticator`
    on the desk's secret by default."""
    secret: str | bytes | None
    """The desk's secret (else ``ROOMKIT_DESK_SECRET``, else the data folder's key file);
    used only when ``auth`` is not given."""
    data_dir: str | os.PathLike[str] | None
    """Where the key file lives (``~/.roomkit/desk`` by default); given, the desk also keeps
    its Web Push key and the people's push subscriptions there (``/api/push``)."""
    push_hosts: Collection[str] | None
    """Push services' hosts whose subscriptions the desk takes besides the browsers' own
    (:data:`~roomkit.notify.push_hosts.PUSH_HOSTS`); those of the notifier's
    :class:`~roomkit.notify.WebPush` when not given. Plain ``http://`` only to an origin
    named here as such, host and port (``"http://localhost:8080"``)."""
    allowed_origins: Collection[str] | None
    """The origins a browser may open the WebSocket from, each as a browser's ``Origin``
    header spells it (``scheme://host[:port]`` in lower case, no path; ``"*"``: any); the
    desk's own host only, by default."""
    allowed_hosts: Collection[str] | None
    """``Host`` names the desk answers to besides IP addresses, ``localhost`` and the
    server's own name, such as the DNS name it is served under or reached by through a proxy
    (``["*"]``: any); see :class:`~roomkit.desk.limits.HostRule`. Others are refused: 400,
    or 403 for a WebSocket upgrade."""
    limits: DeskLimits | None
    """Body, frame, depth and rate limits; :class:`~roomkit.desk.limits.DeskLimits`'
    defaults when not given."""
    notifier: Notifier | None
    """A :class:`~roomkit.notify.Notifier` the desk runs while its app runs (webhooks,
    email, ...), its counts in ``/metrics``; none by default. When one of its surfaces is
    :class:`~roomkit.notify.Slack`, the desk takes Slack's clicks with that surface's
    signing secret and the notifier's directory (``slack=`` and ``directory=`` override)."""
    slack: Slack | str | None
    """Slack's clicks: the :class:`~roomkit.notify.Slack` surface (or the Slack app's
    signing secret). With ``directory``, the desk serves ``POST /api/slack/interactions``
    and settles a click as the actor whose ``slack_user`` made it."""
    directory: Directory | None
    """Who is who on the other surfaces: the desk maps a Slack user to an actor through it
    (the notifier's, else the handler's, by default)."""


def check_option_names(options: Mapping[str, Any], *, where: str) -> None:
    """Refuse a keyword that is not a desk option, naming the ones there are.

    Raises:
        TypeError: ``options`` holds a name :class:`DeskOptions` does not declare.
    """
    unknown = sorted(options.keys() - DeskOptions.__optional_keys__)
    if unknown:
        known = ", ".join(DeskOptions.__annotations__)
        raise TypeError(f"{where} got an unknown desk option {unknown[0]!r}; the options: {known}")
