"""The buttons a phone notice carries: each one sends an answer the request takes, so that a
tap on the lock screen never meets a refusal the person could not have seen coming."""

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


async def test_an_approval_that_takes_no_approve_gets_no_approve_button(tmp_path: Path) -> None:
    """An approval limited to edit and reject (a framework's allowed decisions) is pushed and
    published with a Reject button only; Reject answers through the desk."""
    handler = HumanInputHandler()
    app = create_desk_app(RoomKit(), handler=handler, secret=SECRET)
    async with PushService() as service, NtfyServer() as ntfy:
        surfaces = phone_surfaces(tmp_path, service, ntfy)
        notifier = Notifier(handler, surfaces, desk_url=DESK, link_secret=SECRET)
        async with notifier:
            await handler.create_approval(
                "refund", {"order": "A-17"}, approvers=["alice"], decisions=["edit", "reject"]
            )
            [pushed] = await service.wait_for(1)
            [published] = await ntfy.wait_for(1)
            note = pushed.message["notification"]
            assert published.body is not None
            assert [a["action"] for a in note["actions"]] == ["reject"]
            assert list(note["data"]["answers"]) == ["reject"]
            assert [a["label"] for a in published.body["actions"]] == ["Reject", "Open"]
            status = await settled_by_tap(app, handler, note, "reject")
            assert status == PendingInputStatus.REJECTED
            await notifier.wait_idle()
