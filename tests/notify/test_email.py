"""Email through the notifier to a real SMTP server (aiosmtpd on loopback)."""

from __future__ import annotations

from collections.abc import Callable

from tests.notify.smtp_server import Mailbox, SMTPServer

from roomkit.notify import Directory, Email, Notifier, Person
from roomkit.tools.human_input import HumanInputHandler

PEOPLE = Directory({"alice": Person(email="alice@example.com"), "bob": Person(email="bob@nowhere")})
SECRET = "an answer link secret for tests"


def mail(server: SMTPServer) -> Email:
    return Email("127.0.0.1", server.port, sender="agent@example.com", security="none")


async def test_the_approver_gets_plain_text_and_html_with_an_answer_link(
    make_handler: Callable[[], HumanInputHandler],
) -> None:
    handler = make_handler()
    mailbox = Mailbox()
    with SMTPServer(mailbox) as server:
        notifier = Notifier(
            handler,
            [mail(server)],
            directory=PEOPLE,
            desk_url="http://desk.test",
            link_secret=SECRET,
        )
        async with notifier:
            request = await handler.create("ask", {"question": "Deploy now?"}, actor_id="alice")
            message = await mailbox.next_message()
            assert await handler.aresolve(request.pending_id, "yes", by="alice")
            closed = await mailbox.next_message()
    assert message["To"] == "alice@example.com"
    assert message["Subject"] == "Question: Deploy now?"
    plain_part, rich_part = message.get_body(("plain",)), message.get_body(("html",))
    assert plain_part is not None
    assert rich_part is not None
    plain, rich = plain_part.get_content(), rich_part.get_content()
    assert "Deploy now?" in plain
    assert "http://desk.test/#token=" in plain
    assert 'href="http://desk.test/#token=' in rich
    assert closed["Subject"] == "Closed: Deploy now?"
    closing = closed.get_body(("plain",))
    assert closing is not None
    assert "alice answered it" in closing.get_content()


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
