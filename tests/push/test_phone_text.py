"""What a phone shows of text a model wrote: a lock-screen notice is read, and answered, in
one glance, so nothing in the text may change how the rest of it reads, and none of it may
keep the notice from fitting in a push."""

from __future__ import annotations

from pathlib import Path

from tests.push.ntfy_server import NtfyServer
from tests.push.phones import phone_surfaces
from tests.push.push_service import PushService

from roomkit.notify import Notifier
from roomkit.notify.push_subscriptions import PushSubscriptions, subscription_of
from roomkit.notify.webpush import WebPush
from roomkit.tools.human_input import HumanInputHandler

SECRET = "the tests' desk secret, 0123456789abcdef"
DESK = "https://desk.example.com"
SUBJECT = "mailto:ops@example.com"

# "Amount: <RLO>0001" shows as "Amount: 1000" on a screen that honours the override.
REVERSED = {"iban": "DE89 3704 0044", "amount": "\u202e0001", "memo": "ok\u2066\u2067\u2069"}
CONTROLS = "".join(
    chr(c) for c in [*range(0x00, 0x09), *range(0x0B, 0x20), 0x7F, *range(0x80, 0xA0)]
)
STEERING = (*"\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\u200e\u200f\u061c", *CONTROLS)


def steered(text: str) -> list[str]:
    return [f"U+{ord(ch):04X}" for ch in text if ch in STEERING]


async def test_text_that_steers_how_a_notice_reads_is_shown_as_replaced(tmp_path: Path) -> None:
    """Bidi overrides, isolates and marks, and control characters in a request reach neither
    the push nor the ntfy notice: each shows as a replacement character."""
    handler = HumanInputHandler()
    async with PushService() as service, NtfyServer() as ntfy:
        surfaces = phone_surfaces(tmp_path, service, ntfy)
        notifier = Notifier(handler, surfaces, desk_url=DESK, link_secret=SECRET)
        async with notifier:
            await handler.create_approval(
                "pay\u202e", {**REVERSED, "note": f"a{CONTROLS}b\nnext"}, approvers=["alice"]
            )
            [pushed] = await service.wait_for(1)
            [published] = await ntfy.wait_for(1)
            await notifier.wait_idle()
    note = pushed.message["notification"]
    assert published.body is not None
    shown = [note["title"], note["body"], published.body["title"], published.body["message"]]
    assert [steered(text) for text in shown] == [[], [], [], []]
    assert "Amount: \ufffd0001" in note["body"]
    assert "Amount: \ufffd0001" in published.body["message"]
    assert "\n  next" in note["body"]  # a line break is a line break, under its field


async def test_a_long_title_in_wide_letters_still_fits_in_one_push(tmp_path: Path) -> None:
    """A tool named in letters of four bytes each, on an approval whose buttons repeat its
    title: the push is shortened until it fits, not refused (cut short, it takes no Approve)."""
    handler = HumanInputHandler()
    async with PushService() as service:
        phone = service.browser("phone")
        PushSubscriptions(tmp_path).add("alice", subscription_of(phone.subscription()))
        push = WebPush(SUBJECT, data_dir=tmp_path, push_hosts=[service.origin])
        notifier = Notifier(handler, [push], desk_url=DESK, link_secret=SECRET)
        async with notifier:
            await handler.create_approval(
                "\U0001f4b8" * 200, {"note": "\U0001f4b8" * 2000}, approvers=["alice"]
            )
            await notifier.wait_idle()
    [pushed] = service.received
    note = pushed.message["notification"]
    assert note["title"].startswith("Approval needed: \U0001f4b8")
    assert [a["action"] for a in note["actions"]] == ["reject", "open"]
    assert notifier.statistics().delivered["webpush"] == 1
