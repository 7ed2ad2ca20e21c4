"""An agent process for the desk tests: asks on a shared store, waits, prints the outcomes.

``python desk_agent.py sqlite PATH ACTOR COUNT`` or ``python desk_agent.py redis URL PREFIX
ACTOR COUNT`` opens a handler on the store, creates COUNT questions for ACTOR in room
``room``, prints ``{"created": [ids]}``, waits for each, prints ``{"outcomes": {id: text}}``
(an answer, or ``rejected: reason``) and exits. Each line it prints is JSON.
"""

from __future__ import annotations

import asyncio
import json
import sys

from roomkit import HumanInputRejectedError
from roomkit.tools.human_input import HumanInputHandler


def _store(argv: list[str]) -> tuple[object, list[str]]:
    if argv[0] == "sqlite":
        from roomkit.stores.sqlite import SQLiteStore

        return SQLiteStore(argv[1], backstop_interval=0.02), argv[2:]
    from roomkit.stores.redis import RedisStore

    return RedisStore(argv[1], prefix=argv[2], backstop_interval=0.05), argv[3:]


async def _outcome(handler: HumanInputHandler, pending_id: str) -> str:
    try:
        return await handler.wait(pending_id, timeout=50)
    except HumanInputRejectedError as rejected:
        return f"rejected: {rejected}"


async def main(argv: list[str]) -> None:
    store, (actor, count) = _store(argv)
    handler = HumanInputHandler(store=store)  # type: ignore[arg-type]
    ids = [
        (
            await handler.create(
                "AskUserQuestion",
                {"question": f"Question {index}?"},
                room_id="room",
                actor_id=actor,
                channel_id="agent",
            )
        ).pending_id
        for index in range(int(count))
    ]
    print(json.dumps({"created": ids}), flush=True)
    outcomes = await asyncio.gather(*(_outcome(handler, pending_id) for pending_id in ids))
    print(json.dumps({"outcomes": dict(zip(ids, outcomes, strict=True))}), flush=True)
    await store.close()  # type: ignore[attr-defined]


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1:]))
