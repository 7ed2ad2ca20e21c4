import asyncio
from typing import get_args

import pytest

from roomkit.desk.demo_console import Console
from roomkit.models.pending_input import PendingInput
from roomkit.notify import Directory, Person
from roomkit.notify.email import email_texts
from roomkit.notify.surface import Notice, NoticeType
from roomkit.notify.wording import headline
from roomkit.tools.human_input import HumanInputHandler


def test_a_directory_finds_people_by_actor_and_by_slack_user() -> None:
    directory = Directory(
        {"alice": Person(email="alice@example.com", slack_user="U1", manager="bob")}
    )
    assert directory.get("alice") == Person("alice@example.com", "U1", "bob")
    assert directory.get("carol") is None
    assert directory.actor_for_slack_user("U1") == "alice"
    assert directory.actor_for_slack_user("U2") is None
    assert "alice" in directory
    assert len(directory) == 1


@pytest.mark.parametrize(
    ("people", "error"),
    [({"": Person()}, ValueError), ({"alice": "alice@example.com"}, TypeError)],
)
def test_a_directory_refuses_entries_it_cannot_use(people: dict, error: type) -> None:
    with pytest.raises(error, match="Directory"):
        Directory(people)


@pytest.mark.parametrize("kind", get_args(NoticeType))
def test_every_notice_type_has_its_words(kind: str) -> None:
    """Email, the headline and the demo's console word every type of notice."""
    request = PendingInput("p1", "pay", {"amount": 5}, "room", "call", "agent", kind="approval")
    notice = Notice(type=kind, delivery_id="d", request=request, recipient="ann")  # type: ignore[arg-type]
    subject, plain, _ = email_texts(notice)
    assert subject
    assert plain
    assert headline(notice, "approval").endswith("pay")
    console = Console(say=lambda line: None)
    asyncio.run(console.send(notice))
    assert console.lines[0].startswith("[")


def test_arguments_read_as_labelled_lines_without_json() -> None:
    from roomkit.notify.wording import arguments_words

    schema = {
        "properties": {
            "to": {"title": "Payee"},
            "amount": {"type": "number", "x-unit": "EUR"},
            "currency": {"oneOf": [{"const": "EUR", "title": "Euro"}]},
        }
    }
    arguments = {
        "to": "bob",
        "amount": 1200,
        "currency": "EUR",
        "urgent": False,
        "tags": ["rent", "march"],
        "memo": {"text": "March rent"},
        "lines": [{"sku": "A-1", "qty": 2}],
    }
    assert arguments_words(arguments, schema) == (
        "Payee: bob\n"
        "Amount: 1,200 EUR\n"
        "Currency: Euro\n"
        "Urgent: no\n"
        "Tags: rent, march\n"
        "Memo:\n"
        "  Text: March rent\n"
        "Lines:\n"
        "  - Sku: A-1\n"
        "    Qty: 2"
    )
    assert arguments_words({}) == "(no arguments)"


def test_a_line_break_in_an_argument_starts_no_line_of_its_own() -> None:
    """``Note: ok<LF>Amount: 40`` would read as a second amount above the real one (and the
    only one, once a phone clips the rest): what follows a line break in a value, a list or
    a name is indented under its field."""
    from roomkit.notify.wording import arguments_words

    arguments = {
        "note": "ok\nAmount: 40 EUR\u2028Payee: alice",
        "tags": ["a\nAmount: 1"],
        "x\nAmount: 2": "y",
        "amount": 4000,
    }
    assert arguments_words(arguments) == (
        "Note: ok\n"
        "  Amount: 40 EUR\n"
        "  Payee: alice\n"
        "Tags: a\n"
        "  Amount: 1\n"
        "X\n"
        "  amount: 2: y\n"
        "Amount: 4,000"
    )


async def test_a_line_break_in_an_option_adds_no_option() -> None:
    from roomkit.notify.wording import asked_text

    request = await HumanInputHandler().create_detached(
        "AskUserQuestion", {"question": "Seat?", "options": ["Window\n• Aisle", "Middle"]}
    )
    assert asked_text(request) == "Seat?\n• Window\n  • Aisle\n• Middle"


async def test_an_email_shows_every_argument_of_an_approval_whose_tool_takes_a_question() -> None:
    """The ``question`` an approval's tool takes is one argument among others: the email
    shows the amount and the payee beside it, not that argument alone."""
    request = await HumanInputHandler().create_approval(
        "send_payment", {"question": "Routine refund?", "amount": 4000, "to": "mallory"}
    )
    notice = Notice(type="question_pending", delivery_id="d-1", request=request, recipient="bob")
    _, plain, rich = email_texts(notice)
    for text in (plain, rich):
        assert "Routine refund?" in text
        assert "Amount: 4,000" in text
        assert "To: mallory" in text


async def test_an_emails_html_shows_the_request_line_by_line() -> None:
    """HTML runs lines together: the arguments of an approval are shown one per line, and
    what continues a field keeps its indent under it."""
    request = await HumanInputHandler().create_approval(
        "pay", {"note": "ok\nAmount: 40 <EUR>", "amount": 4000}
    )
    notice = Notice(type="question_pending", delivery_id="d-1", request=request, recipient="bob")
    _, _, rich = email_texts(notice)
    assert "<blockquote>pay<br>Note: ok<br>&nbsp;&nbsp;Amount: 40 &lt;EUR&gt;<br>" in rich
    assert "<br>Amount: 4,000</blockquote>" in rich
