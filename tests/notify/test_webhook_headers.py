"""A webhook's own headers (``headers=``): sent as given, without a file's newline, and
refused when the surface is made when HTTP cannot carry them."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from tests.notify.receiver import SECRET, Receiver
from tests.servers.loopback import LoopbackServer

from roomkit.notify import Notice, Notifier, Retry, Webhook
from roomkit.tools.human_input import HumanInputHandler

# Gives up on the first failure: a request the receiver cannot read fails the test, not hangs.
ONCE = Retry(first=0.01, cap=0.01, give_up=0.01)


async def test_a_header_value_read_with_its_file_s_newline_is_sent_without_it() -> None:
    """A token kept in a file ends in a newline: sent as it is, it would break the request's
    head; it goes without it, and the delivery goes through."""
    handler = HumanInputHandler()
    async with Receiver() as receiver:
        webhook = Webhook(
            receiver.url, receiver.secret, retry=ONCE, headers={"Authorization": "Bearer tk\n"}
        )
        notifier = Notifier(handler, [webhook])
        async with notifier:
            await handler.create("ask", {"question": "Ship it?"}, actor_id="alice")
            await notifier.wait_idle()
    [headers] = receiver.headers
    assert headers["authorization"] == "Bearer tk"
    assert notifier.statistics().delivered["webhook"] == 1
    assert receiver.refused == 0


@pytest.mark.parametrize(
    ("headers", "match"),
    [
        ({"X-Token": "abc\r\nwebhook-id: forged"}, "'X-Token' holds a line break"),
        ({"X-Token": "abc\nx-admin: yes"}, "'X-Token' holds a line break"),
        ({"X-Token": "caf\u00e9"}, "'X-Token' holds a letter outside ASCII"),
        ({"X-Token": "a\x00b"}, "'X-Token' holds a control character"),
        ({"X-Token": 42}, "'X-Token' is not text"),
        ({"X Token": "abc"}, "header name 'X Token' holds a character"),
        ({"X-Token\r\nX-Admin": "yes"}, "holds a line break"),
        ({"": "abc"}, "header name '' is empty"),
        ({"Content-Type": "text/plain"}, "'Content-Type' is set by the webhook itself"),
        ({"webhook-signature": "v1,forged"}, "is set by the webhook itself"),
        ({"User-Agent": "acme-hooks/2\r\nx-admin: yes"}, "'User-Agent' holds a line break"),
    ],
)
def test_a_header_http_cannot_carry_is_refused_naming_it(
    headers: dict[str, Any], match: str
) -> None:
    """Each would add headers of its own, contradict the webhook's, or fail every delivery
    with a traceback: refused when the surface is made, naming the header and what is wrong."""
    with pytest.raises(ValueError, match=match):
        Webhook("https://hooks.example.com/in", SECRET, headers=headers)


def test_a_header_value_that_is_a_secret_is_not_written_in_the_error() -> None:
    with pytest.raises(ValueError, match="X-Key") as refused:
        Webhook("https://hooks.example.com/in", SECRET, headers={"X-Key": "s3cret\r\nx: y"})
    assert "s3cret" not in str(refused.value)


def test_headers_that_are_no_mapping_are_refused() -> None:
    with pytest.raises(TypeError, match="mapping of header names"):
        Webhook("https://hooks.example.com/in", SECRET, headers=[("X-Key", "v")])  # type: ignore[arg-type]


class Heads(LoopbackServer):
    """Keeps each request's head as it came, and answers 204."""

    def __init__(self) -> None:
        super().__init__()
        self.heads: list[list[str]] = []

    async def serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = await reader.readuntil(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        length = next(
            (
                int(line.split(":", 1)[1])
                for line in lines
                if line.lower().startswith("content-length:")
            ),
            0,
        )
        await reader.readexactly(length)
        self.heads.append(lines)
        writer.write(b"HTTP/1.1 204 No Content\r\nconnection: close\r\n\r\n")
        await writer.drain()


def user_agents(head: list[str]) -> list[str]:
    return [
        line.split(":", 1)[1].strip() for line in head if line.lower().startswith("user-agent:")
    ]


@pytest.mark.parametrize("name", ["User-Agent", "user-agent"])
async def test_a_user_agent_of_ones_own_is_sent_instead_of_roomkits(name: str) -> None:
    """A receiver behind a gateway that admits callers by their User-Agent: the caller's is
    sent, once, without a file's newline, in place of ``roomkit-notify``."""
    request = await HumanInputHandler().create("ask", {"question": "?"}, actor_id="alice")
    notice = Notice("question_pending", "d1", request)
    async with Heads() as server:
        own = Webhook(f"{server.origin}/in", SECRET, headers={name: "acme-hooks/2.1\n"})
        plain = Webhook(f"{server.origin}/in", SECRET)
        await own.send(notice)
        await plain.send(notice)
        await own.aclose()
        await plain.aclose()
    assert [user_agents(head) for head in server.heads] == [["acme-hooks/2.1"], ["roomkit-notify"]]
