"""A person whose id holds a NUL is told of a request, and of its ending, on every store
(PostgreSQL text, and its JSON, hold no NUL as it is): the notifier's deliveries to them are
recorded, claimed and sent like any other."""

from __future__ import annotations

import asyncio

from tests.notify.recorder import Recorder
from tests.notify.test_late_ladder import Ahead
from tests.servers.stores import StoreSite

from roomkit.notify import Notifier
from roomkit.testing import run_virtual
from roomkit.tools.human_input import HumanInputHandler

ODD = "ali\x00ce"


async def told(handler: HumanInputHandler) -> list[tuple[str, str | None]]:
    """What a notifier on its own surface (a lane of its own) and on the steps sends about a
    question asked of :data:`ODD`, answered once announced."""
    recorder = Recorder()
    async with Notifier(handler, [recorder], poll=60.0) as notifier:
        request = await handler.create("ask", {"question": "Deploy?"}, actor_id=ODD)
        await notifier.wait_idle()
        assert await handler.aresolve(request.pending_id, "yes", by=ODD)
        await notifier.wait_idle()
    return recorder.seen()


async def on_durable_store(site: StoreSite) -> list[tuple[str, str | None]]:
    store = site.open(clock=Ahead())  # type: ignore[arg-type]
    try:
        return await told(HumanInputHandler(store=store))
    finally:
        await store.close()


def test_a_person_whose_id_holds_a_nul_is_told_of_a_question_and_its_answer(
    store_site: StoreSite,
) -> None:
    if store_site.durable:
        seen = asyncio.run(on_durable_store(store_site))
    else:
        seen = run_virtual(told(HumanInputHandler()))
    assert seen == [("question_pending", ODD), ("question_settled", ODD)]
