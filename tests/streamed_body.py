"""A request body far over every cap, streamed in chunks, that counts the chunks the server
took: a route that refuses its caller, or its method, before reading the body takes none."""

from __future__ import annotations

from collections.abc import AsyncIterator


class StreamedBody:
    """64 chunks of 64 KiB; :attr:`taken` lists the chunks read, across every send."""

    def __init__(self) -> None:
        self.taken: list[int] = []

    async def chunks(self) -> AsyncIterator[bytes]:
        """The body, for one request's ``content=``."""
        for index in range(64):
            self.taken.append(index)
            yield b"[" * (64 * 1024)
