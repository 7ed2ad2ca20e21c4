"""One resume of a settled pause, however many resumers reach it.

A resumer continues a run through :meth:`Resumes.resume_once`: it claims the resume in the
handler's spend-once ledger for a lease, so that two resumers of the same settled pause
continue it once and a resumer that died holding the claim is replaced once the lease lapses.
A resumer renews its lease while its run goes on (:meth:`Resumes.holding`), so that a run
longer than the lease (a slow tool, a long turn) is not taken over by the next resumer while
its own is alive. The ledger's clock is the store's (:func:`ledger_now`), which every process
shares.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import TypeVar

from roomkit.adapters._claims import ledger_name
from roomkit.tools.human_input import HumanInputHandler

__all__ = ["LEASE", "RENEW", "Resumes", "ledger_now"]

LEASE = 300.0
"""Seconds a resumer holds its claim on a pause before another may take the resume over."""
RENEW = LEASE / 4
"""Seconds between two renewals of a running resumer's lease: a renewal that fails (a store
down for a moment) leaves three more before the lease lapses."""

T = TypeVar("T")

logger = logging.getLogger("roomkit.adapters")


def ledger_now(handler: HumanInputHandler) -> float:
    """The time on the clock of ``handler``'s ledger, on which its claims lapse: the store's,
    which every process shares."""
    clock: Callable[[], float] = getattr(
        handler.ledger, "clock", getattr(handler.store, "clock", time.time)
    )
    return clock()


class Resumes:
    """The claims on resuming runs paused on ``handler``'s requests, kept in its ledger.

    Args:
        handler: the human-input handler whose ledger keeps the claims.
    """

    __slots__ = ("handler",)

    def __init__(self, handler: HumanInputHandler) -> None:
        self.handler = handler

    async def claim(
        self, name: str, *, lease: float | None = None, until: float | None = None
    ) -> bool:
        """Claim the resume ``name`` for this resumer; ``False`` when another holds it.

        ``lease`` seconds later the claim lapses (so a resumer that died holding it does
        not block the pause for ever), or at ``until`` on the ledger's clock
        (:func:`ledger_now`), so that claims taken together lapse together; neither keeps it.
        """
        if lease is not None:
            until = ledger_now(self.handler) + lease
        return await self.handler.ledger.spend_once(ledger_name("resume", name), until=until)

    async def resume_once(
        self, name: str | Sequence[str], resume: Callable[[], Awaitable[T]]
    ) -> T | None:
        """Run ``resume`` as the one resumer of the resume ``name``; ``None`` when another
        holds it or finished it.

        ``name`` may be several names, the pauses one resume answers together: each is
        claimed in turn, and the resume runs only when this resumer holds them all (one held
        by another gives back those taken, and returns ``None``). The claims last
        :data:`LEASE` seconds while ``resume`` runs, are given back when it fails, and are
        kept for good when it returns (the run moved on).
        """
        names = [name] if isinstance(name, str) else sorted(set(name))
        taken: list[str] = []
        try:
            for each in names:
                if not await self.claim(each, lease=LEASE):
                    await self._give_back(taken)
                    return None
                taken.append(each)
            result = await self.holding(taken, resume)
        except BaseException:
            await self._give_back(taken)
            raise
        for each in taken:
            await self.keep_claim(each)
        return result

    async def holding(self, names: Sequence[str], run: Callable[[], Awaitable[T]]) -> T:
        """``run()``, the claims ``names`` (taken with :data:`LEASE`) renewed for another
        lease every :data:`RENEW` seconds while it runs: they lapse only once this resumer
        has stopped renewing them (its process died), as a lease is meant to."""
        stop = asyncio.Event()
        renewing = asyncio.ensure_future(self._renew(names, stop))
        try:
            return await run()
        finally:
            stop.set()
            # A renewal under way ends before the claims are kept or given back: it would
            # write a lease over them.
            await asyncio.shield(renewing)

    async def _renew(self, names: Sequence[str], stop: asyncio.Event) -> None:
        while True:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), RENEW)
            if stop.is_set():
                return
            until = ledger_now(self.handler) + LEASE
            for name in names:
                try:
                    await self.handler.ledger.record_spent(ledger_name("resume", name), until=until)
                except Exception:  # a store that failed: the next round renews it again
                    logger.warning("could not renew the claim %r; retrying", name, exc_info=True)

    async def keep_claim(self, name: str) -> None:
        """Make the claim on the resume ``name`` permanent: the run moved on, and a resumer
        coming after the lease would find the same settled pause and continue it again."""
        await self.handler.ledger.record_spent(ledger_name("resume", name), until=None)

    async def held(self, name: str) -> bool:
        """Whether the resume ``name`` is claimed (within its lease) or kept for good."""
        entry = ledger_name("resume", name)
        return entry in await self.handler.ledger.read_spent([entry])

    async def unclaim(self, name: str) -> None:
        """Give the resume ``name`` back (the resume failed before the run moved on)."""
        await self.handler.ledger.refund_spent(ledger_name("resume", name))

    async def _give_back(self, names: list[str]) -> None:
        """Give back the claims ``names``, taken for a resume that is not going on."""
        for name in names:
            await self.unclaim(name)
