"""What the suites that run once per store share: the every-store fixtures themselves
(``store_kind``, ``store_url``, ``store_prefix``, ``make_handler``) are in
:mod:`tests.servers.plugin`, for every test; the names below stay for the tests that
import them."""

from __future__ import annotations

from collections.abc import Callable, Collection
from typing import Any

from tests.servers.plugin import HandlerFactory as HandlerFactory
from tests.servers.stores import STORES as STORES
from tests.servers.stores import open_store as open_store

from roomkit._audit import first_break
from roomkit.stores import entry_text
from roomkit.tools.human_input import HumanInputHandler


async def chain_breaks(
    handler: HumanInputHandler, pending_ids: Collection[str]
) -> dict[str, str | None]:
    """Per request, where its stored history breaks as ``roomkit audit verify`` checks it
    (``None`` when whole); a request with no history at all breaks."""
    if handler.durable:
        chains: dict[str, list[str]] = await handler.store.history_texts()  # type: ignore[union-attr]
    else:
        # On the memory store the chain is the history read back, without the seqs.
        chains = {
            pending_id: [
                entry_text({k: v for k, v in entry.items() if k != "seq"})
                for entry in await handler.history(pending_id)
            ]
            for pending_id in pending_ids
        }
    return {
        pending_id: first_break(pending_id, chains[pending_id])
        if chains.get(pending_id)
        else "no history"
        for pending_id in pending_ids
    }


Opener = Callable[..., Any]
"""``open_another(**options)``: one more store on the test's file or server."""
