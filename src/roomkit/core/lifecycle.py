"""What is opened and closed: ``async with`` opens it and closes it again.

The durable stores (the room stores, the pending-request stores) connect lazily, and also
when opened; each closes its connection when closed. They subclass :class:`Opened` for the
``async with`` form.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Self

__all__ = ["Opened"]


class Opened(ABC):
    """A resource with ``open()`` and ``close()``; ``async with`` calls both."""

    @abstractmethod
    async def open(self) -> None:
        """Open the resource; idempotent."""

    @abstractmethod
    async def close(self) -> None:
        """Close the resource; idempotent."""

    async def __aenter__(self) -> Self:
        await self.open()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()
