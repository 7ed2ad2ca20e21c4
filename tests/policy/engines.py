"""The same rules in Cedar, in Rego, and served by an OPA stub on loopback.

Every back end decides the call ``pay`` alike: an amount under 100 is allowed; paying
``mallory`` is denied; an amount of 1000 or more is asked of ``dave``; anything else has no
opinion (abstain).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

CEDAR = """
@id("small-payments")
permit(principal, action == Action::"pay", resource)
when { context.arguments.amount < 100 };

@id("no-mallory")
@reason("mallory is blocked")
forbid(principal, action == Action::"pay", resource)
when { context.arguments.to == "mallory" };

@id("ask:large-payments")
@approvers("dave")
forbid(principal, action == Action::"pay", resource)
when { context.arguments.amount >= 1000 };
"""

# Two asks for payments approved by nobody in common: the cfo and the ceo for a huge sum, dave
# for an urgent memo.
TIERED = """
permit(principal, action, resource);

@id("ask:huge") @approvers("cfo, ceo")
forbid(principal, action == Action::"pay", resource) when { context.arguments.amount > 10000 };

@id("ask:urgent") @approvers("dave")
forbid(principal, action == Action::"pay", resource)
when { context.arguments has memo && context.arguments.memo like "*urgent*" };
"""

REGO = """
package roomkit

import rego.v1

default decision := {"decision": "not-applicable"}

decision := {"decision": "deny", "reason": "mallory is blocked"} if {
    input.arguments.to == "mallory"
} else := {"decision": "requires-approval", "approvers": ["dave"]} if {
    input.arguments.amount >= 1000
} else := {"decision": "allow"} if {
    is_number(input.arguments.amount)
    input.arguments.amount < 100
}
"""

CASES = {
    "allow": {"to": "bob", "amount": 5},
    "deny": {"to": "mallory", "amount": 5},
    "ask": {"to": "bob", "amount": 5000},
    "abstain": {"to": "bob", "amount": 500},
}
"""The arguments of ``pay`` that each back end decides each way."""


@dataclass
class Stub:
    """An OPA Data API on loopback, deciding with :data:`REGO`; its ``mode`` may break it."""

    url: str = ""
    mode: str = "ok"
    """``ok``; ``500`` (answers an error); ``hang`` (never answers); ``trickle`` (answers a
    byte at a time, each well within a read's timeout); ``undefined``."""
    inputs: list[dict[str, object]] = field(default_factory=list)
    release: threading.Event = field(default_factory=threading.Event)


@contextmanager
def opa_stub() -> Iterator[Stub]:
    """Serve an OPA stub on a free loopback port while the block runs."""
    stub = Stub()
    regopy = pytest.importorskip("regopy")
    rego = regopy.Interpreter()
    rego.add_module("stub.rego", REGO)
    lock = threading.Lock()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            length = int(self.headers.get("content-length", "0"))
            body = json.loads(self.rfile.read(length))
            stub.inputs.append(body["input"])
            if stub.mode == "hang":
                stub.release.wait(30)
                return
            if stub.mode == "500" or self.path != "/v1/data/roomkit/decision":
                self._send(500, {"code": "internal_error"})
                return
            if stub.mode == "undefined":
                self._send(200, {})
                return
            with lock:
                # As OPA reads it: text as itself (rego-cpp reads a \u escape as six characters).
                rego.set_input_term(json.dumps(body["input"], ensure_ascii=False))
                output = json.loads(str(rego.query("data.roomkit.decision")))
            if stub.mode == "trickle":
                self._trickle(json.dumps({"result": output["expressions"][0]}).encode())
                return
            self._send(200, {"result": output["expressions"][0]})

        def _trickle(self, data: bytes) -> None:
            self.send_response(200)
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            for byte in data:
                if stub.release.wait(0.1):
                    return
                self.wfile.write(bytes([byte]))
                self.wfile.flush()

        def _send(self, status: int, value: object) -> None:
            data = json.dumps(value).encode()
            self.send_response(status)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, format: str, *args: object) -> None:
            return

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    stub.url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield stub
    finally:
        stub.release.set()
        server.shutdown()
        server.server_close()
        thread.join(5)
