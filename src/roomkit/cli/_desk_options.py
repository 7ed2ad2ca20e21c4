"""What ``roomkit desk`` takes as the address it listens on, the names it is reached by and
the origins a browser may open its WebSocket from, each checked before anything starts.

A wrong value exits 2 with one line naming the option typed and the value, rather than a
resolver's "Name or service not known" once the store is open, or an origin the desk would
compare against every browser's and never match.
"""

from __future__ import annotations

import argparse

from roomkit.auth.traffic import is_address, is_origin
from roomkit.cli._common import Failure, printable

__all__ = ["allowed_hosts", "allowed_origins", "listen_host"]

_ORIGIN_FORM = (
    "--allowed-origin takes an origin as a browser sends it: scheme://host[:port] in lower "
    "case, without path, query or fragment, such as https://desk.example.com or "
    "http://localhost:8080 (or * for any)"
)


def listen_host(host: str) -> str:
    """The address ``--host`` names to listen on (an IPv6 literal without its brackets).

    Raises:
        Failure: ``--host`` is empty, not an address or a host name, or a name that does
            not resolve here (exit 2).
    """
    from roomkit._serving import listen_address

    if host and not is_address(host) and (host == "*" or not _host_name(host)):
        raise Failure(
            f"--host takes an address or a host name to listen on, without scheme or port, "
            f"such as 127.0.0.1, 0.0.0.0, [::1] or desk.example.com (the port is --port); "
            f"got {printable(host, 80)!r}",
            2,
        )
    try:
        return listen_address(host)
    except ValueError as error:
        raise Failure(str(error), 2) from None


def allowed_hosts(args: argparse.Namespace, host: str) -> list[str]:
    """The ``--allowed-host`` names, and ``host`` (as :func:`listen_host` gave it) when it
    is a name; one that is not a host name exits 2, naming the option.

    Raises:
        Failure: an ``--allowed-host`` is not a host name (exit 2).
    """
    names = list(args.allowed_host or [])
    for name in names:
        if not _host_name(name):
            raise Failure(
                f"--allowed-host takes a host name without scheme or port, such as "
                f"desk.example.com (or * for any); got {printable(name, 80)!r}",
                2,
            )
    if not is_address(host):
        names.append(host)
    return names


def allowed_origins(values: list[str] | None) -> list[str] | None:
    """The ``--allowed-origin`` values, each an origin the desk can match a browser's
    ``Origin`` against exactly (``*``: any), ``None`` when none was given.

    Raises:
        Failure: a value is not such an origin (exit 2).
    """
    for value in values or ():
        if value != "*" and not is_origin(value):
            raise Failure(f"{_ORIGIN_FORM}; got {printable(value, 80)!r}", 2)
    return values or None


def _host_name(name: str) -> bool:
    """Whether the desk's host rule takes ``name`` as a name it is reached by."""
    from roomkit.auth.traffic import HostRule

    try:
        HostRule([name])
    except ValueError:
        return False
    return True
