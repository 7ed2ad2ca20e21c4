"""What the email tests share: the people, and a question asked and answered by email. The
SMTP server itself is :mod:`tests.servers.smtp_server`."""

from __future__ import annotations

from email.message import EmailMessage

from tests.servers.smtp_server import Logins as Logins
from tests.servers.smtp_server import Mailbox as Mailbox
from tests.servers.smtp_server import SMTPServer as SMTPServer

from roomkit.notify import Directory, Email, Notifier, Person
from roomkit.tools.human_input import HumanInputHandler

PEOPLE = Directory({"alice": Person(email="alice@example.com"), "bob": Person(email="bob@nowhere")})
LINK_SECRET = "an answer link secret for tests"


async def question_and_ending(
    handler: HumanInputHandler, email: Email, mailbox: Mailbox, question: str
) -> tuple[EmailMessage, EmailMessage, Notifier]:
    """Ask alice ``question`` through ``email``, answer it as her; the two messages she got
    (the question, how it ended) and the notifier that sent them."""
    notifier = Notifier(
        handler, [email], directory=PEOPLE, desk_url="http://desk.test", link_secret=LINK_SECRET
    )
    async with notifier:
        request = await handler.create("ask", {"question": question}, actor_id="alice")
        message = await mailbox.next_message()
        assert await handler.aresolve(request.pending_id, "yes", by="alice")
        closed = await mailbox.next_message()
    return message, closed, notifier


def texts(message: EmailMessage) -> tuple[str, str]:
    """The plain text and the HTML of ``message`` (both must be there)."""
    plain, rich = message.get_body(("plain",)), message.get_body(("html",))
    assert plain is not None
    assert rich is not None
    return plain.get_content(), rich.get_content()


def check_question(message: EmailMessage, question: str) -> None:
    """``message`` asks alice ``question``, in plain text and HTML, with her answer link."""
    assert message["To"] == "alice@example.com"
    assert message["Subject"] == f"Question: {question}"
    plain, rich = texts(message)
    assert question in plain
    assert "http://desk.test/#token=" in plain
    assert 'href="http://desk.test/#token=' in rich
