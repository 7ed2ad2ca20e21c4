"""The addresses a push is sent to: public ones, for a host only a ``*.`` entry admits.

A ``*.example.com`` entry of the push hosts (:mod:`roomkit.notify.push_hosts`) admits any
name below it, and whoever may add a name there (or whoever signs in and subscribes with
one, if the operator does not hold every name below) chooses what it resolves to: a name
pointing at ``127.0.0.1`` or ``169.254.169.254`` would make the notifier POST to a service
of its own machine or network. So a host the list does not name exactly is pushed to only
when every address it resolves to is globally routable; otherwise its push is refused,
naming the host and the addresses. The check is the HTTP client's own resolver, so the
addresses checked are the ones connected to (a second lookup could answer otherwise), and
TLS still verifies the certificate against the host's name. A host named exactly is the
operator's own word, and resolved as it is.
"""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Callable

from aiohttp.abc import AbstractResolver, ResolveResult

__all__ = ["NotPublic", "PublicOnly", "public"]

# NAT64's well-known prefix carries an IPv4 address in its last 32 bits.
_NAT64 = ipaddress.ip_network("64:ff9b::/96")


class NotPublic(Exception):
    """A host only a ``*.`` entry admits resolved to an address that is not public."""

    def __init__(self, host: str, addresses: list[str]) -> None:
        self.host = host
        self.addresses = addresses
        shown = ", ".join(addresses[:5])
        super().__init__(
            f"{host!r} resolves to {shown}, not a public address: a host admitted only "
            "through a '*.' entry of push_hosts is pushed to only at public addresses (name "
            "it exactly in push_hosts if it is a push service of your own)"
        )


def public(address: str) -> bool:
    """Whether ``address`` (an IP address as text) is globally routable; ``False`` for text
    that is none."""
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:
        return False
    if isinstance(ip, ipaddress.IPv6Address):
        if ip.ipv4_mapped is not None:
            return ip.ipv4_mapped.is_global
        if ip in _NAT64:
            return ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF).is_global
    return ip.is_global


class PublicOnly(AbstractResolver):
    """Resolves with ``inner``; a host for which ``checked`` says so must resolve only to
    public addresses, or :class:`NotPublic` is raised and nothing is connected to."""

    def __init__(self, inner: AbstractResolver, checked: Callable[[str], bool]) -> None:
        self._inner = inner
        self._checked = checked

    async def resolve(
        self, host: str, port: int = 0, family: socket.AddressFamily = socket.AF_INET
    ) -> list[ResolveResult]:
        """The addresses of ``host``, checked.

        Raises:
            NotPublic: ``host`` is checked and one of its addresses is not public.
            OSError: ``inner`` could not resolve it.
        """
        found = await self._inner.resolve(host, port, family)
        if self._checked(host):
            refused = [entry["host"] for entry in found if not public(entry["host"])]
            if refused:
                raise NotPublic(host.rstrip("."), refused)
        return found

    async def close(self) -> None:
        """Close ``inner``."""
        await self._inner.close()
