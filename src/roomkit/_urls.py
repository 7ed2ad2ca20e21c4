"""The check of a URL a developer gives for a server to reach over HTTP (a webhook's, a push
server's, an API's, a desk's): refused when it is given, naming the parameter, rather than at
every request later with an HTTP client's error that names neither it nor what to give.
"""

from __future__ import annotations

from urllib.parse import urlsplit

from roomkit.models.shown import shown

__all__ = ["http_url"]


def http_url(url: object, what: str) -> str:
    """``url``, when it is an ``http://`` or ``https://`` URL naming a host, and a port from
    1 to 65535 if any.

    Raises:
        ValueError: naming ``what`` (``"Webhook(url=...)"``) and saying what to give, where
            ``urlsplit`` names neither (and takes port 0, which connects to no server).
    """
    if not isinstance(url, str) or not url.startswith(("http://", "https://")):
        raise ValueError(f"{what} must be an http:// or https:// URL, not {shown(url)}")
    try:
        parts = urlsplit(url)
    except ValueError as error:  # an IPv6 host's bracket left open, or one out of place
        raise ValueError(
            f"{what} cannot be read as a URL ({error}): give an http:// or https:// URL, an "
            "IPv6 host within [ and ] (https://[2001:db8::1]:8443/)"
        ) from None
    # Only the host and port are quoted: the rest of a webhook's URL (a private calendar's,
    # its user and password) may carry its secret.
    authority = parts.netloc.rpartition("@")[2]
    if not parts.hostname:
        raise ValueError(
            f"{what} must be an http:// or https:// URL naming a host, not one whose host is "
            f"empty ({shown(parts.scheme + '://' + authority)}...)"
        )
    try:
        port = parts.port
    except ValueError:
        port = 0
    if port == 0:
        given = authority.rpartition("]")[2] if "]" in authority else authority
        raise ValueError(
            f"{what} names the port {shown(given.rpartition(':')[2], limit=20)} in "
            f"{shown(authority)}: give a port from 1 to 65535, or none for the scheme's own "
            "(443 for https://, 80 for http://)"
        )
    return url
