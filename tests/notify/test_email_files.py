"""Email without a mail server: each message an ``.eml`` file, or printed on the console."""

from __future__ import annotations

import email
import email.policy
import io
from email.message import EmailMessage
from pathlib import Path

import pytest
from tests.notify.recorder import Recorder
from tests.notify.smtp_server import LINK_SECRET, PEOPLE, check_question, texts

from roomkit.notify import DeliveryError, EmailFiles, Notice, Notifier
from roomkit.notify.config import load_notify_config
from roomkit.tools.human_input import HumanInputHandler


def read(path: Path) -> EmailMessage:
    message = email.message_from_bytes(path.read_bytes(), policy=email.policy.default)
    assert isinstance(message, EmailMessage)
    return message


def files(directory: Path) -> list[Path]:
    return sorted(directory.glob("*.eml"))


async def notices_for(question: str) -> tuple[Notice, Notice]:
    """The question's notice to alice and the one saying how it ended, as a surface gets them."""
    handler = HumanInputHandler()
    recorder = Recorder("email")
    notifier = Notifier(
        handler, [recorder], directory=PEOPLE, desk_url="http://desk.test", link_secret=LINK_SECRET
    )
    async with notifier:
        request = await handler.create("ask", {"question": question}, actor_id="alice")
        await recorder.wait_until(lambda seen: ("question_pending", "alice") in seen)
        assert await handler.aresolve(request.pending_id, "yes", by="alice")
        await recorder.wait_until(lambda seen: ("question_settled", "alice") in seen)
    asked = next(n for n in recorder.notices if n.type == "question_pending")
    ended = next(n for n in recorder.notices if n.type == "question_settled")
    return asked, ended


async def test_each_message_is_a_file_with_the_answer_link(tmp_path: Path) -> None:
    outbox = tmp_path / "outbox"
    handler = HumanInputHandler()
    notifier = Notifier(
        handler,
        [EmailFiles(outbox, sender="agent@example.com")],
        directory=PEOPLE,
        desk_url="http://desk.test",
        link_secret=LINK_SECRET,
    )
    async with notifier:
        request = await handler.create("ask", {"question": "Deploy now?"}, actor_id="alice")
        await notifier.wait_idle()
        (asked,) = files(outbox)
        assert await handler.aresolve(request.pending_id, "yes", by="alice")
        await notifier.wait_idle()
    check_question(read(asked), "Deploy now?")
    assert read(asked)["From"] == "agent@example.com"
    (closed,) = [path for path in files(outbox) if path != asked]
    assert read(closed)["Subject"] == "Closed: Deploy now?"
    assert "alice answered it" in texts(read(closed))[0]
    assert not list(outbox.glob(".*"))  # no partial file left behind


async def test_a_retried_delivery_writes_the_same_file_again(tmp_path: Path) -> None:
    asked, _ = await notices_for("Ship it?")
    surface = EmailFiles(tmp_path)
    first = await surface.send(asked)
    again = await surface.send(asked)
    assert first == again
    assert len(files(tmp_path)) == 1


async def test_without_a_directory_the_message_goes_to_the_console() -> None:
    asked, _ = await notices_for("Lunch?")
    console = io.StringIO()
    receipt = await EmailFiles(None, stream=console).send(asked)
    assert receipt is not None
    assert receipt["to"] == "alice@example.com"
    assert "Subject: Question: Lunch?" in console.getvalue()
    assert "http://desk.test/#token=" in console.getvalue()


async def test_a_directory_that_cannot_be_written_is_a_delivery_error_to_retry(
    tmp_path: Path,
) -> None:
    asked, _ = await notices_for("Now?")
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    with pytest.raises(DeliveryError, match="writable") as raised:
        await EmailFiles(blocker / "outbox").send(asked)
    assert raised.value.retry


def test_bad_arguments_say_what_to_give(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="email address"):
        EmailFiles(tmp_path, sender="nobody")
    with pytest.raises(ValueError, match="a line break"):
        EmailFiles(tmp_path, sender="me@example.com\r\nBcc: you@example.com")
    (tmp_path / "f.eml").write_text("")
    with pytest.raises(ValueError, match="give a directory"):
        EmailFiles(tmp_path / "f.eml")


def test_the_toml_file_names_a_directory_instead_of_a_server(tmp_path: Path) -> None:
    path = tmp_path / "notify.toml"
    path.write_text(f'[email]\ndirectory = "{tmp_path / "mail"}"\nsender = "me@example.com"\n')
    config = load_notify_config(path, environ={})
    (surface,) = config.surfaces
    assert isinstance(surface, EmailFiles)
    assert surface.directory == tmp_path / "mail"
    assert surface.sender == "me@example.com"
    path.write_text('[email]\ndirectory = "mail"\nhost = "smtp.example.com"\n')
    with pytest.raises(Exception, match="host"):
        load_notify_config(path, environ={})
