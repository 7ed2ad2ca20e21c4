"""What a task's push-notification config must be: one rule, asked when it is set and when
it is posted to.

A caller sets its task's config (``tasks/pushNotificationConfig/set``, or the
``taskPushNotificationConfig`` of a message), and :class:`~roomkit.adapters.a2a.A2APush`
later POSTs to its URL with its token and ``Authorization``. :func:`config_problem` says what
the push cannot send: a URL that is not ``http(s)://`` to a host, carries credentials (which
the HTTP client would send as ``Authorization: Basic``, in place of the config's own, and
which delivery errors would quote), is longer than :data:`MAX_URL_CHARS`, or names a host the
push's URL check refuses (by default the SDK's ``validate_push_notification_url``: loopback,
private, link-local, cloud-metadata or unresolvable); an id, token, scheme or credentials no
HTTP header can carry (a line break, a control character, a letter outside ASCII), or longer
than the push sends; an ``authentication`` missing its scheme or its credentials.

:class:`CheckedConfigs` is the config store the SDK's request handler is given: it refuses
such a config with a JSON-RPC ``InvalidParams`` error saying what is wrong, and stores
nothing. The push asks the same rule before each POST, so a config stored around the
handler is refused there too; only a host's DNS answer can differ between the two times.
"""

from __future__ import annotations

import string
from collections.abc import Awaitable, Callable
from urllib.parse import urlsplit

from a2a.server.context import ServerCallContext
from a2a.server.tasks import PushNotificationConfigStore
from a2a.types import TaskPushNotificationConfig
from a2a.utils.errors import InvalidParamsError

from roomkit.models.json_limits import MAX_ID_CHARS
from roomkit.models.shown import shown
from roomkit.notify.surface import header_value_problem

__all__ = ["MAX_SECRET_CHARS", "MAX_URL_CHARS", "CheckedConfigs", "UrlCheck", "config_problem"]

UrlCheck = Callable[[str], Awaitable[bool]]
"""``async (url) -> bool``: whether a push may be posted to ``url``'s host."""

MAX_URL_CHARS = 2048
"""The longest push URL taken."""
MAX_SECRET_CHARS = 4096
"""The longest token, and the longest credentials, sent in a push's headers."""
_MAX_SCHEME_CHARS = 64
# RFC 9110's token characters: an authentication scheme is one such word.
_TCHAR = frozenset("!#$%&'*+-.^_`|~" + string.ascii_letters + string.digits)
_WIDEN = (
    "a server that pushes inside its own network passes its own "
    "A2APush(push_url_validator=...) (None posts to any host, for a receiver on the loopback "
    "in tests)"
)


async def config_problem(config: TaskPushNotificationConfig, url_ok: UrlCheck | None) -> str | None:
    """Why a push cannot be sent as ``config`` says; ``None`` when it can.

    ``url_ok`` is the push's check of the URL's host (``None``: any host); it is asked
    last, once the URL is one it may be shown.
    """
    problem = (
        _header_problem("id", config.id, MAX_ID_CHARS)
        or _header_problem("token", config.token, MAX_SECRET_CHARS)
        or _authentication_problem(config)
        or _url_problem(config.url)
    )
    if problem is not None or url_ok is None:
        return problem
    try:
        allowed = await url_ok(config.url)
    except ValueError:
        # The SDK's check raises on a host name IDNA cannot encode (a label over 63).
        allowed = False
    except Exception as error:
        # A check of the server's own that fails: the URL is not known to be allowed.
        return (
            f"its url {shown(config.url)} could not be checked: the push's push_url_validator "
            f"raised {type(error).__name__}: {str(error)[:200]}"
        )
    if allowed:
        return None
    return (
        f"its url {shown(config.url)} names no public host (its host is a loopback, private, "
        "link-local or cloud-metadata address, or does not resolve): give the URL of a "
        f"public http(s) host; {_WIDEN}"
    )


def _header_problem(field: str, value: str, most: int) -> str | None:
    """Why ``value`` (empty: not given) cannot be sent in a header as it is."""
    if len(value) > most:
        return f"its {field} is {len(value)} characters long; at most {most} are taken"
    if value != value.strip():
        return f"its {field} starts or ends with whitespace, which a header does not keep"
    problem = header_value_problem(value)
    return None if problem is None else f"its {field} {problem}"


def _authentication_problem(config: TaskPushNotificationConfig) -> str | None:
    if not config.HasField("authentication"):
        return None
    scheme, credentials = config.authentication.scheme, config.authentication.credentials
    if not scheme or not credentials:
        return (
            "its authentication needs both a scheme (such as 'Bearer') and credentials, "
            "which are sent as 'Authorization: <scheme> <credentials>'; leave it out to send "
            "no Authorization"
        )
    if len(scheme) > _MAX_SCHEME_CHARS or not all(char in _TCHAR for char in scheme):
        return (
            f"its authentication scheme must be one word of at most {_MAX_SCHEME_CHARS} ASCII "
            "letters, digits and !#$%&'*+-.^_`|~ (such as 'Bearer')"
        )
    return _header_problem("authentication credentials", credentials, MAX_SECRET_CHARS)


def _url_problem(url: str) -> str | None:
    if len(url) > MAX_URL_CHARS:
        return f"its url is {len(url)} characters long; at most {MAX_URL_CHARS} are taken"
    if not all("!" <= char <= "~" for char in url):
        return (
            "its url holds a space, a control character or a letter outside ASCII: "
            "percent-encode them (a host name outside ASCII in its xn-- form)"
        )
    parts = urlsplit(url)
    if parts.scheme.lower() not in ("http", "https"):
        got = f"not {parts.scheme}:" if parts.scheme else "it names no scheme"
        return f"its url must be an https:// (or http://) URL, {got}"
    if "@" in parts.netloc:
        return (
            "its url carries credentials (user:password@host): send them as the config's "
            "authentication (scheme and credentials) instead"
        )
    try:
        parts.port  # noqa: B018 (reading it checks it)
    except ValueError:
        return "its url's port is not a number from 0 to 65535"
    if not parts.hostname:
        return "its url names no host"
    return None


class CheckedConfigs(PushNotificationConfigStore):
    """``inner``, refusing a config :func:`config_problem` finds a problem with.

    Args:
        inner: the store the configs are kept in.
        url_ok: the push's check of a URL's host (``None``: any host).
    """

    def __init__(self, inner: PushNotificationConfigStore, url_ok: UrlCheck | None) -> None:
        self.inner = inner
        """The store the configs are kept in."""
        self._url_ok = url_ok

    async def set_info(
        self,
        task_id: str,
        notification_config: TaskPushNotificationConfig,
        context: ServerCallContext,
    ) -> TaskPushNotificationConfig | None:
        """Store the config, once it is one a push can be sent as.

        Raises:
            InvalidParamsError: it is not (the SDK answers it as JSON-RPC -32602, or an
                HTTP 400 on REST), naming what is wrong; nothing is stored.
        """
        problem = await config_problem(notification_config, self._url_ok)
        if problem is not None:
            raise InvalidParamsError(message=f"Push notification config refused: {problem}")
        return await self.inner.set_info(task_id, notification_config, context)

    async def get_info(
        self, task_id: str, context: ServerCallContext
    ) -> list[TaskPushNotificationConfig]:
        """The caller's configs of the task."""
        return await self.inner.get_info(task_id, context)

    async def get_info_for_dispatch(self, task_id: str) -> list[TaskPushNotificationConfig]:
        """Every config of the task, whoever set it."""
        return await self.inner.get_info_for_dispatch(task_id)

    async def delete_info(
        self, task_id: str, context: ServerCallContext, config_id: str | None = None
    ) -> None:
        """Delete the caller's config ``config_id`` of the task (each of them: ``None``)."""
        await self.inner.delete_info(task_id, context, config_id)
