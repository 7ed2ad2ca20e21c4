"""Email over TLS (from the first byte, and by STARTTLS) with a login, to an aiosmtpd server
on loopback whose certificate a CA made for the test session signed."""

from __future__ import annotations

import ssl
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import trustme
from tests.notify.smtp_server import (
    PEOPLE,
    Logins,
    Mailbox,
    SMTPServer,
    check_question,
    question_and_ending,
)

from roomkit.notify import Email, Notifier
from roomkit.notify.email import Security
from roomkit.tools.human_input import HumanInputHandler

# aiosmtplib's send closes its connection and returns without waiting for the transport to
# finish closing; over STARTTLS the plain transport it wrapped can still be closing when a
# test's loop ends, and is then collected with a ResourceWarning. Nothing is left open: the
# close was asked for. The warnings of transports (and their sockets) collected that way
# are not this code's failures.
pytestmark = [
    pytest.mark.filterwarnings(
        "ignore:Exception ignored in. <function _SelectorTransport.__del__"
        ":pytest.PytestUnraisableExceptionWarning"
    ),
    pytest.mark.filterwarnings(
        "ignore:Exception ignored in. <socket.socket:pytest.PytestUnraisableExceptionWarning"
    ),
]

USER, PASSWORD = "agent", "a password for tests"
MODES: tuple[Security, ...] = ("tls", "starttls")


@pytest.fixture(scope="module")
def authority() -> trustme.CA:
    return trustme.CA()


@pytest.fixture(scope="module")
def cafile(authority: trustme.CA, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The authority's certificate, as a PEM file for ``Email(cafile=...)``."""
    path = tmp_path_factory.mktemp("ca") / "ca.pem"
    authority.cert_pem.write_to_path(str(path))
    return path


def server_context(authority: trustme.CA) -> ssl.SSLContext:
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    authority.issue_cert("127.0.0.1").configure_cert(context)
    return context


def tls_options(mode: Security, context: ssl.SSLContext, logins: Logins) -> dict[str, Any]:
    """aiosmtpd's options for TLS from the first byte, or for STARTTLS before anything."""
    if mode == "tls":
        # aiosmtpd counts only STARTTLS as TLS for AUTH; here the socket is TLS throughout.
        return {"ssl_context": context, "authenticator": logins, "auth_require_tls": False}
    return {"tls_context": context, "require_starttls": True, "authenticator": logins}


def errors_logged(caplog: Any) -> list[str]:
    """What the notifier logged as errors (the server logs the failed handshake too)."""
    records = caplog.records
    return [r.getMessage() for r in records if r.name == "roomkit.notify" and r.levelno >= 40]


@pytest.fixture(params=MODES)
def mode(request: pytest.FixtureRequest) -> Security:
    chosen: Security = request.param
    return chosen


@pytest.fixture
def logins() -> Logins:
    return Logins(USER, PASSWORD)


@pytest.fixture
def server(mode: Security, authority: trustme.CA, logins: Logins) -> Iterator[SMTPServer]:
    with SMTPServer(Mailbox(), **tls_options(mode, server_context(authority), logins)) as running:
        yield running


def mail(server: SMTPServer, mode: Security, cafile: Path, password: str = PASSWORD) -> Email:
    return Email(
        "127.0.0.1", server.port, USER, password, "agent@example.com", security=mode, cafile=cafile
    )


async def test_a_message_over_tls_with_a_login_has_both_parts_and_the_answer_link(
    server: SMTPServer, mode: Security, cafile: Path
) -> None:
    message, closed, notifier = await question_and_ending(
        HumanInputHandler(), mail(server, mode, cafile), server.mailbox, "Rotate the keys?"
    )
    # Both messages came over TLS, after the login.
    assert server.mailbox.sessions == [(True, True), (True, True)]
    check_question(message, "Rotate the keys?")
    assert closed["Subject"] == "Closed: Rotate the keys?"
    assert notifier.statistics().delivered["email"] == 2


async def test_a_certificate_that_does_not_verify_is_refused_and_the_answer_stands(
    mode: Security, authority: trustme.CA, logins: Logins, cafile: Path, caplog: Any
) -> None:
    """The server's certificate comes from another CA than the one the sender trusts."""
    handler = HumanInputHandler()
    mailbox = Mailbox()
    stranger = server_context(trustme.CA())
    with SMTPServer(mailbox, **tls_options(mode, stranger, logins)) as server:
        notifier = Notifier(handler, [mail(server, mode, cafile)], directory=PEOPLE)
        async with notifier:
            request = await handler.create("ask", {"question": "Lunch?"}, actor_id="alice")
            await notifier.wait_idle()
            assert await handler.aresolve(request.pending_id, "no")
            assert await handler.wait(request.pending_id) == "no"
    statistics = notifier.statistics()
    assert (statistics.failed["email"], statistics.dropped["email"]) == (1, 1)
    assert statistics.delivered["email"] == 0
    assert mailbox.messages.empty()
    [line] = errors_logged(caplog)
    assert "certificate of the SMTP server" in line
    assert "does not verify" in line
    assert "Email(cafile=...)" in line


async def test_a_password_read_with_its_file_s_newline_still_logs_in(
    server: SMTPServer, mode: Security, cafile: Path
) -> None:
    """A password kept in a file (a mounted secret) ends in a newline: the login goes
    without it."""
    message, _, notifier = await question_and_ending(
        HumanInputHandler(), mail(server, mode, cafile, PASSWORD + "\n"), server.mailbox, "Ok?"
    )
    assert server.mailbox.sessions == [(True, True), (True, True)]
    check_question(message, "Ok?")
    assert notifier.statistics().dropped["email"] == 0


async def test_a_refused_login_is_dropped_once_and_the_answer_stands(
    server: SMTPServer, mode: Security, logins: Logins, cafile: Path, caplog: Any
) -> None:
    handler = HumanInputHandler()
    notifier = Notifier(handler, [mail(server, mode, cafile, "wrong")], directory=PEOPLE)
    async with notifier:
        request = await handler.create("ask", {"question": "Lunch?"}, actor_id="alice")
        await notifier.wait_idle()
        assert await handler.aresolve(request.pending_id, "no")
        assert await handler.wait(request.pending_id) == "no"
    assert logins.refused >= 1
    assert notifier.statistics().dropped["email"] == 1
    assert server.mailbox.messages.empty()
    [line] = errors_logged(caplog)
    assert "refused the login (535" in line
    assert "Email(username=..., password=...)" in line


def test_cafile_must_hold_certificates(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="cannot be read as PEM certificates"):
        Email("smtp.test", sender="a@example.com", cafile=tmp_path / "missing.pem")
    junk = tmp_path / "junk.pem"
    junk.write_text("not a certificate")
    with pytest.raises(ValueError, match="cannot be read as PEM certificates"):
        Email("smtp.test", sender="a@example.com", cafile=junk)


def test_cafile_and_tls_context_are_one_or_the_other(cafile: Path) -> None:
    with pytest.raises(ValueError, match="not both"):
        Email(
            "smtp.test",
            sender="a@example.com",
            cafile=cafile,
            tls_context=ssl.create_default_context(),
        )
