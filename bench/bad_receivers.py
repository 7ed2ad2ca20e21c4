"""Webhook receivers on loopback for ``bench_notify.py --bad-receivers``: one healthy, four
broken.

Run as ``python bench/bad_receivers.py <whsec_secret> <name>...``: it serves the receivers
named (``healthy``, ``hang``, ``error``, ``reset``, ``garbage``), prints one line of JSON
with the port of each, then one line per webhook the healthy receiver verified:
``<time.monotonic()> <pending_id> <type>``. The healthy one runs in a process of its own,
so that what the broken ones cost their process is not counted in its latency. The broken
ones:

- ``hang`` reads each request and never answers (the sender's timeout ends it);
- ``error`` answers every request with a 500;
- ``reset`` reads each request and resets the connection;
- ``garbage`` answers in turn with bytes that are not HTTP, a chunked body whose chunk
  size is not a number, a status line with digits that are not ASCII, a head longer than
  any client reads, and a body cut short; then closes.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import socket
import struct
import sys
import time

from standardwebhooks import Webhook


async def read_request(reader: asyncio.StreamReader) -> dict[str, str]:
    """One request's headers; its body is read and dropped."""
    head = await reader.readuntil(b"\r\n\r\n")
    headers = {}
    for line in head.decode("latin-1").split("\r\n")[1:]:
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    headers["body"] = (await reader.readexactly(int(headers.get("content-length", "0")))).decode()
    return headers


def healthy(secret: str) -> object:
    verify = Webhook(secret).verify

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                headers = await read_request(reader)
                event = verify(headers.pop("body"), headers)
                print(time.monotonic(), event["pending_id"], event["type"], flush=True)
                writer.write(b"HTTP/1.1 204 No Content\r\ncontent-length: 0\r\n\r\n")
        except (asyncio.IncompleteReadError, ConnectionError):
            writer.close()

    return serve


async def hang(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        await read_request(reader)
        await reader.read()  # until the sender gives up and closes
    except (asyncio.IncompleteReadError, ConnectionError):
        pass
    writer.close()


async def error(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while True:
            await read_request(reader)
            writer.write(b"HTTP/1.1 500 Internal Server Error\r\ncontent-length: 5\r\n\r\noops!")
    except (asyncio.IncompleteReadError, ConnectionError):
        writer.close()


async def reset(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    with contextlib.suppress(asyncio.IncompleteReadError, ConnectionError):
        await read_request(reader)
    sock = writer.get_extra_info("socket")
    if sock is not None:
        # Linger with a zero timeout: closing sends a RST, not a FIN.
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    writer.transport.abort()


GARBAGE = (
    b"\x00\xffnot http at all\r\n\r\n" + bytes(range(256)),
    b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\nzz\r\nhello\r\n",
    "HTTP/1.1 \u00b2\u00b2\u00b2 OK\r\ncontent-length: 0\r\n\r\n".encode(),
    b"HTTP/1.1 200 OK\r\nx-filler: " + b"x" * 200_000 + b"\r\n\r\n",
    b"HTTP/1.1 200 OK\r\ncontent-length: 1000\r\n\r\ncut short",
)
answered = 0


async def garbage(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    global answered
    try:
        await read_request(reader)
        writer.write(GARBAGE[answered % len(GARBAGE)])
        answered += 1
        await writer.drain()
    except (asyncio.IncompleteReadError, ConnectionError):
        pass
    writer.close()


async def main(secret: str, names: list[str]) -> None:
    handlers = {
        "healthy": healthy(secret),
        "hang": hang,
        "error": error,
        "reset": reset,
        "garbage": garbage,
    }
    ports = {}
    servers = []
    for name in names:
        handler = handlers[name]
        server = await asyncio.start_server(handler, "127.0.0.1", 0, backlog=1024)  # type: ignore[arg-type]
        servers.append(server)
        ports[name] = server.sockets[0].getsockname()[1]
    print(json.dumps(ports), flush=True)
    await asyncio.gather(*(server.serve_forever() for server in servers))


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2:]))
