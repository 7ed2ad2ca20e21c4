"""The histories a fixed sequence of requests leaves, pinned digest for digest.

The wall clock is frozen and the ids are drawn from a seeded generator, so every entry, and
so every link of every chain, comes out the same in every run. The digests below are the
heads of the chains (the digest of each request's last stored entry, which covers every
entry before it through the ``prev`` links): however the handler records what happened, a
reader gets these chains, on the memory store and on a durable one alike.
"""

from __future__ import annotations

import asyncio
import os
import random
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import pytest
import time_machine
from tests.tools.human_input.stores.store_kit import Backend, FakeClock

from roomkit import HumanInputHandler
from roomkit.core.exceptions import (
    HumanInputRejectedError,
    HumanInputTimeoutError,
    RequestWithdrawnError,
)
from roomkit.stores import broken_link, entry_text, link_digest, new_entry
from roomkit.tools.approvals import approve, edit, reject

FROZEN = datetime(2026, 12, 1, 9, 30, 15, 123456, tzinfo=UTC)
SCHEMA = {"type": "object", "properties": {"env": {"type": "string"}}, "required": ["env"]}

MEMORY_HEADS = {
    "answered": "7f65e54a3a44a5c33c533eca952c578506f8d6e090512966cc3e6c10e57562f0",
    "rejected": "928ba92d9ea5b0ffb50167c4c8992f3959f712435e448c6adc2dd0e4cd22f409",
    "timed_out": "94cb83ea57b087346ca86aa6e3ce26bf29b2db5866c806148071aa87efc24cd6",
    "released": "de08ef286eda5c41108bd68ae9441c4900de9d1953c48eed278aa249841ac5c0",
    "approved": "3849f4a077041834fbd4a1902dda1330da532deb5448fa077db8c5c6fde8079a",
    "edited": "3321a9a49a114c42a5c1bd57036167d34790106de77477fe9c9777983afd848f",
    "vetoed": "14e092a0dde3b8f53d8a9a291be60bd129f343b069d4405cc26b9c35b2c5e27b",
    "escalated": "22a3b663e26b7751ed205f91a65ed61afa050390233266762705c8d28846d812",
    "closed": "71ff51e946fc060bce63fd25f95af4703012ffc31438404c6375eea0b0125562",
}
DURABLE_HEADS = {
    "answered": "7f65e54a3a44a5c33c533eca952c578506f8d6e090512966cc3e6c10e57562f0",
    "rejected": "928ba92d9ea5b0ffb50167c4c8992f3959f712435e448c6adc2dd0e4cd22f409",
    "approved": "196b7e322fd2c1c3bffad0566dd21f1fb8dd2c6c70c538a704c2df6fe29bf0de",
    "edited": "2425ade0795faccd460006ab153a01dbc0f228d5b32c250a2c897f9a117c36c6",
    "vetoed": "e40393667fdc5f01304c84ce9b3016bedee9f768b8ae3ec6a56f893f43457414",
    "escalated": "10995c10ea25000afb12268904bc33f7994faba083c5cd83643db71ce36ade93",
}


@pytest.fixture
def seeded_ids(monkeypatch: pytest.MonkeyPatch) -> Iterator[random.Random]:
    """Every random byte the process draws comes from one generator, seeded again as the
    sequence starts (so what a store drew to open makes no difference)."""
    generator = random.Random()
    monkeypatch.setattr(os, "urandom", generator.randbytes)
    with time_machine.travel(FROZEN, tick=False):
        yield generator


def stored(history: list[dict[str, Any]]) -> list[str]:
    return [entry_text({k: v for k, v in entry.items() if k != "seq"}) for entry in history]


async def the_sequence(handler: HumanInputHandler, *, timeouts: bool) -> dict[str, str]:
    """Questions and approvals ending each way; each one's id by the name of its ending."""
    ids: dict[str, str] = {}

    asked = await handler.create(
        "AskUserQuestion", {"question": "Colour?"}, room_id="r1", channel_id="c1", actor_id="ann"
    )
    waiting = asyncio.ensure_future(handler.wait(asked.pending_id, timeout=None))
    assert await handler.aresolve(asked.pending_id, "blue", by="ann", surface="desk")
    assert await waiting == "blue"
    ids["answered"] = asked.pending_id

    asked = await handler.create("AskUserQuestion", {"question": "Café ou thé ?", "n": 2})
    assert await handler.areject(asked.pending_id, "pas maintenant", by="bob", surface="slack")
    with pytest.raises(HumanInputRejectedError):
        await handler.wait(asked.pending_id, timeout=None)
    ids["rejected"] = asked.pending_id

    if timeouts:
        asked = await handler.create("AskUserQuestion", {"question": "Still there?"})
        with pytest.raises(HumanInputTimeoutError):
            await handler.wait(asked.pending_id, timeout=0.001)
        ids["timed_out"] = asked.pending_id

        asked = await handler.create_detached("AskUserQuestion", {"question": "Later?"})
        assert handler.release(asked.pending_id)
        ids["released"] = asked.pending_id

    held = await handler.create_approval(
        "deploy",
        {"env": "prod"},
        approvers=["alice"],
        tool_schema=SCHEMA,
        room_id="r1",
        actor_id="ann",
        surface="desk",
        description="Deploys the service",
    )
    await handler.record(held.pending_id, new_entry("shown", actor="alice", surface="desk"))
    assert await handler.aresolve(held.pending_id, approve(), by="alice", surface="desk")
    ids["approved"] = held.pending_id

    held = await handler.create_approval(
        "deploy", {"env": "prod"}, approvers=["alice"], tool_schema=SCHEMA
    )
    assert await handler.aresolve(held.pending_id, edit({"env": "staging"}), by="alice")
    ids["edited"] = held.pending_id

    held = await handler.create_approval(
        "deploy", {"env": "prod"}, approvers=["alice", "bob", "carol"], quorum=2
    )
    assert await handler.aresolve(held.pending_id, approve(), by="alice", surface="desk")
    assert await handler.aresolve(held.pending_id, reject("too late"), by="bob", surface="cli")
    ids["vetoed"] = held.pending_id

    asked = await handler.create("AskUserQuestion", {"question": "Budget?"}, actor_id="ann")
    assert await handler.add_approvers(asked.pending_id, ["carol"], by="ann", surface="desk")
    assert await handler.aresolve(asked.pending_id, "10k", by="carol", surface="desk")
    ids["escalated"] = asked.pending_id

    if timeouts:
        asked = await handler.create("AskUserQuestion", {"question": "Left open?"})
        waiting = asyncio.ensure_future(handler.wait(asked.pending_id, timeout=None))
        await handler.close()
        with pytest.raises(RequestWithdrawnError):
            await waiting
        ids["closed"] = asked.pending_id
    return ids


async def heads(handler: HumanInputHandler, ids: dict[str, str]) -> dict[str, str]:
    """The digest of each request's last stored entry, once its whole chain is checked."""
    found: dict[str, str] = {}
    for name, pending_id in ids.items():
        texts = stored(await handler.history(pending_id))
        assert broken_link(pending_id, texts) is None
        found[name] = link_digest(texts[-1])
    return found


async def test_a_memory_handlers_chains_are_the_pinned_ones(seeded_ids: random.Random) -> None:
    handler = HumanInputHandler()
    seeded_ids.seed(27)
    ids = await the_sequence(handler, timeouts=True)
    assert await heads(handler, ids) == MEMORY_HEADS


async def test_a_durable_stores_chains_are_the_pinned_ones(
    seeded_ids: random.Random, backend: Backend
) -> None:
    async with backend.make(clock=FakeClock()) as store:
        handler = HumanInputHandler(store=store)
        seeded_ids.seed(27)
        ids = await the_sequence(handler, timeouts=False)
        found = await heads(handler, ids)
        await handler.close()
    assert found == DURABLE_HEADS
