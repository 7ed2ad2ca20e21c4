"""Email through the notifier to a real SMTP server (aiosmtpd on loopback)."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from tests.notify.smtp_server import (
    PEOPLE,
    Mailbox,
    SMTPServer,
    check_question,
    question_and_ending,
    texts,
)

from roomkit.notify import Directory, Email, Notifier, Person, Retry
from roomkit.tools.human_input import HumanInputHandler


def mail(server: SMTPServer, retry: Retry | None = None) -> Email:
    return Email("127.0.0.1", server.port, sender="agent@example.com", security="none", retry=retry)


async def test_the_approver_gets_plain_text_and_html_with_an_answer_link(
    make_handler: Callable[[], HumanInputHandler],
) -> None:
    mailbox = Mailbox()
    with SMTPServer(mailbox) as server:
        message, closed, _ = await question_and_ending(
            make_handler(), mail(server), mailbox, "Deploy now?"
        )
    check_question(message, "Deploy now?")
    assert closed["Subject"] == "Closed: Deploy now?"
    assert "alice answered it" in texts(closed)[0]


async def test_a_refused_address_is_dropped_and_the_answer_stands(
    make_handler: Callable[[], HumanInputHandler],
) -> None:
    handler = make_handler()
    mailbox = Mailbox(refuse=frozenset({"bob@nowhere"}))
    with SMTPServer(mailbox) as server:
        notifier = Notifier(handler, [mail(server)], directory=PEOPLE)
        async with notifier:
            request = await handler.create("ask", {"question": "Lunch?"}, actor_id="bob")
            await notifier.wait_idle()
            assert await handler.aresolve(request.pending_id, "no")
    assert notifier.statistics().dropped["email"] == 1
    assert mailbox.messages.empty()
    assert await handler.wait(request.pending_id) == "no"


async def test_an_address_put_off_for_now_is_sent_again(
    make_handler: Callable[[], HumanInputHandler],
) -> None:
    """A 4xx reply to the recipient (greylisting) is worth another try, not a drop."""
    handler = make_handler()
    mailbox = Mailbox(put_off=frozenset({"alice@example.com"}))
    with SMTPServer(mailbox) as server:
        email = mail(server, Retry(first=0.01, cap=0.02))
        notifier = Notifier(handler, [email], directory=PEOPLE)
        async with notifier:
            await handler.create("ask", {"question": "Deploy now?"}, actor_id="alice")
            message = await mailbox.next_message()
            await notifier.wait_idle()
    assert message["Subject"] == "Question: Deploy now?"
    assert notifier.statistics().failed["email"] == 1
    assert notifier.statistics().dropped["email"] == 0


async def test_an_address_that_is_not_one_address_is_dropped_saying_so(
    make_handler: Callable[[], HumanInputHandler], caplog: pytest.LogCaptureFixture
) -> None:
    """A line break in an address would add a header (a ``Bcc:``), a comma a second
    recipient of the answer link: nothing is sent, the delivery is dropped at once."""
    handler = make_handler()
    people = Directory(
        {
            "alice": Person(email="alice@example.com\r\nBcc: mallory@example.com"),
            "bob": Person(email="bob@example.com, mallory@example.com"),
        }
    )
    mailbox = Mailbox()
    with SMTPServer(mailbox) as server:
        email = mail(server, Retry(first=0.01, cap=0.02, give_up=0.2))
        notifier = Notifier(handler, [email], directory=people)
        async with notifier:
            for person in ("alice", "bob"):
                await handler.create("ask", {"question": "Lunch?"}, actor_id=person)
            await notifier.wait_idle()
    assert mailbox.messages.empty()
    # One attempt each, not retried.
    assert notifier.statistics().failed["email"] == 2
    assert notifier.statistics().dropped["email"] == 2
    assert "'alice''s email address in the directory" in caplog.text
    assert "names 2 addresses, where one is needed: give one address" in caplog.text
    assert "Traceback" not in caplog.text


async def test_starttls_to_a_server_offering_none_is_dropped_saying_which_setting(
    make_handler: Callable[[], HumanInputHandler], caplog: pytest.LogCaptureFixture
) -> None:
    """A local relay without TLS, sent to with the default security: no retry meets
    another server, so the delivery is dropped at once, naming the setting."""
    handler = make_handler()
    mailbox = Mailbox()
    with SMTPServer(mailbox) as server:
        retry = Retry(first=0.01, cap=0.02, give_up=0.2)
        email = Email("127.0.0.1", server.port, sender="agent@example.com", retry=retry)
        notifier = Notifier(handler, [email], directory=PEOPLE)
        async with notifier:
            await handler.create("ask", {"question": "Lunch?"}, actor_id="alice")
            await notifier.wait_idle()
    assert mailbox.messages.empty()
    assert notifier.statistics().failed["email"] == 1
    assert notifier.statistics().dropped["email"] == 1
    assert "STARTTLS extension not supported" in caplog.text
    assert "check Email(security=...) ('none' for a relay without TLS" in caplog.text


async def test_a_question_that_reads_as_an_encoded_word_adds_no_header(
    make_handler: Callable[[], HumanInputHandler],
) -> None:
    """A subject is read for RFC 2047 encoded words: a question holding one that decodes to a
    line break would add headers of its own (a ``Reply-To:`` that takes the person's reply,
    a ``From:``). It is sent as the text it is."""
    question = "=?utf-8?q?Lunch=3F=0D=0AReply-To:_mallory@example.com?="
    mailbox = Mailbox()
    with SMTPServer(mailbox) as server:
        message, _, _ = await question_and_ending(make_handler(), mail(server), mailbox, question)
    assert "Reply-To" not in message
    check_question(message, question)
