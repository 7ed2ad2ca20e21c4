"""OPAPolicy keeps one HTTP client, and its connection to OPA, across its queries."""

from __future__ import annotations

import contextlib
import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from roomkit.policy import Allow, OPAPolicy, PolicyCall

CALL = PolicyCall("pay", {"to": "bob", "amount": 5}, "digest", "alice", "r1", "agent")


@contextlib.contextmanager
def serving(handler: type[BaseHTTPRequestHandler]) -> Iterator[str]:
    """An OPA stub answering with ``handler`` on loopback, in a thread; its URL."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)


def answering(data: bytes, ports: list[int]) -> type[BaseHTTPRequestHandler]:
    """An OPA stub's handler that keeps connections open (HTTP/1.1) and answers every query
    with ``data``, putting the client port of each query in ``ports``."""

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("content-length", "0")))
            ports.append(self.client_address[1])
            self.send_response(200)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, format: str, *args: object) -> None:
            return

    return Handler


@pytest.fixture
def opa() -> Iterator[tuple[str, list[int]]]:
    """An OPA stub on loopback that keeps connections open (HTTP/1.1) and allows every call;
    its URL, and the client port of each query it answered."""
    ports: list[int] = []
    with serving(answering(json.dumps({"result": {"decision": "allow"}}).encode(), ports)) as url:
        yield url, ports


async def test_queries_share_one_connection(opa: tuple[str, list[int]]) -> None:
    url, ports = opa
    policy = OPAPolicy(url)
    for _ in range(3):
        assert isinstance(await policy.decide(CALL), Allow)
    assert len(ports) == 3
    assert len(set(ports)) == 1
    await policy.aclose()


async def test_a_closed_policy_queries_again_on_a_new_connection(
    opa: tuple[str, list[int]],
) -> None:
    url, ports = opa
    policy = OPAPolicy(url)
    assert isinstance(await policy.decide(CALL), Allow)
    await policy.aclose()
    assert isinstance(await policy.decide(CALL), Allow)
    await policy.aclose()
    async with policy:
        assert isinstance(await policy.decide(CALL), Allow)
    await policy.aclose()
    assert len(set(ports)) == 3


@pytest.fixture
def flooding() -> Iterator[str]:
    """An OPA stub on loopback allowing every call with an 8 MiB reason: said in its
    ``content-length`` at ``/v1/data/said``, else sent until the connection closes."""

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("content-length", "0")))
            data = json.dumps({"result": {"decision": "allow", "reason": "x" * (8 << 20)}})
            self.send_response(200)
            self.send_header("content-type", "application/json")
            if self.path == "/v1/data/said":
                self.send_header("content-length", str(len(data)))
            self.end_headers()
            with contextlib.suppress(OSError):
                self.wfile.write(data.encode())

        def log_message(self, format: str, *args: object) -> None:
            return

    with serving(Handler) as url:
        yield url


@pytest.mark.parametrize("path", ["said", "unsaid"])
async def test_an_answer_over_the_cap_is_read_no_further(flooding: str, path: str) -> None:
    """An answer over MAX_ANSWER_BYTES, its length said or not, fails the query (on_error
    decides) instead of being held in memory, however fast it comes."""
    policy = OPAPolicy(flooding, path, timeout=30)
    try:
        with pytest.raises(RuntimeError, match=r"holds more than 1048576 bytes"):
            await policy.decide(CALL)
    finally:
        await policy.aclose()


@pytest.fixture
def nesting() -> Iterator[str]:
    """An OPA stub on loopback answering with a result nested 100,000 lists deep."""
    data = b'{"result": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"
    with serving(answering(data, [])) as url:
        yield url


async def test_an_answer_nested_too_deep_fails_saying_so(nesting: str) -> None:
    """It raised RecursionError from the JSON decoder: ``on_error`` decided, but the failure
    logged and recorded was a RecursionError, saying nothing of OPA's answer."""
    policy = OPAPolicy(nesting)
    try:
        with pytest.raises(RuntimeError, match=r"nests too deep to read") as failed:
            await policy.decide(CALL)
    finally:
        await policy.aclose()
    assert not isinstance(failed.value, RecursionError)
