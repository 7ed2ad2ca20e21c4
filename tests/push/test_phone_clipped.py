"""A phone notice too short for its request: the person cannot approve or answer in one tap
what the notice did not show whole; it says so, and opens the request on the desk."""

from __future__ import annotations

from pathlib import Path

from tests.push.ntfy_server import NtfyServer
from tests.push.phones import DESK, phone_surfaces, settled_by_tap
from tests.push.push_service import PushService

from roomkit import RoomKit
from roomkit.desk.app import create_desk_app
from roomkit.models.pending_input import PendingInputStatus
from roomkit.notify import Notifier
from roomkit.tools.human_input import HumanInputHandler

SECRET = "the tests' desk secret, 0123456789abcdef"
TOO_LONG = "Too long to decide here: open it on the desk"
# What the person would approve, past where a notice stops showing it.
HIDDEN = {"note": "Routine refund, as agreed on the phone. " * 12, "amount": "40,000 EUR"}


async def test_a_clipped_approval_offers_reject_but_no_approve(tmp_path: Path) -> None:
    """Its arguments cut short, an approval reaches Web Push and ntfy with Reject and Open
    only, saying it is too long to decide there; Reject still answers through the desk."""
    handler = HumanInputHandler()
    app = create_desk_app(RoomKit(), handler=handler, secret=SECRET)
    async with PushService() as service, NtfyServer() as ntfy:
        notifier = Notifier(
            handler, phone_surfaces(tmp_path, service, ntfy), desk_url=DESK, link_secret=SECRET
        )
        async with notifier:
            await handler.create_approval("refund", HIDDEN, approvers=["alice"])
            [pushed] = await service.wait_for(1)
            [published] = await ntfy.wait_for(1)
            note = pushed.message["notification"]
            assert published.body is not None
            assert [a["action"] for a in note["actions"]] == ["reject", "open"]
            assert all(a["navigate"] == note["navigate"] for a in note["actions"])
            assert list(note["data"]["answers"]) == ["reject"]
            assert [a["label"] for a in published.body["actions"]] == ["Reject", "Open"]
            for body in (note["body"], published.body["message"]):
                assert "40,000" not in body
                assert body.endswith(f"…\n\n{TOO_LONG}")
            status = await settled_by_tap(app, handler, note, "reject")
            assert status == PendingInputStatus.REJECTED
            await notifier.wait_idle()


async def test_a_clipped_yes_or_no_question_offers_no_answer(tmp_path: Path) -> None:
    """A yes-or-no question cut short gets neither Yes nor No (a No answers it too): only
    the link to the desk."""
    handler = HumanInputHandler()
    async with PushService() as service, NtfyServer() as ntfy:
        notifier = Notifier(
            handler, phone_surfaces(tmp_path, service, ntfy), desk_url=DESK, link_secret=SECRET
        )
        async with notifier:
            action = "Deploy to production? " + "Before that, drain the old pods. " * 20
            await handler.create(
                "AskUserConfirmation", {"action": action + "Then drop the DB."}, actor_id="alice"
            )
            [pushed] = await service.wait_for(1)
            [published] = await ntfy.wait_for(1)
            await notifier.wait_idle()
    note = pushed.message["notification"]
    assert published.body is not None
    assert [a["action"] for a in note["actions"]] == ["open"]
    assert "data" not in note
    assert [a["action"] for a in published.body["actions"]] == ["view"]
    for body in (note["body"], published.body["message"]):
        assert "drop the DB" not in body
        assert body.endswith(TOO_LONG)


async def test_a_push_cut_to_fit_offers_no_approve(tmp_path: Path) -> None:
    """An approval ntfy shows whole, in letters too wide to fit in a push whole: the push is
    cut to fit, so it loses Approve, and ntfy keeps it."""
    handler = HumanInputHandler()
    async with PushService() as service, NtfyServer() as ntfy:
        notifier = Notifier(
            handler, phone_surfaces(tmp_path, service, ntfy), desk_url=DESK, link_secret=SECRET
        )
        async with notifier:
            await handler.create_approval(
                "\U0001f4b8" * 100, {"note": "\U0001f4b8" * 250}, approvers=["alice"]
            )
            [pushed] = await service.wait_for(1)
            [published] = await ntfy.wait_for(1)
            await notifier.wait_idle()
    note = pushed.message["notification"]
    assert published.body is not None
    assert [a["action"] for a in note["actions"]] == ["reject", "open"]
    assert note["body"].endswith(f"…\n\n{TOO_LONG}")
    assert [a["label"] for a in published.body["actions"]] == ["Approve", "Reject", "Open"]
    assert TOO_LONG not in published.body["message"]


async def test_an_approval_shown_whole_keeps_approve(tmp_path: Path) -> None:
    """Arguments that fill the notice to its last character are shown whole: Approve stays,
    and nothing says the request is too long."""
    handler = HumanInputHandler()
    async with PushService() as service, NtfyServer() as ntfy:
        notifier = Notifier(
            handler, phone_surfaces(tmp_path, service, ntfy), desk_url=DESK, link_secret=SECRET
        )
        async with notifier:
            # "refund\nNote: " and the note: 400 characters, the most a notice shows.
            await handler.create_approval("refund", {"note": "x" * 387}, approvers=["alice"])
            [pushed] = await service.wait_for(1)
            [published] = await ntfy.wait_for(1)
            await notifier.wait_idle()
    note = pushed.message["notification"]
    assert published.body is not None
    assert note["body"] == published.body["message"] == "refund\nNote: " + "x" * 387
    assert [a["action"] for a in note["actions"]] == ["approve", "reject"]
    assert [a["label"] for a in published.body["actions"]] == ["Approve", "Reject", "Open"]
