"""Where Web Push connects. A host only a ``*.`` entry admits: whoever holds the names below
it chooses their addresses, so one resolving to this machine or its network (``127.0.0.1``,
the cloud's metadata address) is never connected to; a host named exactly is pushed to as it
resolves. Plain HTTP: only to an origin named so, host and port. Names are resolved by a
resolver the test gives the surface, so nothing leaves the machine."""

from __future__ import annotations

import asyncio
import socket
from pathlib import Path

import pytest
from aiohttp.abc import AbstractResolver, ResolveResult
from tests.push.push_service import Browser, PushService
from tests.servers.loopback import LoopbackServer

from roomkit.notify import DeliveryError, Notice, Notifier
from roomkit.notify._push_dns import PublicOnly
from roomkit.notify.push_hosts import PushHosts
from roomkit.notify.push_subscriptions import PushSubscriptions, subscription_of
from roomkit.notify.webpush import WebPush
from roomkit.tools.human_input import HumanInputHandler

SUBJECT = "mailto:ops@example.com"
SECRET = "the tests' desk secret, 0123456789abcdef"
DESK = "https://desk.example.com"
WILDCARD = ["*.push.example.net"]
EVIL = "evil.push.example.net"


class Names(AbstractResolver):
    """A DNS of the test's own: each name's addresses."""

    def __init__(self, names: dict[str, list[str]]) -> None:
        self.names = names

    async def resolve(
        self, host: str, port: int = 0, family: socket.AddressFamily = socket.AF_INET
    ) -> list[ResolveResult]:
        if host not in self.names:
            raise socket.gaierror(socket.EAI_NONAME, f"{host} is not known")
        return [
            {
                "hostname": host,
                "host": address,
                "port": port,
                "family": socket.AF_INET6 if ":" in address else socket.AF_INET,
                "proto": 0,
                "flags": socket.AI_NUMERICHOST,
            }
            for address in self.names[host]
        ]

    async def close(self) -> None:
        pass


class Listener(LoopbackServer):
    """Counts the connections made to it, and closes each."""

    def __init__(self) -> None:
        super().__init__()
        self.connections = 0

    async def serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1

    @property
    def port(self) -> int:
        return int(self.origin.rsplit(":", 1)[1])


def subscribe(data_dir: Path, browser: Browser) -> None:
    PushSubscriptions(data_dir).add("alice", subscription_of(browser.subscription()))


async def question() -> Notice:
    request = await HumanInputHandler().create("ask", {"question": "?"}, actor_id="alice")
    return Notice("question_pending", "d1", request, recipient="alice", desk_url=DESK)


@pytest.mark.parametrize(
    "addresses",
    [
        ["127.0.0.1"],
        ["169.254.169.254"],
        ["::1"],
        ["::ffff:10.0.0.5"],
        ["93.184.215.14", "10.0.0.5"],
    ],
)
async def test_a_host_only_a_wildcard_admits_is_not_connected_to_at_an_internal_address(
    addresses: list[str], tmp_path: Path
) -> None:
    """The device fails alone, not retried (the address is the name holder's choice), saying
    which host and which address; nothing is connected to, and the subscription is kept."""
    async with Listener() as listener:
        subscribe(tmp_path, Browser(f"https://{EVIL}:{listener.port}/push/1"))
        push = WebPush(
            SUBJECT,
            data_dir=tmp_path,
            push_hosts=WILDCARD,
            resolver=Names({EVIL: addresses}),
            timeout=5,
        )
        with pytest.raises(DeliveryError) as raised:
            await push.send(await question())
        await push.aclose()
    assert listener.connections == 0
    assert not raised.value.retry
    message = str(raised.value)
    assert EVIL in message
    assert addresses[-1] in message
    assert "not a public address" in message
    assert len(PushSubscriptions(tmp_path).of("alice")) == 1


async def test_the_persons_other_devices_are_pushed_to_and_the_log_names_the_address(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Through the notifier: the device on the loopback push service (named by its origin) gets
    the question; the one a wildcard admits, pointing at this machine, is logged, never
    posted to."""
    handler = HumanInputHandler()
    async with PushService() as service, Listener() as listener:
        phone = service.browser("phone")
        subscribe(tmp_path, phone)
        subscribe(tmp_path, Browser(f"https://{EVIL}:{listener.port}/push/2"))
        push = WebPush(
            SUBJECT,
            data_dir=tmp_path,
            push_hosts=[*WILDCARD, service.origin],
            resolver=Names({EVIL: ["127.0.0.1"]}),
        )
        notifier = Notifier(handler, [push], desk_url=DESK, link_secret=SECRET)
        async with notifier:
            await handler.create("ask", {"question": "Ship it?"}, actor_id="alice")
            [taken] = await service.wait_for(1)
            await notifier.wait_idle()
    assert taken.endpoint == phone.endpoint
    assert listener.connections == 0
    assert notifier.statistics().delivered["webpush"] == 1
    assert f"'{EVIL}' resolves to 127.0.0.1, not a public address" in caplog.text


async def test_public_addresses_and_exactly_named_hosts_pass_the_check() -> None:
    """A wildcard's host at public addresses resolves as it is; a host named exactly is the
    operator's own, wherever it points; no wildcard admits an IP address."""
    hosts = PushHosts([*WILDCARD, "push.internal.example"])
    names = Names(
        {
            "ok.push.example.net": ["93.184.215.14", "2606:2800:21f:cb07:6820:80da:af6b:8b2c"],
            "push.internal.example": ["10.0.0.5"],
        }
    )
    resolver = PublicOnly(names, hosts.checked)
    found = await resolver.resolve("ok.push.example.net", 443)
    assert [entry["host"] for entry in found] == names.names["ok.push.example.net"]
    assert [e["host"] for e in await resolver.resolve("push.internal.example", 443)] == ["10.0.0.5"]
    assert PushHosts(["*.0.0.1"]).problem("https://127.0.0.1/p/1") is not None


async def test_a_host_named_alone_takes_no_plain_http_on_another_port(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """``127.0.0.1`` in push_hosts is an https:// push service: a subscription sending plain
    HTTP to a port of its (a Redis, an admin page) is skipped and logged, never connected to."""
    async with Listener() as listener:
        subscribe(tmp_path, Browser(f"http://127.0.0.1:{listener.port}/push/1"))
        push = WebPush(SUBJECT, data_dir=tmp_path, push_hosts=["127.0.0.1"])
        receipt = await push.send(await question())
        await push.aclose()
    assert listener.connections == 0
    assert receipt == {"skipped": "no push subscription"}
    assert "plain http only to an origin named in push_hosts" in caplog.text


def test_plain_http_goes_only_to_the_origin_named_so() -> None:
    """A host named alone takes https:// on any port; ``http://host:port`` takes plain HTTP
    to that port only (80 when it names none)."""
    hosts = PushHosts(["push.example.com", "http://127.0.0.1:8080", "HTTP://Localhost"])
    assert hosts.extra == ("push.example.com", "http://127.0.0.1:8080", "http://localhost:80")
    taken = [
        "https://push.example.com/p/1",
        "https://push.example.com:8443/p/1",
        "http://127.0.0.1:8080/p/1",
        "http://localhost/p/1",
        "http://localhost:80/p/1",
    ]
    refused = [
        "http://push.example.com/p/1",
        "http://push.example.com:6379/p/1",
        "http://127.0.0.1:6379/p/1",
        "http://127.0.0.1/p/1",
        "https://127.0.0.1:8080/p/1",
        "http://localhost:8080/p/1",
        "http://127.0.0.1:99999/p/1",
    ]
    assert [endpoint for endpoint in taken if hosts.problem(endpoint) is not None] == []
    assert [endpoint for endpoint in refused if hosts.problem(endpoint) is None] == []


def test_https_to_a_host_named_only_as_a_plain_origin_says_to_name_the_host() -> None:
    """The refusal tells an https:// endpoint what to add, not that it must be https://."""
    problem = PushHosts(["http://localhost:8080"]).problem("https://localhost:8080/p/1")
    assert problem is not None
    assert "must be https://" not in problem
    assert "name 'localhost' alone there too to push to it over https://" in problem
