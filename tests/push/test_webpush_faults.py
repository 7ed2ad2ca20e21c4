"""Web Push to a device that fails in a way no push service reports: a key off the curve, an
endpoint that cannot be signed for, an answer whose body is no text. That device fails
alone; the person's other devices get the question. And what a push service that never
answers, or a key file that cannot be read, is reported as."""

from __future__ import annotations

import asyncio
import base64
import json
import os
from collections.abc import Callable
from pathlib import Path

import pytest
from tests.push.push_service import Browser, PushService
from tests.servers.loopback import read_request

from roomkit.models.pending_input import PendingInput
from roomkit.notify import DeliveryError, Notice
from roomkit.notify.push_subscriptions import (
    SUBSCRIPTIONS_FILE,
    VAPID_FILE,
    PushSubscriptions,
    Subscription,
    load_or_create_vapid_key,
    subscription_of,
)
from roomkit.notify.webpush import WebPush
from roomkit.tools.human_input import HumanInputHandler

SUBJECT = "mailto:ops@example.com"
LOOPBACK = ["127.0.0.1"]


def b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


OFF_THE_CURVE = b64(b"\x04" + b"\x00" * 64)
"""65 bytes starting 0x04, the shape of a P-256 point, but no point on the curve."""


async def notice() -> Notice:
    request: PendingInput = await HumanInputHandler().create(
        "ask", {"question": "Ship it?"}, actor_id="alice"
    )
    return Notice(
        type="question_pending",
        delivery_id="d1",
        request=request,
        recipient="alice",
        answer_url="https://desk.example.com/#token=abc",
        desk_url="https://desk.example.com",
    )


def subscribe(data_dir: Path, browser: Browser) -> None:
    PushSubscriptions(data_dir).add("alice", subscription_of(browser.subscription()))


async def test_a_key_off_the_curve_is_dropped_and_the_other_devices_get_the_question(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    async with PushService() as service:
        broken = Subscription(service.origin + "/push/broken", OFF_THE_CURVE, b64(os.urandom(16)))
        PushSubscriptions(tmp_path).add("alice", broken)
        phone = service.browser("phone")
        subscribe(tmp_path, phone)
        push = WebPush(SUBJECT, data_dir=tmp_path, push_hosts=[service.origin])
        receipt = await push.send(await notice())
        await push.aclose()
    assert receipt == {"endpoints": [phone.endpoint]}
    assert [r.endpoint for r in service.received] == [phone.endpoint]
    assert [s.endpoint for s in PushSubscriptions(tmp_path).of("alice")] == [phone.endpoint]
    assert "cannot be encrypted to" in caplog.text
    assert "its subscription is dropped" in caplog.text


async def test_a_device_alone_with_a_key_off_the_curve_is_refused_without_a_retry(
    tmp_path: Path,
) -> None:
    broken = Subscription("https://127.0.0.1/push/broken", OFF_THE_CURVE, b64(os.urandom(16)))
    PushSubscriptions(tmp_path).add("alice", broken)
    push = WebPush(SUBJECT, data_dir=tmp_path, push_hosts=LOOPBACK)
    with pytest.raises(DeliveryError, match="cannot be encrypted to") as raised:
        await push.send(await notice())
    await push.aclose()
    assert raised.value.retry is False
    assert PushSubscriptions(tmp_path).of("alice") == []


async def test_an_endpoint_no_signature_can_be_made_for_fails_alone(tmp_path: Path) -> None:
    """A user name in the endpoint (edited into the file: the desk refuses it), of which
    no VAPID audience can be made: it is skipped, and the other device pushed to."""
    async with PushService() as service:
        phone = service.browser("phone")
        subscribe(tmp_path, phone)
        path = tmp_path / SUBSCRIPTIONS_FILE
        document = json.loads(path.read_text())
        odd = {**Browser("https://[::1]@127.0.0.1/push/odd").subscription(), "added": 0.0}
        document["people"]["alice"].insert(0, odd)
        path.write_text(json.dumps(document))
        push = WebPush(SUBJECT, data_dir=tmp_path, push_hosts=[service.origin])
        receipt = await push.send(await notice())
        await push.aclose()
    assert receipt == {"endpoints": [phone.endpoint]}
    assert [r.endpoint for r in service.received] == [phone.endpoint]


class Garbled(PushService):
    """Takes each push, and answers with a body that is no UTF-8."""

    async def answer(
        self, method: str, path: str, headers: dict[str, str], body: bytes
    ) -> tuple[int, bytes]:
        status, _ = await super().answer(method, path, headers, body)
        return status, b"\xff\xfe\xfd\xfc"


async def test_a_push_taken_with_a_body_that_is_no_text_counts_as_taken(tmp_path: Path) -> None:
    async with Garbled() as service:
        phone = service.browser("phone")
        subscribe(tmp_path, phone)
        push = WebPush(SUBJECT, data_dir=tmp_path, push_hosts=[service.origin])
        receipt = await push.send(await notice())
        await push.aclose()
    assert receipt == {"endpoints": [phone.endpoint]}
    assert len(service.received) == 1


class Overflowing(PushService):
    """Answers 503 with a ``Retry-After`` (or a ``Date`` beside one) whose year no date
    holds."""

    def __init__(self, headers: str) -> None:
        super().__init__()
        self.headers = headers

    async def serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                await self.answer(*await read_request(reader))
                head = f"HTTP/1.1 503 X\r\n{self.headers}content-length: 0\r\n\r\n"
                writer.write(head.encode())
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass


FAR = "Sat, 01 Jan 99999999999999999999 00:00:00 GMT"


@pytest.mark.parametrize(
    "headers",
    [f"retry-after: {FAR}\r\n", f"retry-after: Sat, 01 Jan 2000 00:00:00 GMT\r\ndate: {FAR}\r\n"],
    ids=["retry-after", "date"],
)
async def test_a_503_with_a_date_no_calendar_holds_is_retried(tmp_path: Path, headers: str) -> None:
    """A push service's unreadable Retry-After asks no wait: its 503 is retried as any
    other, never taken as the device's own fault."""
    async with Overflowing(headers) as service:
        subscribe(tmp_path, service.browser("phone"))
        push = WebPush(SUBJECT, data_dir=tmp_path, push_hosts=[service.origin])
        with pytest.raises(DeliveryError) as raised:
            await push.send(await notice())
        await push.aclose()
    assert raised.value.retry is True
    assert str(raised.value) == f"the push service {service.origin} answered 503"
    assert len(PushSubscriptions(tmp_path).of("alice")) == 1


class Silent(PushService):
    """Reads each push and answers nothing until released."""

    def __init__(self) -> None:
        super().__init__()
        self.release = asyncio.Event()

    async def answer(
        self, method: str, path: str, headers: dict[str, str], body: bytes
    ) -> tuple[int, bytes]:
        await self.release.wait()
        return 201, b""


async def test_a_push_service_that_never_answers_times_out_saying_after_how_long(
    tmp_path: Path,
) -> None:
    async with Silent() as service:
        subscribe(tmp_path, service.browser("phone"))
        push = WebPush(SUBJECT, data_dir=tmp_path, push_hosts=[service.origin], timeout=0.2)
        with pytest.raises(DeliveryError) as raised:
            await push.send(await notice())
        service.release.set()
        await push.aclose()
    assert raised.value.retry is True
    assert str(raised.value) == f"the push service {service.origin} timed out after 0.2 s"


@pytest.mark.parametrize(
    "load", [lambda folder: WebPush(SUBJECT, data_dir=folder), load_or_create_vapid_key]
)
def test_a_key_file_that_cannot_be_read_is_named_with_what_to_do(
    tmp_path: Path, load: Callable[[Path], object]
) -> None:
    """A folder where the key's file should be (as a file of another user is, unreadable)."""
    (tmp_path / VAPID_FILE).mkdir()
    with pytest.raises(ValueError, match="cannot be read or made") as raised:
        load(tmp_path)
    assert str(tmp_path / VAPID_FILE) in str(raised.value)
    assert "remove what is there to make a new key" in str(raised.value)
