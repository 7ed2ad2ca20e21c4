"""Email over SMTP (``aiosmtplib``): plain text and HTML, with the answer link.

Each approver with an email address in the directory gets their own message, with a link
that answers as them. Once the request settles nothing further is sent but the word of how
it ended.
"""

from __future__ import annotations

import os
import ssl
from collections.abc import Mapping
from typing import Any, Literal

from roomkit._extras import requires_extra

with requires_extra("roomkit.notify.Email", "notify"):
    import aiosmtplib

from roomkit.models.clock import bounded_seconds
from roomkit.notify._email_message import Mailbox, address_problem, email_texts
from roomkit.notify._lanes import retry_policy
from roomkit.notify.retry import Retry
from roomkit.notify.surface import DeliveryError, Notice

__all__ = ["Email", "email_texts"]

Security = Literal["starttls", "tls", "none"]

MAX_PORT = 65535


def _host(host: object) -> str:
    """``host``, once it can name an SMTP server: text without spaces or control characters."""
    if (
        not isinstance(host, str)
        or not host
        or any(char.isspace() or not char.isprintable() for char in host)
    ):
        raise ValueError(
            "Email(host=...) names the SMTP server, without spaces or control characters, "
            f"e.g. 'smtp.example.com'; got {host!r}"
        )
    return host


def _port(port: object) -> int:
    """``port``, once it is a TCP port (a bool is not one)."""
    if isinstance(port, bool) or not isinstance(port, int):
        raise TypeError(f"Email(port=...) must be a whole number (587, 465, 25), got {port!r}")
    if not 1 <= port <= MAX_PORT:
        raise ValueError(f"Email(port=...) must be a port from 1 to {MAX_PORT}, got {port}")
    return port


def _trusting(cafile: str | os.PathLike[str]) -> ssl.SSLContext:
    try:
        return ssl.create_default_context(cafile=os.fspath(cafile))
    except OSError as error:  # ssl.SSLError among them
        raise ValueError(
            f"Email(cafile={os.fspath(cafile)!r}) cannot be read as PEM certificates ({error})"
        ) from None


def _untrusted(error: BaseException) -> ssl.SSLCertVerificationError | None:
    """The certificate failure behind ``error`` (aiosmtplib wraps it on a TLS connect)."""
    chain: list[BaseException] = []
    seen: BaseException | None = error
    while seen is not None and seen not in chain:
        if isinstance(seen, ssl.SSLCertVerificationError):
            return seen
        chain.append(seen)
        seen = seen.__cause__ or seen.__context__
    return None


def _refused(
    address: str, recipient: str | None, error: aiosmtplib.SMTPRecipientsRefused
) -> DeliveryError:
    """The server's refusal of ``address``: for now (a 4xx reply, as greylisting's), worth
    sending again; for good (5xx), the address to check."""
    replies = [f"{refusal.code} {refusal.message}" for refusal in error.recipients]
    said = "; ".join(replies) or str(error)
    if error.recipients and all(400 <= refusal.code < 500 for refusal in error.recipients):
        return DeliveryError(
            f"the SMTP server put off {address} for now ({said}): retrying", retry=True
        )
    return DeliveryError(
        f"the SMTP server refused {address} ({said}): check {recipient!r}'s address in the "
        "directory",
        retry=False,
    )


class Email(Mailbox):
    """Send each notice to its recipient's email address.

    Args:
        host: the SMTP server.
        port: 587 (STARTTLS) by default; 465 means TLS from the first byte.
        username: the login, when the server wants one.
        password: its password (sent without the line break a file it was read from ends
            with).
        sender: the ``From`` address.
        security: ``"starttls"``, ``"tls"`` or ``"none"`` (a local relay); by the port when
            not given (465: ``"tls"``, else ``"starttls"``).
        timeout: seconds one message may take.
        retry: when to try again after a connection error or a 4xx reply, to a recipient
            too (never after a 5xx refusal, a refused login or a certificate that does not
            verify); every 5 s at first, at most every 5 minutes, for a day.
        cafile: a PEM file of the certificate authorities to trust instead of the system's
            (a server whose certificate a private CA signed).
        tls_context: the TLS settings in full, instead of ``cafile``.

    Raises:
        ValueError: an argument is missing or wrong (``host`` empty or holding a space or a
            control character, ``port`` outside 1 to 65535), both ``cafile`` and
            ``tls_context`` are given, ``cafile`` cannot be read as certificates, or
            ``timeout`` is not a positive, finite number of seconds.
        TypeError: ``port`` is not a whole number (a bool is not one), ``timeout`` not a
            number, ``username``, ``password``, ``cafile`` or ``tls_context`` of another
            type.
    """

    name = "email"

    def __init__(
        self,
        host: str,
        port: int = 587,
        username: str | None = None,
        password: str | None = None,
        sender: str = "",
        *,
        security: Security | None = None,
        timeout: float = 20.0,
        retry: Retry | None = None,
        cafile: str | os.PathLike[str] | None = None,
        tls_context: ssl.SSLContext | None = None,
    ) -> None:
        host, port = _host(host), _port(port)
        if (problem := address_problem(sender)) is not None:
            raise ValueError(
                f"Email(sender=...) must be one email address, not {sender!r}: it {problem}"
            )
        if (username is None) != (password is None):
            raise ValueError("Email takes username and password together, or neither")
        for option, value in (("username", username), ("password", password)):
            if value is not None and not isinstance(value, str):
                raise TypeError(
                    f"Email({option}=...) must be a str or None, got {type(value).__name__}"
                )
        chosen = security or ("tls" if port == 465 else "starttls")
        if chosen not in ("starttls", "tls", "none"):
            raise ValueError(f"Email(security=...) is 'starttls', 'tls' or 'none', not {chosen!r}")
        self.host, self.port, self.sender, self.security = host, port, sender, chosen
        if isinstance(password, str):
            # Read from a file or a variable set from one, it ends in a newline no server's
            # login takes; a password may begin or end with a space, so only that goes.
            password = password.rstrip("\r\n")
        self._username, self._password = username, password
        self.timeout = bounded_seconds("Email(timeout=...)", timeout)
        self.retry = retry_policy("Email(retry=...)", retry, Retry(first=5.0, cap=300.0))
        if cafile is not None and tls_context is not None:
            raise ValueError("Email takes cafile= or tls_context=, not both")
        if tls_context is not None and not isinstance(tls_context, ssl.SSLContext):
            raise TypeError(
                "Email(tls_context=...) must be an ssl.SSLContext, got "
                f"{type(tls_context).__name__}"
            )
        if cafile is not None and not isinstance(cafile, str | os.PathLike):
            raise TypeError(
                f"Email(cafile=...) must be the path of a PEM file, got {type(cafile).__name__}"
            )
        self._tls_context = tls_context if cafile is None else _trusting(cafile)

    async def send(self, notice: Notice) -> Mapping[str, Any] | None:
        """Send one message; raises :class:`DeliveryError` saying what to fix."""
        address, message = self._addressed(notice)
        try:
            await aiosmtplib.send(
                message,
                hostname=self.host,
                port=self.port,
                username=self._username,
                password=self._password,
                use_tls=self.security == "tls",
                start_tls=self.security == "starttls",
                timeout=self.timeout,
                tls_context=self._tls_context,
            )
        except aiosmtplib.SMTPRecipientsRefused as error:
            raise _refused(address, notice.recipient, error) from None
        except aiosmtplib.SMTPAuthenticationError as error:
            raise DeliveryError(
                f"the SMTP server refused the login ({error.code} {error.message}): check "
                "Email(username=..., password=...)",
                retry=False,
            ) from None
        except aiosmtplib.SMTPResponseException as error:
            raise DeliveryError(
                f"the SMTP server answered {error.code} {error.message}",
                retry=400 <= error.code < 500,
            ) from None
        except (aiosmtplib.SMTPException, OSError) as error:
            untrusted = _untrusted(error)
            if untrusted is not None:
                raise DeliveryError(
                    f"the certificate of the SMTP server {self.host}:{self.port} does not "
                    f"verify ({untrusted.verify_message}): for a private CA pass "
                    "Email(cafile=...), else fix the server's certificate or the host name",
                    retry=False,
                ) from None
            if type(error) is aiosmtplib.SMTPException:
                # The server answered, and offers no STARTTLS or no login: sending again
                # meets the same server, so say which setting to change instead.
                raise DeliveryError(
                    f"the SMTP server {self.host}:{self.port} does not take these settings "
                    f"({error}): check Email(security=...) ('none' for a relay without TLS, "
                    "'tls' for port 465) and whether it takes a login",
                    retry=False,
                ) from None
            raise DeliveryError(
                f"the SMTP server {self.host}:{self.port} is unreachable ({error}): check the "
                "host, the port and the security setting",
                retry=True,
            ) from None
        return {"to": address, "message_id": message["Message-ID"]}

    async def aclose(self) -> None:
        """Each message opens its own connection: nothing to close."""
