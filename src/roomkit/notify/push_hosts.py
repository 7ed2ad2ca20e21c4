"""Which push services a subscription may point at: the browsers' own, unless widened.

A push subscription's endpoint comes from a browser, so from whoever signs in: the desk
keeps it and the notifier POSTs to it. Left open, that lets anyone signed in make the
notifier send requests to any service it can reach (an internal one included). So an
endpoint must be ``https://`` on a host of a known push service, :data:`PUSH_HOSTS`
(Chrome's, Firefox's, Safari's, Edge's); ``push_hosts=`` (on the desk, on
:class:`~roomkit.notify.webpush.WebPush`, or ``push_hosts`` in the ``[webpush]`` table) adds
others, such as a self-hosted push service. Plain ``http://`` is taken only for a host listed
there by its exact name (a development or test push service on this machine).

A ``*.`` entry admits any name below it, and so whatever that name resolves to: a host it
alone admits (Apple's and Microsoft's included) is pushed to only when every address it
resolves to is public (:mod:`roomkit.notify._push_dns`), and never when it is an IP
address. A host named exactly is the operator's word, pushed to wherever it resolves.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable
from urllib.parse import urlsplit

__all__ = ["PUSH_HOSTS", "PushHosts"]

PUSH_HOSTS = (
    "fcm.googleapis.com",
    "android.googleapis.com",
    "updates.push.services.mozilla.com",
    "*.push.apple.com",
    "*.notify.windows.com",
)
"""The push services browsers subscribe with (Chrome and Android, Firefox, Safari, Edge);
``*.`` takes any name below."""
_OPTION = "push_hosts (Desk(push_hosts=[...]), WebPush(push_hosts=[...]), [webpush] push_hosts)"


def _host_name(entry: object, where: str) -> str:
    if not isinstance(entry, str):
        raise TypeError(f"{where} takes host names, not {entry!r}")
    name = entry.strip().lower().rstrip(".")
    bare = name[2:] if name.startswith("*.") else name
    if not bare or any(ch in bare for ch in "/:@*? ") or bare.startswith("."):
        raise ValueError(
            f"{where} takes host names such as 'push.example.com' or '*.example.com', not {entry!r}"
        )
    return name


class PushHosts:
    """The hosts push subscriptions may point at: :data:`PUSH_HOSTS` and ``extra``.

    Args:
        extra: more hosts (``"push.example.com"``, or ``"*.example.com"`` for any name
            below it); a plain ``http://`` endpoint is taken only on one of these, named
            exactly.

    Raises:
        TypeError: ``extra`` is a string, or holds something that is not one.
        ValueError: an entry that is not a host name (a URL, a port, a path).
    """

    def __init__(self, extra: Iterable[str] | None = None) -> None:
        if isinstance(extra, str):
            raise TypeError(f"push_hosts is a list of host names: pass [{extra!r}], not a string")
        given = tuple(_host_name(entry, "push_hosts") for entry in extra or ())
        self.extra: tuple[str, ...] = given
        """The hosts given besides :data:`PUSH_HOSTS`."""
        every = (*PUSH_HOSTS, *given)
        self._names = frozenset(name for name in every if not name.startswith("*."))
        self._suffixes = tuple(name[1:] for name in every if name.startswith("*."))
        self._plain = frozenset(name for name in given if not name.startswith("*."))

    def __repr__(self) -> str:
        return f"PushHosts({list(self.extra)!r})"

    def checked(self, host: str) -> bool:
        """Whether ``host`` is pushed to only at public addresses: it is named by no entry
        exactly (a ``*.`` entry alone admits it)."""
        name = host.lower().rstrip(".")
        return name not in self._names

    def problem(self, endpoint: str) -> str | None:
        """Why ``endpoint`` may not be pushed to, naming the option that widens the list;
        ``None`` when it may."""
        parts = urlsplit(endpoint)
        host = (parts.hostname or "").rstrip(".")
        if not host:
            return "endpoint must be the push service's https:// URL"
        listed = host in self._names or (host.endswith(self._suffixes) and not _address(host))
        if parts.scheme == "https" and listed:
            return None
        if parts.scheme == "http" and host in self._plain:
            return None
        if listed:
            return f"endpoint must be https:// (plain http only for a host named in {_OPTION})"
        return (
            f"endpoint's host {host!r} is not a known push service: a push service of your "
            f"own must be named in {_OPTION}"
        )


def _address(host: str) -> bool:
    """Whether ``host`` is an IP address, which no ``*.`` entry admits."""
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True
