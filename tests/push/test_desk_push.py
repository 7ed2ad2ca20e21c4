"""The desk's Web Push routes: its public key, and the signed-in person's devices."""

from __future__ import annotations

import asyncio
import stat
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
from tests.push.push_service import Browser

from roomkit import RoomKit
from roomkit.auth import issue_answer_link, issue_token
from roomkit.desk.app import create_desk_app
from roomkit.notify import Notifier, WebPush
from roomkit.notify.push_subscriptions import (
    SUBSCRIPTIONS_FILE,
    VAPID_FILE,
    PushSubscriptions,
    load_or_create_vapid_key,
    subscription_of,
    vapid_public_key,
)
from roomkit.tools.human_input import HumanInputHandler

SECRET = "the tests' desk secret, 0123456789abcdef"


def bearer(actor: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {issue_token(SECRET, actor)}"}


@pytest.fixture
async def desk(tmp_path: Path) -> AsyncIterator[httpx.AsyncClient]:
    app = create_desk_app(
        RoomKit(),
        handler=HumanInputHandler(),
        secret=SECRET,
        data_dir=tmp_path,
        push_hosts=["push.example.net"],
    )
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://desk.test") as client:
        yield client


async def test_the_key_is_made_once_in_the_data_folder(
    desk: httpx.AsyncClient, tmp_path: Path
) -> None:
    first = await desk.get("/api/push/key", headers=bearer("alice"))
    again = await desk.get("/api/push/key", headers=bearer("bob"))
    assert first.status_code == again.status_code == 200
    key = first.json()["public_key"]
    assert again.json()["public_key"] == key
    assert key == vapid_public_key(load_or_create_vapid_key(tmp_path))
    assert stat.S_IMODE((tmp_path / VAPID_FILE).stat().st_mode) == 0o600
    assert (await desk.get("/api/push/key")).status_code == 401


async def test_a_person_subscribes_and_unsubscribes_a_device(
    desk: httpx.AsyncClient, tmp_path: Path
) -> None:
    phone, laptop = Browser("https://push.example.net/p/1"), Browser("https://push.example.net/p/2")
    for browser in (phone, laptop):
        reply = await desk.post(
            "/api/push/subscriptions", json=browser.subscription(), headers=bearer("alice")
        )
        assert reply.status_code == 200
    assert reply.json() == {"devices": 2}
    kept = PushSubscriptions(tmp_path).of("alice")
    assert [s.info() for s in kept] == [
        {"endpoint": b.endpoint, "keys": b.subscription()["keys"]} for b in (phone, laptop)
    ]
    # Bob cannot unsubscribe alice's phone; alice can.
    gone = {"endpoint": phone.endpoint}
    reply = await desk.request(
        "DELETE", "/api/push/subscriptions", json=gone, headers=bearer("bob")
    )
    assert reply.json() == {"devices": 0}
    assert len(PushSubscriptions(tmp_path).of("alice")) == 2
    reply = await desk.request(
        "DELETE", "/api/push/subscriptions", json=gone, headers=bearer("alice")
    )
    assert reply.json() == {"devices": 1}
    assert [s.endpoint for s in PushSubscriptions(tmp_path).of("alice")] == [laptop.endpoint]


async def test_a_device_subscribed_by_someone_else_moves_to_them(
    desk: httpx.AsyncClient, tmp_path: Path
) -> None:
    shared = Browser("https://push.example.net/p/shared")
    for actor in ("alice", "bob"):
        await desk.post(
            "/api/push/subscriptions", json=shared.subscription(), headers=bearer(actor)
        )
    subscriptions = PushSubscriptions(tmp_path)
    assert subscriptions.of("alice") == []
    assert [s.endpoint for s in subscriptions.of("bob")] == [shared.endpoint]


@pytest.mark.parametrize(
    ("change", "problem"),
    [
        ({"endpoint": "ftp://push.example.net/p/1"}, "https://"),
        ({"endpoint": "file:///etc/passwd"}, "https://"),
        ({"keys": {"p256dh": "AAAA", "auth": "AAAAAAAAAAAAAAAAAAAAAA"}}, "P-256"),
        ({"keys": {"p256dh": "BA" + "A" * 85, "auth": "AAAAAAAAAAAAAAAAAAAAAA"}}, "point on"),
        ({"keys": {"p256dh": None, "auth": "x"}}, "keys.p256dh"),
        ({"keys": None}, "keys"),
    ],
)
async def test_what_is_no_subscription_gets_a_422_naming_it(
    desk: httpx.AsyncClient, tmp_path: Path, change: dict[str, object], problem: str
) -> None:
    body = {**Browser("https://push.example.net/p/1").subscription(), **change}
    reply = await desk.post("/api/push/subscriptions", json=body, headers=bearer("alice"))
    assert reply.status_code == 422
    assert problem in reply.json()["detail"]
    assert PushSubscriptions(tmp_path).of("alice") == []


def _standard_alphabet() -> dict[str, object]:
    """A browser's subscription with its keys in base64's standard alphabet (``+``, ``/``)."""
    while True:
        subscription = Browser("https://push.example.net/p/1").subscription()
        keys: dict[str, str] = subscription["keys"]
        if any(ch in keys["p256dh"] for ch in "-_"):
            keys["p256dh"] = keys["p256dh"].translate(str.maketrans("-_", "+/"))
            return subscription


def _spaced() -> dict[str, object]:
    """A browser's subscription with a space every few characters of its key."""
    subscription = Browser("https://push.example.net/p/1").subscription()
    keys: dict[str, str] = subscription["keys"]
    key = keys["p256dh"]
    keys["p256dh"] = " ".join(key[i : i + 8] for i in range(0, len(key), 8))
    return subscription


@pytest.mark.parametrize("make", [_standard_alphabet, _spaced])
async def test_keys_that_are_not_base64url_get_a_422_naming_it(
    desk: httpx.AsyncClient, tmp_path: Path, make: Callable[[], dict[str, object]]
) -> None:
    """Keys the page never sends (base64's other alphabet, spaces within) are refused, not
    kept in another form than the browser's."""
    reply = await desk.post("/api/push/subscriptions", json=make(), headers=bearer("alice"))
    assert reply.status_code == 422
    assert "base64url" in reply.json()["detail"]
    assert PushSubscriptions(tmp_path).of("alice") == []


async def test_an_answer_link_cannot_subscribe(desk: httpx.AsyncClient) -> None:
    link = issue_answer_link(SECRET, "some-request", "alice", 600)
    reply = await desk.post(
        "/api/push/subscriptions",
        json=Browser("https://push.example.net/p/1").subscription(),
        headers={"Authorization": f"Bearer {link}"},
    )
    assert reply.status_code == 403
    assert "sign in" in reply.json()["detail"]


async def test_a_desk_without_a_data_folder_says_so_and_writes_nothing() -> None:
    app = create_desk_app(RoomKit(), handler=HumanInputHandler(), secret=SECRET)
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://desk.test") as desk:
        key = await desk.get("/api/push/key", headers=bearer("alice"))
        sub = await desk.post(
            "/api/push/subscriptions",
            json=Browser("https://push.example.net/p/1").subscription(),
            headers=bearer("alice"),
        )
    assert key.status_code == sub.status_code == 404
    assert "data_dir" in key.json()["detail"]


async def test_the_page_links_its_manifest_and_serves_its_worker(desk: httpx.AsyncClient) -> None:
    page = (await desk.get("/")).text
    assert '<link rel="manifest" href="manifest.webmanifest">' in page
    manifest = (await desk.get("/manifest.webmanifest")).json()
    assert manifest["display"] == "standalone"
    assert {icon["sizes"] for icon in manifest["icons"]} == {"192x192", "512x512"}
    for icon in manifest["icons"]:
        reply = await desk.get(f"/{icon['src']}")
        assert reply.headers["content-type"] == "image/png"
        assert reply.content.startswith(b"\x89PNG")
    worker = await desk.get("/sw.js")
    assert worker.headers["content-type"].startswith("text/javascript")
    assert "notificationclick" in worker.text


@pytest.mark.parametrize(
    "endpoint",
    [
        "https://metadata.internal/computeMetadata/v1",
        "https://10.0.0.5/push/1",
        "http://127.0.0.1:6379/",
        "https://push.example.net.attacker.example/p/1",
        "http://updates.push.services.mozilla.com/wpush/v2/abc",
        "https://[::1]/push/1",
        "https://localhost/push/1",
        "https://169.254.169.254/latest/meta-data",
        "https://127.0.0.1#@push.example.net/p/1",
        "https://0x7f000001/p/1",
    ],
)
async def test_an_endpoint_off_the_push_services_list_is_refused_naming_the_option(
    desk: httpx.AsyncClient, tmp_path: Path, endpoint: str
) -> None:
    reply = await desk.post(
        "/api/push/subscriptions", json=Browser(endpoint).subscription(), headers=bearer("alice")
    )
    assert reply.status_code == 400
    assert "push_hosts" in reply.json()["detail"]
    assert PushSubscriptions(tmp_path).of("alice") == []


@pytest.mark.parametrize(
    "endpoint",
    [
        "https://127.0.0.1\\@push.example.net/p/1",
        "https://push.example.net\\@127.0.0.1/p/1",
        "https://push.example.net@127.0.0.1/p/1",
        "https://push.example.net:443@10.0.0.5/p/1",
        "https://user:secret@push.example.net/p/1",
        "https://push.example.net/p\t/1",
        "https://push.example.net/p/1\n",
        "https://push.example.net:99999/p/1",
        " https://push.example.net/p/1",
    ],
)
async def test_an_endpoint_that_is_no_plain_url_is_refused(
    desk: httpx.AsyncClient, tmp_path: Path, endpoint: str
) -> None:
    """An endpoint that URL parsers read apart (a browser takes ``\\`` for ``/``, so
    ``127.0.0.1`` for the host) or that no push service gives is refused, not kept."""
    reply = await desk.post(
        "/api/push/subscriptions", json=Browser(endpoint).subscription(), headers=bearer("alice")
    )
    assert reply.status_code == 422
    assert "endpoint" in reply.json()["detail"]
    assert PushSubscriptions(tmp_path).of("alice") == []


async def test_by_default_the_browsers_push_services_are_taken_and_no_other(
    tmp_path: Path,
) -> None:
    app = create_desk_app(RoomKit(), handler=HumanInputHandler(), secret=SECRET, data_dir=tmp_path)
    transport = httpx.ASGITransport(app=app)
    taken = [
        "https://fcm.googleapis.com/fcm/send/abc",
        "https://updates.push.services.mozilla.com/wpush/v2/abc",
        "https://web.push.apple.com/QGx",
        "https://wns2-by3p.notify.windows.com/w/?token=abc",
    ]
    async with httpx.AsyncClient(transport=transport, base_url="http://desk.test") as client:
        for endpoint in [*taken, "http://127.0.0.1:8080/push/1", "http://fcm.googleapis.com/x"]:
            await client.post(
                "/api/push/subscriptions",
                json=Browser(endpoint).subscription(),
                headers=bearer("alice"),
            )
    assert [s.endpoint for s in PushSubscriptions(tmp_path).of("alice")] == taken


async def test_a_desk_running_the_notifier_takes_its_webpush_s_hosts(tmp_path: Path) -> None:
    handler = HumanInputHandler()
    push = WebPush("mailto:ops@example.com", data_dir=tmp_path, push_hosts=["push.example.org"])
    notifier = Notifier(handler, [push], desk_url="https://desk.example.com", link_secret=SECRET)
    app = create_desk_app(
        RoomKit(), handler=handler, secret=SECRET, data_dir=tmp_path, notifier=notifier
    )
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://desk.test") as client:
        for endpoint in ("https://push.example.org/p/1", "https://push.example.com/p/2"):
            await client.post(
                "/api/push/subscriptions",
                json=Browser(endpoint).subscription(),
                headers=bearer("alice"),
            )
    assert [s.endpoint for s in PushSubscriptions(tmp_path).of("alice")] == [
        "https://push.example.org/p/1"
    ]


@pytest.mark.parametrize(
    ("body", "status"),
    [
        ({"endpoint": "https://push.example.net/" + "p" * 5_000}, 422),
        ({"endpoint": "https://push.example.net/p/1", "padding": "x" * 200_000}, 413),
        ({"endpoint": "https://push.example.net/p/1", "keys": {"p256dh": "A" * 5_000}}, 422),
        ({"endpoint": ["https://push.example.net/p/1"]}, 422),
    ],
)
async def test_a_huge_or_misshapen_subscription_is_refused_and_nothing_kept(
    desk: httpx.AsyncClient, tmp_path: Path, body: dict[str, object], status: int
) -> None:
    reply = await desk.post("/api/push/subscriptions", json=body, headers=bearer("alice"))
    assert reply.status_code == status
    assert PushSubscriptions(tmp_path).of("alice") == []


async def test_a_subscriptions_file_of_another_shape_is_kept_aside_on_subscribing(
    desk: httpx.AsyncClient, tmp_path: Path
) -> None:
    (tmp_path / SUBSCRIPTIONS_FILE).write_text('{"people": [1]}')
    phone = Browser("https://push.example.net/p/1")
    reply = await desk.post(
        "/api/push/subscriptions", json=phone.subscription(), headers=bearer("alice")
    )
    assert reply.status_code == 200, reply.text
    assert reply.json() == {"devices": 1}
    assert len(kept_aside(tmp_path)) == 1


def kept_aside(folder: Path) -> list[Path]:
    return list(folder.glob(f"{SUBSCRIPTIONS_FILE}.unreadable-*"))


async def test_a_key_file_that_cannot_be_read_gets_a_404_pointing_to_the_log(
    desk: httpx.AsyncClient, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    await asyncio.to_thread((tmp_path / VAPID_FILE).mkdir)
    reply = await desk.get("/api/push/key", headers=bearer("alice"))
    assert reply.status_code == 404
    assert "VAPID key cannot be used" in reply.json()["detail"]
    assert str(tmp_path) not in reply.text
    assert f"The VAPID key {tmp_path / VAPID_FILE} cannot be read" in caplog.text


async def test_a_known_endpoint_without_its_keys_is_not_taken_from_its_person(
    desk: httpx.AsyncClient, tmp_path: Path
) -> None:
    """Someone who learnt bob's endpoint URL cannot move his device to themself."""
    phone = Browser("https://push.example.net/p/bobs-phone")
    reply = await desk.post(
        "/api/push/subscriptions", json=phone.subscription(), headers=bearer("bob")
    )
    assert reply.status_code == 200
    forged = Browser(phone.endpoint)  # the same endpoint, keys of the caller's own
    reply = await desk.post(
        "/api/push/subscriptions", json=forged.subscription(), headers=bearer("mallory")
    )
    assert reply.status_code == 409
    detail = reply.json()["detail"]
    assert "Another person's device has this endpoint" in detail
    assert "unsubscribe()" in detail
    subscriptions = PushSubscriptions(tmp_path)
    assert subscriptions.of("mallory") == []
    assert [s.info() for s in subscriptions.of("bob")] == [
        {"endpoint": phone.endpoint, "keys": phone.subscription()["keys"]}
    ]
    # Bob re-subscribing his phone, with new keys or the same, is his to do.
    for again in (Browser(phone.endpoint), phone):
        reply = await desk.post(
            "/api/push/subscriptions", json=again.subscription(), headers=bearer("bob")
        )
        assert reply.status_code == 200
        assert reply.json() == {"devices": 1}
    assert [s.info()["keys"] for s in PushSubscriptions(tmp_path).of("bob")] == [
        phone.subscription()["keys"]
    ]


@pytest.mark.parametrize(
    "spelt",
    [
        "https://PUSH.example.net/p/bobs-phone",
        "HTTPS://push.example.net/p/bobs-phone",
        "https://push.example.net./p/bobs-phone",
        "https://push.example.net:443/p/bobs-phone",
        "https://push.example.net/p/bobs-phone#mine",
        "https://push.example.net/p/%62obs-phone",
        "https://push.example.net/p/bobs%2dphone",
        "https://push.example.net/p/./bobs-phone",
        "https://push.example.net/p/x/../bobs-phone",
        "https://push.example.net/../p/bobs-phone",
        "https://push.example.net/p/%2e/bobs-phone",
        "https://push.example.net/p/x/%2E%2e/bobs-phone",
    ],
)
async def test_a_known_endpoint_spelt_otherwise_is_still_its_person_s(
    desk: httpx.AsyncClient, tmp_path: Path, spelt: str
) -> None:
    """The same device's URL written another way (case, port, a fragment, an escaped
    letter, a dot segment the push is sent without) is the same endpoint: refused with a
    409, nothing kept, bob's alone."""
    phone = Browser("https://push.example.net/p/bobs-phone")
    await desk.post("/api/push/subscriptions", json=phone.subscription(), headers=bearer("bob"))
    reply = await desk.post(
        "/api/push/subscriptions", json=Browser(spelt).subscription(), headers=bearer("mallory")
    )
    assert reply.status_code == 409
    subscriptions = PushSubscriptions(tmp_path)
    assert subscriptions.of("mallory") == []
    assert [s.info() for s in subscriptions.of("bob")] == [
        {"endpoint": phone.endpoint, "keys": phone.subscription()["keys"]}
    ]
    # Bob's own browser spelling it so is his device again, not a second one.
    again = Browser(spelt, key=phone.key, auth=phone.auth)
    reply = await desk.post(
        "/api/push/subscriptions", json=again.subscription(), headers=bearer("bob")
    )
    assert reply.json() == {"devices": 1}


@pytest.mark.parametrize(
    ("bobs", "spelt"),
    [
        ("https://push.example.net/p/bobs!phone", "https://push.example.net/p/bobs%21phone"),
        ("https://push.example.net/p/bobs%21phone", "https://push.example.net/p/bobs!phone"),
        ("https://push.example.net/p/bobs|phone", "https://push.example.net/p/bobs%7cphone"),
        ("https://push.example.net/p?to=bob's", "https://push.example.net/p?to=bob%27s"),
    ],
)
def test_a_character_escaped_or_not_names_the_same_device(
    tmp_path: Path, bobs: str, spelt: str
) -> None:
    """Whether a character the push is sent with is escaped or not, the device is bob's."""
    subscriptions = PushSubscriptions(tmp_path)
    phone = Browser(bobs)
    assert subscriptions.add("bob", subscription_of(phone.subscription()))
    assert not subscriptions.add("mallory", subscription_of(Browser(spelt).subscription()))
    assert [s.endpoint for s in subscriptions.of("bob")] == [bobs]
    assert subscriptions.of("mallory") == []


@pytest.mark.parametrize(
    "endpoint", ["https://push.example.net:0/p/1", "https://push.example.net:00/p/1"]
)
async def test_an_endpoint_on_port_0_is_refused_at_once(
    desk: httpx.AsyncClient, tmp_path: Path, endpoint: str
) -> None:
    """No service listens on port 0: such an endpoint is refused when given, not kept and
    pushed to in vain."""
    reply = await desk.post(
        "/api/push/subscriptions", json=Browser(endpoint).subscription(), headers=bearer("alice")
    )
    assert reply.status_code == 422
    assert "port 0" in reply.json()["detail"]
    assert PushSubscriptions(tmp_path).of("alice") == []


def _padded(subscription: dict[str, Any]) -> dict[str, Any]:
    """``subscription`` with its keys in padded base64url (``=`` to a multiple of 4)."""
    keys = {name: key + "=" * (-len(key) % 4) for name, key in subscription["keys"].items()}
    return {**subscription, "keys": keys}


async def test_the_same_keys_padded_are_the_same_subscription(
    desk: httpx.AsyncClient, tmp_path: Path
) -> None:
    """A shared device given again by another person with its keys padded moves to them,
    as it does unpadded; the keys are kept unpadded."""
    shared = Browser("https://push.example.net/p/shared")
    first = await desk.post(
        "/api/push/subscriptions", json=shared.subscription(), headers=bearer("alice")
    )
    again = await desk.post(
        "/api/push/subscriptions", json=_padded(shared.subscription()), headers=bearer("bob")
    )
    assert first.status_code == again.status_code == 200, again.text
    subscriptions = PushSubscriptions(tmp_path)
    assert subscriptions.of("alice") == []
    assert [s.info() for s in subscriptions.of("bob")] == [
        {"endpoint": shared.endpoint, "keys": shared.subscription()["keys"]}
    ]
