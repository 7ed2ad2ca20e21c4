"""What goes wrong on the way to a person is logged and counted, and never holds up an answer."""

from __future__ import annotations

import asyncio
import logging
import re
import socket
from collections.abc import Mapping
from typing import Any

import pytest
from tests.notify.receiver import SECRET
from tests.notify.recorder import Recorder

from roomkit.notify import (
    Directory,
    Email,
    Notice,
    Notifier,
    Ntfy,
    Person,
    Retry,
    Slack,
    Webhook,
)
from roomkit.tools.human_input import HumanInputHandler


def closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


async def test_an_unreachable_webhook_is_retried_and_the_answer_goes_through(
    caplog: pytest.LogCaptureFixture,
) -> None:
    handler = HumanInputHandler()
    url = f"http://127.0.0.1:{closed_port()}/hooks"
    webhook = Webhook(url, SECRET, retry=Retry(first=0.01, cap=0.02, give_up=0.2))
    async with Notifier(handler, [webhook]) as notifier:
        request = await handler.create("ask", {"question": "Anyone?"}, actor_id="alice")
        assert await handler.aresolve(request.pending_id, "yes")
        assert await handler.wait(request.pending_id) == "yes"
        await notifier.wait_idle()
    assert notifier.statistics().failed["webhook"] >= 1
    assert "is unreachable" in caplog.text
    assert "check the URL" in caplog.text


async def test_an_approver_no_surface_reaches_is_logged_and_counted(
    caplog: pytest.LogCaptureFixture,
) -> None:
    handler = HumanInputHandler()
    email = Email("127.0.0.1", closed_port(), sender="agent@example.com", security="none")
    people = Directory({"alice": Person(slack_user="U1")})  # no email address
    async with Notifier(handler, [email], directory=people) as notifier:
        await handler.create("ask", {"question": "Hello?"}, actor_id="alice")
        await handler.create("ask", {"question": "Who?"}, actor_id="stranger")
        await notifier.wait_idle()
    assert notifier.statistics().unreachable == 2
    assert "no surface reaches 'alice'" in caplog.text
    assert "no surface reaches 'stranger'" in caplog.text


class Broken(Recorder):
    """A surface with a bug: it raises what no surface should."""

    async def send(self, notice: Notice) -> Mapping[str, Any] | None:
        raise KeyError("a bug in a surface")


async def test_a_surface_that_raises_does_not_stop_the_notifier() -> None:
    handler = HumanInputHandler()
    broken, working = Broken("broken"), Recorder("working")
    slow = Retry(first=60.0)
    broken.retry = slow  # type: ignore[attr-defined]
    async with Notifier(handler, [broken, working]) as notifier:
        request = await handler.create("ask", {"question": "Still up?"}, actor_id="alice")
        await working.wait_until(lambda seen: len(seen) == 1)
        assert await handler.aresolve(request.pending_id, "yes")
        await working.wait_until(lambda seen: len(seen) == 2)
    assert notifier.statistics().failed["broken"] >= 1
    assert working.seen() == [("question_pending", "alice"), ("question_settled", "alice")]


class Unsure(Recorder):
    """A surface with a bug in saying whom it reaches."""

    def reaches(self, recipient: str | None, person: Person | None) -> bool:
        raise AttributeError("a bug in reaches")


async def test_a_surface_that_cannot_say_whom_it_reaches_leaves_the_others_be(
    caplog: pytest.LogCaptureFixture,
) -> None:
    handler = HumanInputHandler()
    unsure, working = Unsure("unsure"), Recorder("working")
    async with Notifier(handler, [unsure, working]) as notifier:
        request = await handler.create("ask", {"question": "Still up?"}, actor_id="alice")
        await notifier.wait_idle()
        assert working.seen() == [("question_pending", "alice")]
        assert await handler.aresolve(request.pending_id, "yes")
        await notifier.wait_idle()
    assert working.seen() == [("question_pending", "alice"), ("question_settled", "alice")]
    assert unsure.notices == []
    assert "unsure failed to say whether it reaches 'alice'" in caplog.text


def test_bad_surface_settings_are_refused_saying_what_to_do() -> None:
    with pytest.raises(ValueError, match="whsec_"):
        Webhook("https://example.com/hooks", "not-a-secret")
    with pytest.raises(ValueError, match="http:// or https://"):
        Webhook("ftp://example.com", SECRET)
    with pytest.raises(ValueError, match="username and password together"):
        Email("smtp.example.com", username="me", sender="a@example.com")
    with pytest.raises(ValueError, match=r"one email address.*names 2 addresses"):
        Email("smtp.example.com", sender="a@example.com, b@example.com")
    with pytest.raises(ValueError, match="two surfaces are named"):
        Notifier(HumanInputHandler(), [Recorder(), Recorder()])


SURFACES_OF_URLS = {
    "Webhook(url=...)": lambda url: Webhook(url, SECRET),
    "Ntfy(server=...)": lambda url: Ntfy(url, "approvals-{actor}"),
    "Slack(base_url=...)": lambda url: Slack("xoxb-1", "signing", base_url=url),
}


@pytest.mark.parametrize("what", SURFACES_OF_URLS)
@pytest.mark.parametrize(
    ("url", "port"), [("https://h:99999/", "99999"), ("https://h:x/", "x"), ("http://h:0/", "0")]
)
def test_a_url_whose_port_is_none_is_refused_naming_the_parameter(
    what: str, url: str, port: str
) -> None:
    """A port out of range or no number raised urllib's bare ValueError naming neither the
    parameter nor the port (or, at Slack, failed each delivery); port 0 went to 443 or 80."""
    with pytest.raises(ValueError, match=re.escape(f"{what} names the port '{port}' in 'h:")):
        SURFACES_OF_URLS[what](url)


@pytest.mark.parametrize("what", SURFACES_OF_URLS)
def test_a_url_no_parser_reads_is_refused_naming_the_parameter(what: str) -> None:
    with pytest.raises(
        ValueError, match=re.escape(f"{what} cannot be read as a URL (Invalid IPv6 URL)")
    ):
        SURFACES_OF_URLS[what]("https://[::1/")
    with pytest.raises(
        ValueError, match=re.escape(f"{what} must be an http:// or https:// URL naming a host")
    ):
        SURFACES_OF_URLS[what]("https:///hooks")


def test_a_desk_url_with_a_fragment_is_refused_without_quoting_it() -> None:
    """A desk URL may carry a user and password: the message names the fragment alone."""
    with pytest.raises(ValueError, match=re.escape("desk_url holds a fragment")) as refused:
        Notifier(
            HumanInputHandler(),
            [Recorder()],
            desk_url="https://ops:hunter2@desk.example.com/#/",
            link_secret="s" * 32,
        )
    assert "hunter2" not in str(refused.value)


@pytest.mark.parametrize(
    ("url", "refused"),
    [
        ("https://desk:99999", "desk_url names the port '99999' in 'desk:99999'"),
        ("https://desk:abc/", "desk_url names the port 'abc' in 'desk:abc'"),
        ("https:///desk", "desk_url must be an http:// or https:// URL naming a host"),
        ("https://desk/#inbox", "desk_url holds a fragment (#...), where answer links put"),
    ],
)
def test_a_desk_url_no_link_could_open_is_refused_when_the_notifier_is_made(
    url: str, refused: str
) -> None:
    """It was taken, and every notice carried a link to a port no desk listens on, to no
    host, or with a token the page could not read behind a fragment of its own."""
    with pytest.raises(ValueError, match=re.escape(refused)):
        Notifier(HumanInputHandler(), [Recorder()], desk_url=url, link_secret="s" * 32)


@pytest.mark.parametrize("option", ["lease", "poll"])
@pytest.mark.parametrize(
    ("value", "error", "says"),
    [
        (1e300, ValueError, "must be a positive number of seconds, at most 3153600000"),
        ("30", TypeError, "must be a number of seconds, got '30'"),
        (0, ValueError, "must be a positive, finite number of seconds, got 0"),
    ],
)
def test_a_lease_or_poll_no_notifier_can_keep_is_refused_naming_it(
    option: str, value: object, error: type[Exception], says: str
) -> None:
    """A string failed as a comparison naming neither; past a century it was taken."""
    with pytest.raises(error, match=re.escape(f"Notifier({option}=...) {says}")):
        Notifier(HumanInputHandler(), [Recorder()], **{option: value})


@pytest.mark.parametrize(
    ("value", "error", "says"),
    [
        (2.5, TypeError, "is a whole number of deliveries in flight, got 2.5"),
        (True, TypeError, "is a whole number of deliveries in flight, got True"),
        ("8", TypeError, "is a whole number of deliveries in flight, got '8'"),
        (0, ValueError, "must be from 1 to 10,000, got 0"),
        (2**64, ValueError, "must be from 1 to 10,000, got 18446744073709551616"),
    ],
)
def test_a_concurrency_that_is_no_count_of_deliveries_is_refused_naming_it(
    value: object, error: type[Exception], says: str
) -> None:
    """Taken, it reached every claim of the outbox as its row count: SQLite refused a float
    or a number past 64 bits at each turn (the memory store took them)."""
    with pytest.raises(error, match=re.escape(f"Notifier(concurrency=...) {says}")):
        Notifier(HumanInputHandler(), [Recorder()], concurrency=value)  # type: ignore[arg-type]


@pytest.mark.parametrize("value", [1, 10_000])
def test_a_concurrency_from_1_to_the_most_in_flight_is_taken(value: int) -> None:
    assert Notifier(HumanInputHandler(), [Recorder()], concurrency=value).concurrency == value


class GaveUp(logging.Handler):
    """Sets :attr:`seen` once the notifier logs that it gave a delivery up."""

    def __init__(self) -> None:
        super().__init__(logging.ERROR)
        self.seen = asyncio.Event()

    def emit(self, record: logging.LogRecord) -> None:
        if "gave up after retrying" in record.getMessage():
            self.seen.set()


class Stalled(Recorder):
    """A surface whose receiver took the message, then never answered (a tarpit)."""

    def __init__(self, name: str = "stalled") -> None:
        super().__init__(name)
        self.tries = 0
        self.retry = Retry(first=0.01, cap=0.02, give_up=0.5)

    async def send(self, notice: Notice) -> Mapping[str, Any] | None:
        self.tries += 1
        await asyncio.Event().wait()
        return None


async def test_a_send_that_never_ends_is_a_failed_attempt_and_given_up_on() -> None:
    """It used to come back each time its lease lapsed, uncounted, for ever: each time a
    mail server that queued it and then stalled sent the person another copy."""
    handler = HumanInputHandler()
    stalled = Stalled()
    gave_up = GaveUp()
    logger = logging.getLogger("roomkit.notify")
    logger.addHandler(gave_up)
    try:
        async with Notifier(handler, [stalled], lease=0.5, poll=0.05) as notifier:
            await handler.create("ask", {"question": "Anyone?"}, actor_id="alice")
            async with asyncio.timeout(30):
                await gave_up.seen.wait()
    finally:
        logger.removeHandler(gave_up)
    figures = notifier.statistics()
    assert figures.failed["stalled"] == stalled.tries
    assert figures.dropped["stalled"] == 1


async def test_an_actor_no_link_can_name_is_told_without_a_link() -> None:
    """An actor the handler took but no answer link names (a space at its end): the
    notice goes out, without a link, instead of failing for ever."""
    handler = HumanInputHandler()
    recorder = Recorder()
    secret = "a-desk-secret-of-16-bytes-or-more"
    async with Notifier(
        handler, [recorder], desk_url="https://desk.example.com", link_secret=secret
    ) as notifier:
        await handler.create("ask", {"question": "Lunch?"}, actor_id="Alice Smith ")
        await notifier.wait_idle()
    assert recorder.seen() == [("question_pending", "Alice Smith ")]
    assert recorder.notices[0].answer_url is None
