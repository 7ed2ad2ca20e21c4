"""OPAPolicy keeps one HTTP client, and its connection to OPA, across its queries."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from roomkit.policy import Allow, OPAPolicy, PolicyCall

CALL = PolicyCall("pay", {"to": "bob", "amount": 5}, "digest", "alice", "r1", "agent")


@pytest.fixture
def opa() -> Iterator[tuple[str, list[int]]]:
    """An OPA stub on loopback that keeps connections open (HTTP/1.1) and allows every call;
    its URL, and the client port of each query it answered."""
    ports: list[int] = []

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("content-length", "0")))
            ports.append(self.client_address[1])
            data = json.dumps({"result": {"decision": "allow"}}).encode()
            self.send_response(200)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, format: str, *args: object) -> None:
            return

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", ports
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)


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
