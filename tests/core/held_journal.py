"""A SQLite room store whose turn journal a test steers: its first read (the one
``resume_pending()`` makes at start-up) held until the test lets it go, and an event set as
the turns read are leased."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Sequence

from roomkit.core.store import OpenTurn
from roomkit.stores.sqlite import SQLiteRoomStore


class HeldJournal(SQLiteRoomStore):
    """The room store in the SQLite file ``path``, its first journal read held until
    :attr:`go` is set."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        super().__init__(path)
        self.reading = asyncio.Event()
        """Set once the first journal read began."""
        self.go = asyncio.Event()
        """Lets the first journal read go on."""
        self.leased = asyncio.Event()
        """Set as a lease write returns: whoever waits runs before the turns just leased
        take their first step."""

    async def open_turns(self) -> list[OpenTurn]:
        if not self.reading.is_set():
            self.reading.set()
            await self.go.wait()
        return await super().open_turns()

    async def renew_turns(self, turns: Sequence[OpenTurn]) -> frozenset[str]:
        renewed = await super().renew_turns(turns)
        self.leased.set()
        return renewed
