"""ntfy through the notifier, on every store, against a loopback ntfy server: the question's
``http`` buttons answer through the signed link, and its sequence id updates it on settle."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable

import httpx
import pytest
from tests.push.ntfy_server import NtfyServer

from roomkit import RoomKit
from roomkit.auth.tokens import token_claims
from roomkit.desk.app import create_desk_app
from roomkit.notify import DeliveryError, Notice, Notifier, Ntfy
from roomkit.notify.ntfy import sequence_id
from roomkit.tools.human_input import HumanInputHandler

SECRET = "the tests' desk secret, 0123456789abcdef"
DESK = "https://desk.example.com"
TOPIC = "approvals-{actor}-k3v9q"


def notifier_of(handler: HumanInputHandler, ntfy: Ntfy) -> Notifier:
    return Notifier(handler, [ntfy], desk_url=DESK, link_secret=SECRET)


async def test_an_approval_arrives_with_buttons_that_answer_through_the_link(
    make_handler: Callable[[], HumanInputHandler],
) -> None:
    """The phone taps Approve: it sends the button's request, which the desk takes with the
    link's token; the notification is then updated in place (same sequence id) and cleared."""
    handler = make_handler()
    app = create_desk_app(RoomKit(), handler=handler, secret=SECRET)
    async with NtfyServer() as server:
        ntfy = Ntfy(server.url, TOPIC, token="tk_abc", clear=True)
        notifier = notifier_of(handler, ntfy)
        async with notifier:
            request = await handler.create_approval(
                "refund", {"order": "A-17", "amount": 40}, approvers=["alice"]
            )
            [published] = await server.wait_for(1)
            assert published.method == "POST"
            assert published.path == "/"
            assert published.headers["authorization"] == "Bearer tk_abc"
            message = published.body
            assert message is not None
            assert message["topic"] == "approvals-alice-k3v9q"
            assert message["sequence_id"] == sequence_id(request.pending_id)
            assert message["title"] == "Approval needed: refund"
            link = message["click"]
            token = link.removeprefix(f"{DESK}/#token=")
            assert token_claims(SECRET, token)["req"] == request.pending_id
            approve, reject, view = message["actions"]
            assert [a["action"] for a in message["actions"]] == ["http", "http", "view"]
            assert [a["label"] for a in message["actions"]] == ["Approve", "Reject", "Open"]
            assert view["url"] == link
            for button in (approve, reject):
                assert button["method"] == "POST"
                assert button["headers"]["Authorization"] == f"Bearer {token}"
                assert button["clear"] is True
            assert approve["url"] == f"{DESK}/api/requests/{request.pending_id}/answer"
            assert reject["url"] == f"{DESK}/api/requests/{request.pending_id}/reject"
            assert json.loads(approve["body"]) == {
                "decision": "approve",
                "digest": request.arguments_digest,
            }
            # The phone sends the button's request, as ntfy's app does.
            transport = httpx.ASGITransport(app=app)
            async with httpx.AsyncClient(transport=transport, base_url=DESK) as phone:
                tapped = await phone.request(
                    approve["method"],
                    approve["url"].removeprefix(DESK),
                    content=approve["body"],
                    headers=approve["headers"],
                )
                replayed = [
                    await phone.request(
                        button["method"],
                        button["url"].removeprefix(DESK),
                        content=button["body"],
                        headers=button["headers"],
                    )
                    for button in (approve, reject)
                ]
            assert tapped.status_code == 200
            # The link answers once: the same tap again, or the other button, is refused.
            assert [reply.status_code for reply in replayed] == [401, 401]
            requests = await server.wait_for(3)
            await notifier.wait_idle()
    update, clear = requests[1], requests[2]
    assert update.body is not None
    assert update.body["sequence_id"] == message["sequence_id"]
    assert update.body["title"] == "Approved by alice through an answer link"
    assert "actions" not in update.body
    assert update.body["click"] == DESK
    sid = message["sequence_id"]
    assert (clear.method, clear.path) == ("PUT", f"/approvals-alice-k3v9q/{sid}/clear")
    key = ("approvals-alice-k3v9q", sid)
    assert server.shown[key]["title"] == "Approved by alice through an answer link"
    assert key in server.cleared
    assert len(server.shown) == 1  # one notification, updated in place


async def test_a_question_settled_elsewhere_updates_the_notification_in_place(
    make_handler: Callable[[], HumanInputHandler],
) -> None:
    """Answered in Slack: the same sequence id now reads who answered where; without
    ``clear`` nothing is cleared."""
    handler = make_handler()
    async with NtfyServer() as server:
        notifier = notifier_of(handler, Ntfy(server.url, {"alice": "alice-phone-x1"}))
        async with notifier:
            request = await handler.create("ask", {"question": "Ship it?"}, actor_id="alice")
            [question] = await server.wait_for(1)
            assert question.body is not None
            assert [a["action"] for a in question.body["actions"]] == ["view"]
            assert await handler.aresolve(request.pending_id, "yes", by="bob", surface="slack")
            [_, update] = await server.wait_for(2)
            await notifier.wait_idle()
    assert update.body is not None
    assert update.body["sequence_id"] == question.body["sequence_id"]
    assert update.body["title"] == "Answered by bob in Slack"
    assert update.body["message"] == "Ship it?"
    assert "authorization" not in update.headers
    assert server.cleared == set()
    assert len(server.requests) == 2


async def test_a_yes_or_no_question_gets_yes_and_no_buttons() -> None:
    handler = HumanInputHandler()
    async with NtfyServer() as server:
        notifier = notifier_of(handler, Ntfy(server.url, TOPIC))
        async with notifier:
            request = await handler.create(
                "AskUserConfirmation", {"action": "Deploy to production?"}, actor_id="alice"
            )
            [published] = await server.wait_for(1)
            await notifier.wait_idle()
    assert published.body is not None
    yes, no, _ = published.body["actions"]
    assert (yes["label"], json.loads(yes["body"])) == ("Yes", {"confirmed": True})
    assert (no["label"], json.loads(no["body"])) == ("No", {"confirmed": False})
    assert yes["url"] == no["url"] == f"{DESK}/api/requests/{request.pending_id}/answer"


async def test_an_older_server_that_cannot_clear_keeps_the_update() -> None:
    handler = HumanInputHandler()
    async with NtfyServer(clears=False) as server:
        notifier = notifier_of(handler, Ntfy(server.url, TOPIC, clear=True))
        async with notifier:
            request = await handler.create("ask", {"question": "Ship it?"}, actor_id="alice")
            await server.wait_for(1)
            await handler.aresolve(request.pending_id, "yes", by="alice")
            await server.wait_for(3)
            await notifier.wait_idle()
    assert notifier.statistics().delivered["ntfy"] == 2
    assert notifier.statistics().failed["ntfy"] == 0


async def test_people_without_a_topic_ntfy_takes_are_not_reached() -> None:
    ntfy = Ntfy("https://ntfy.example.com", lambda actor: None if actor == "bob" else actor)
    assert ntfy.reaches("alice", None)
    assert not ntfy.reaches("bob", None)
    assert not ntfy.reaches("carol.smith", None)  # a dot is no topic character
    assert not ntfy.reaches(None, None)
    await ntfy.aclose()


@pytest.mark.parametrize(("status", "retry"), [(503, True), (429, True), (401, False)])
async def test_a_failing_server_is_retried_and_a_refusal_is_not(status: int, retry: bool) -> None:
    request = await HumanInputHandler().create("ask", {"question": "?"}, actor_id="alice")
    notice = Notice("question_pending", "d1", request, recipient="alice", desk_url=DESK)
    async with NtfyServer() as server:
        server.status["POST"] = status
        ntfy = Ntfy(server.url, TOPIC)
        with pytest.raises(DeliveryError) as raised:
            await ntfy.send(notice)
        await ntfy.aclose()
    assert raised.value.retry is retry
    assert "approvals-alice" not in str(raised.value)  # a topic is a password
    assert "alice's topic" in str(raised.value)


class Silent(NtfyServer):
    """Reads each publish and answers nothing until released."""

    def __init__(self) -> None:
        super().__init__()
        self.release = asyncio.Event()

    async def answer(
        self, method: str, path: str, headers: dict[str, str], body: bytes
    ) -> tuple[int, bytes]:
        await self.release.wait()
        return await super().answer(method, path, headers, body)


async def test_a_server_that_never_answers_times_out_saying_after_how_long() -> None:
    """A server that took the request and said nothing was reached: the error says it did
    not answer in time, not that it cannot be reached."""
    request = await HumanInputHandler().create("ask", {"question": "?"}, actor_id="alice")
    notice = Notice("question_pending", "d1", request, recipient="alice", desk_url=DESK)
    async with Silent() as server:
        ntfy = Ntfy(server.url, TOPIC, timeout=0.2)
        with pytest.raises(DeliveryError) as raised:
            await ntfy.send(notice)
        server.release.set()
        await ntfy.aclose()
    assert raised.value.retry is True
    assert str(raised.value) == (
        f"ntfy {server.url} did not answer within 0.2 s publishing to alice's topic"
    )


def test_a_request_id_ntfy_would_refuse_gets_a_digest_as_sequence_id() -> None:
    assert sequence_id("pi_0123abcd") == "pi_0123abcd"
    odd = sequence_id("room/1:call.7")
    assert odd.startswith("rk-")
    assert len(odd) <= 64
    assert odd == sequence_id("room/1:call.7")


@pytest.mark.parametrize(
    ("server", "topic_for", "error", "match"),
    [
        ("ntfy.sh", TOPIC, ValueError, "http"),
        ("https://ntfy.sh", "approvals", ValueError, "{actor}"),
        ("https://ntfy.sh", 42, TypeError, "topic_for"),
        ("https://alice:hunter2@ntfy.example.com", TOPIC, ValueError, "token="),
        ("https:///topic", TOPIC, ValueError, "http"),
        ("https://ntfy.example.com/?auth=tk_abc", TOPIC, ValueError, "without a query"),
        ("https://ntfy.example.com#here", TOPIC, ValueError, "without a query"),
        ("https://ntfy.sh", "approvals/{actor}-k3v9q", ValueError, "holds '/'"),
        ("https://ntfy.sh", "approvals {actor}", ValueError, "holds ' '"),
        ("https://ntfy.sh", "k3v9q" * 13 + "{actor}", ValueError, "no room for an actor id"),
    ],
)
def test_a_bad_server_or_topic_rule_says_what_to_give(
    server: str, topic_for: object, error: type[Exception], match: str
) -> None:
    with pytest.raises(error, match=match):
        Ntfy(server, topic_for)  # type: ignore[arg-type]


async def test_a_huge_question_is_published_clipped() -> None:
    handler = HumanInputHandler()
    question = "Ship it? " + "x" * 50_000
    async with NtfyServer() as server:
        notifier = notifier_of(handler, Ntfy(server.url, TOPIC))
        async with notifier:
            await handler.create("ask", {"question": question}, actor_id="alice")
            [published] = await server.wait_for(1)
            await notifier.wait_idle()
    assert published.body is not None
    shown, note = published.body["message"].split("\n\n")
    assert shown.startswith("Ship it? xxx")
    assert len(shown) <= 400
    assert note == "Too long to decide here: open it on the desk"
    assert notifier.statistics().delivered["ntfy"] == 1


async def test_a_token_read_with_its_file_s_newline_still_publishes() -> None:
    """A token kept in a file (a mounted secret) ends in a newline: it is sent without it,
    and the request stays whole."""
    handler = HumanInputHandler()
    async with NtfyServer() as server:
        notifier = notifier_of(handler, Ntfy(server.url, TOPIC, token="tk_abc\n"))
        async with notifier:
            await handler.create("ask", {"question": "Ship it?"}, actor_id="alice")
            await notifier.wait_idle()
    [published] = server.requests
    assert published.headers["authorization"] == "Bearer tk_abc"
    assert published.body is not None
    assert published.body["message"] == "Ship it?"
    assert notifier.statistics().delivered["ntfy"] == 1


@pytest.mark.parametrize("token", ["tk_abc\r\nx-priority: 5", "tk_a bc", "tk_\u00e9t\u00e9", ""])
def test_a_token_that_is_no_header_value_is_refused_saying_so(token: str) -> None:
    """A token that would break the request's headers (a line break, a space, a letter
    outside ASCII) is refused when the surface is made, not sent."""
    with pytest.raises(ValueError, match="access token"):
        Ntfy("https://ntfy.example.com", TOPIC, token=token)


@pytest.mark.parametrize("topic", ["app", "v1", "docs"])
async def test_a_topic_ntfy_keeps_for_itself_is_not_published_to_saying_so(
    topic: str, caplog: pytest.LogCaptureFixture
) -> None:
    """ntfy refuses to publish to the topics of its own pages and API (400): such a topic
    reaches no one, and the log says it is a reserved one to replace, not a server to
    check."""
    handler = HumanInputHandler()
    async with NtfyServer() as server:
        notifier = notifier_of(handler, Ntfy(server.url, {"alice": topic}))
        async with notifier:
            await handler.create("ask", {"question": "Ship it?"}, actor_id="alice")
            await notifier.wait_idle()
    assert server.requests == []
    assert notifier.statistics().dropped["ntfy"] == 0
    assert "one ntfy keeps for its own pages and API" in caplog.text
    assert "URL and version" not in caplog.text


@pytest.mark.parametrize("status", [301, 307, 308])
async def test_a_redirected_clear_says_what_redirects_it(status: int) -> None:
    """The publish goes through, the clear is redirected (a proxy in front of ntfy): the
    error says so, not to check the server's URL and version, which are right. A redirect
    is not followed nor retried, for a clear as for a publish."""
    request = await HumanInputHandler().create("ask", {"question": "?"}, actor_id="alice")
    notice = Notice("question_settled", "d1", request, recipient="alice", outcome="resolved")
    async with NtfyServer() as server:
        server.status["PUT"] = status
        ntfy = Ntfy(server.url, TOPIC, clear=True)
        with pytest.raises(DeliveryError, match="redirects clear requests") as raised:
            await ntfy.send(notice)
        await ntfy.aclose()
    assert [r.method for r in server.requests] == ["POST", "PUT"]
    assert not raised.value.retry
    assert "URL and version" not in str(raised.value)
    assert "approvals-alice" not in str(raised.value)  # a topic is a password


async def test_a_redirected_publish_names_the_url_to_give() -> None:
    request = await HumanInputHandler().create("ask", {"question": "?"}, actor_id="alice")
    notice = Notice("question_pending", "d1", request, recipient="alice", desk_url=DESK)
    async with NtfyServer() as server:
        server.status["POST"] = 301
        ntfy = Ntfy(server.url, TOPIC)
        with pytest.raises(DeliveryError, match="redirects to") as raised:
            await ntfy.send(notice)
        await ntfy.aclose()
    assert not raised.value.retry
    assert "URL and version" not in str(raised.value)


async def test_a_refused_message_points_at_the_topic_not_the_url() -> None:
    """A 400 is ntfy refusing the message (a topic its disallowed-topics setting names, say)."""
    request = await HumanInputHandler().create("ask", {"question": "?"}, actor_id="alice")
    notice = Notice("question_pending", "d1", request, recipient="alice", desk_url=DESK)
    async with NtfyServer() as server:
        server.status["POST"] = 400
        ntfy = Ntfy(server.url, TOPIC)
        with pytest.raises(DeliveryError, match="disallowed-topics") as raised:
            await ntfy.send(notice)
        await ntfy.aclose()
    assert not raised.value.retry
    assert "URL and version" not in str(raised.value)
