"""Which push services a subscription may point at: the browsers' own, unless widened.

A push subscription's endpoint comes from a browser, so from whoever signs in: the desk
keeps it and the notifier POSTs to it. Left open, that lets anyone signed in make the
notifier send requests to any service it can reach (an internal one included). So an
endpoint must be ``https://`` on a host of a known push service, :data:`PUSH_HOSTS`
(Chrome's, Firefox's, Safari's, Edge's); ``push_hosts=`` (on the desk, on
:class:`~roomkit.notify.webpush.WebPush`, or ``push_hosts`` in the ``[webpush]`` table) adds
others, such as a self-hosted push service. Plain ``http://`` is taken only for an origin
listed there as such, host and port: ``"http://localhost:8080"`` (a development or test push
service on this machine); a host name alone takes ``https://`` only.

A ``*.`` entry admits any name below it, and so whatever that name resolves to: a host it
alone admits (Apple's and Microsoft's included) is pushed to only when every address it
resolves to is public (:mod:`roomkit.notify._push_dns`), and never when it is an IP
address. A host named exactly is the operator's word, pushed to wherever it resolves.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable
from urllib.parse import SplitResult, urlsplit

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
_SHAPES = (
    "host names such as 'push.example.com' or '*.example.com', or a plain-HTTP push "
    "service's origin such as 'http://localhost:8080'"
)


def _host_name(entry: object, where: str) -> str:
    if not isinstance(entry, str):
        raise TypeError(f"{where} takes host names, not {entry!r}")
    name = entry.strip().lower().rstrip(".")
    bare = name[2:] if name.startswith("*.") else name
    if not bare or any(ch in bare for ch in "/:@*? ") or bare.startswith("."):
        raise ValueError(f"{where} takes {_SHAPES}, not {entry!r}")
    return name


def _plain_origin(entry: str, where: str) -> tuple[str, int]:
    """The host and port of an ``http://host:port`` entry (port 80 when it names none; port
    0, where nothing listens, is refused)."""
    parts = urlsplit(entry.strip())
    try:
        port = parts.port
    except ValueError:
        port = -1
    host = (parts.hostname or "").rstrip(".")
    if (
        not host
        or port in (-1, 0)
        or "@" in parts.netloc
        or any(ch in host for ch in "*? ")
        or parts.path not in ("", "/")
        or parts.query
        or parts.fragment
    ):
        raise ValueError(f"{where} takes {_SHAPES}, not {entry!r}")
    return host, 80 if port is None else port


class PushHosts:
    """The hosts push subscriptions may point at: :data:`PUSH_HOSTS` and ``extra``.

    Args:
        extra: more hosts (``"push.example.com"``, or ``"*.example.com"`` for any name
            below it), taken with ``https://``; or origins taken with plain ``http://``,
            host and port (``"http://localhost:8080"``: that port only, port 80 when none
            is named).

    Raises:
        TypeError: ``extra`` is a string, or holds something that is not one.
        ValueError: an entry that is neither a host name nor an ``http://`` origin (an
            ``https://`` URL, a port after a host name, a path).
    """

    def __init__(self, extra: Iterable[str] | None = None) -> None:
        if isinstance(extra, str):
            raise TypeError(f"push_hosts is a list of host names: pass [{extra!r}], not a string")
        given: list[str] = []
        plain: set[tuple[str, int]] = set()
        for entry in extra or ():
            if isinstance(entry, str) and entry.strip().lower().startswith("http://"):
                host, port = _plain_origin(entry, "push_hosts")
                plain.add((host, port))
                shown = f"[{host}]" if ":" in host else host
                given.append(f"http://{shown}:{port}")
            else:
                given.append(_host_name(entry, "push_hosts"))
        self.extra: tuple[str, ...] = tuple(given)
        """The hosts and plain-HTTP origins given besides :data:`PUSH_HOSTS`."""
        every = (*PUSH_HOSTS, *(name for name in given if not name.startswith("http://")))
        self._names = frozenset(name for name in every if not name.startswith("*."))
        self._suffixes = tuple(name[1:] for name in every if name.startswith("*."))
        self._plain = frozenset(plain)
        self._plain_hosts = frozenset(host for host, _ in plain)

    def __repr__(self) -> str:
        return f"PushHosts({list(self.extra)!r})"

    def checked(self, host: str) -> bool:
        """Whether ``host`` is pushed to only at public addresses: it is named by no entry
        exactly (a ``*.`` entry alone admits it)."""
        name = host.lower().rstrip(".")
        return name not in self._names and name not in self._plain_hosts

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
        if parts.scheme == "http" and (host, _port(parts)) in self._plain:
            return None
        if parts.scheme == "https" and host in self._plain_hosts:
            return (
                f"endpoint's host {host!r} is named in {_OPTION} for plain http:// only, as an "
                f"origin: name {host!r} alone there too to push to it over https://"
            )
        if listed or host in self._plain_hosts:
            return (
                "endpoint must be https:// (plain http only to an origin named in "
                f"{_OPTION} as such, host and port: 'http://localhost:8080')"
            )
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


def _port(parts: SplitResult) -> int:
    """An ``http://`` URL's port (``-1`` for one that is no port)."""
    try:
        port = parts.port
    except ValueError:
        return -1
    return 80 if port is None else port
