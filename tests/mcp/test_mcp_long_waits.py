"""Waits that outlast the client: each round held, "still waiting" with a sealed state that
names the wait, a retry answered after a restart and by another server on the store."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import mcp_types as types
import pytest
from mcp import Client
from mcp.client._input_required import (
    _STATE_ONLY_BACKOFF_CAP_SECONDS,
    _STATE_ONLY_BACKOFF_INITIAL_SECONDS,
    DEFAULT_INPUT_REQUIRED_MAX_ROUNDS,
)
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.shared.exceptions import MCPError
from mcp_types.methods import is_input_required

from roomkit.auth import TokenAuthenticator
from roomkit.desk.stores import close_stores, open_stores
from roomkit.mcp import HumanInputMCPServer
from roomkit.mcp.waits import state_key
from roomkit.notify.links import AnswerLinks
from roomkit.tools.human_input import HumanInputHandler

DESK_SECRET = b"mcp-long-waits-secret-0123456789abcdef"
KEYS = [state_key(DESK_SECRET)]
ASK = ("AskUserQuestion", {"question": "Which colour?"})


class Process:
    """One ``roomkit mcp`` process: its own store objects and handler on the shared file."""

    def __init__(
        self, url: str, *, hold: float, keys: list[bytes] = KEYS, actor: str = "alice"
    ) -> None:
        self.questions, self.rooms = open_stores(url)
        self.handler = HumanInputHandler(store=self.questions)
        self.server = HumanInputMCPServer(
            self.handler, actor=actor, timeout=120, hold=hold, state_keys=keys
        )

    async def stop(self) -> None:
        await self.handler.close()
        await close_stores(self.questions, self.rooms)


@pytest.fixture
async def url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'kit.db'}"


def _unheld_rounds_span() -> float:
    """The longest the SDK's client waits through its rounds when each is answered at once."""
    delay, total = _STATE_ONLY_BACKOFF_INITIAL_SECONDS, 0.0
    for _ in range(DEFAULT_INPUT_REQUIRED_MAX_ROUNDS):
        total += delay
        delay = min(delay * 2, _STATE_ONLY_BACKOFF_CAP_SECONDS)
    return total


async def test_the_default_client_loop_waits_through_a_late_answer(url: str) -> None:
    """The answer comes after more waiting than ten unheld rounds span; the client's
    default loop, ten rounds at most, still gets it."""
    hold = 0.3
    stills = 8
    assert stills * hold > _unheld_rounds_span()
    assert stills < DEFAULT_INPUT_REQUIRED_MAX_ROUNDS
    process = Process(url, hold=hold)
    answered: list[int] = []

    async def answer_late(ctx: ServerRequestContext[Any], call_next: CallNext) -> HandlerResult:
        result = await call_next(ctx)
        if is_input_required(result):
            answered.append(1)
            if len(answered) == stills:
                [request] = await process.handler.list_pending()
                await process.handler.aresolve(request.pending_id, "blue", by="alice")
        return result

    process.server.server.middleware.insert(0, answer_late)
    try:
        async with Client(process.server.server) as client:
            result = await client.call_tool(*ASK)
        assert [block.text for block in result.content] == ["blue"]  # type: ignore[union-attr]
        assert len(answered) == stills
    finally:
        await process.stop()


async def test_a_retry_is_answered_after_a_restart_and_by_another_process(url: str) -> None:
    first = Process(url, hold=0.05)
    async with Client(first.server.server) as client:
        still = await client.session.call_tool(*ASK, allow_input_required=True)
    assert isinstance(still, types.InputRequiredResult)
    state = still.request_state
    assert state is not None
    assert state.startswith("v1.")  # sealed: only a server on the keys reads it
    [request] = await first.handler.list_pending()
    await first.stop()

    # The process restarts: the retry re-attaches to the same open request.
    second = Process(url, hold=0.05)
    desk = Process(url, hold=0.05)
    third = Process(url, hold=5)
    try:
        async with Client(second.server.server) as client:
            again = await client.session.call_tool(
                *ASK, request_state=state, allow_input_required=True
            )
        assert isinstance(again, types.InputRequiredResult)
        assert [r.pending_id for r in await second.handler.list_pending()] == [request.pending_id]
        # Answered on the desk's process; the retry comes to a third process on the store.
        await desk.handler.aresolve(request.pending_id, "green", by="alice")
        async with Client(third.server.server) as client:
            done = await client.session.call_tool(
                *ASK, request_state=again.request_state, allow_input_required=True
            )
        assert isinstance(done, types.CallToolResult)
        assert [block.text for block in done.content] == ["green"]  # type: ignore[union-attr]
    finally:
        for process in (second, desk, third):
            await process.stop()


async def test_a_state_sealed_with_other_keys_or_for_another_call_is_refused(url: str) -> None:
    first = Process(url, hold=0.05)
    stranger = Process(url, hold=0.05, keys=[state_key(b"another-secret-0123456789abcdefgh")])
    try:
        async with Client(first.server.server) as client:
            still = await client.session.call_tool(*ASK, allow_input_required=True)
            assert isinstance(still, types.InputRequiredResult)
            other = {"question": "Which size?"}
            with pytest.raises(MCPError, match="requestState"):
                await client.session.call_tool(
                    "AskUserQuestion", other, request_state=still.request_state
                )
        async with Client(stranger.server.server) as client:
            with pytest.raises(MCPError, match="requestState"):
                await client.session.call_tool(*ASK, request_state=still.request_state)
    finally:
        await first.stop()
        await stranger.stop()


async def test_a_state_minted_for_one_person_is_refused_to_another(url: str) -> None:
    """alice's "still waiting" state, handed to bob's server on the same keys and store, is
    refused as any state not minted for its caller."""
    alices = Process(url, hold=0.05)
    bobs = Process(url, hold=0.05, actor="bob")
    try:
        async with Client(alices.server.server) as client:
            still = await client.session.call_tool(*ASK, allow_input_required=True)
        assert isinstance(still, types.InputRequiredResult)
        async with Client(bobs.server.server) as client:
            with pytest.raises(MCPError, match="requestState"):
                await client.session.call_tool(
                    *ASK, request_state=still.request_state, allow_input_required=True
                )
        [request] = await alices.handler.list_pending()
        assert request.actor_id == "alice"
    finally:
        await alices.stop()
        await bobs.stop()


async def test_hold_needs_a_durable_store() -> None:
    with pytest.raises(ValueError, match="durable store"):
        HumanInputMCPServer(HumanInputHandler(), actor="alice", hold=5)


async def test_the_first_still_waiting_offers_a_desk_link_that_answers(url: str) -> None:
    """URL mode: a client that takes URL elicitations is shown a single-use desk link once;
    the person answers through it on the desk, and the call gets the answer."""
    process = Process(url, hold=0.05)
    process.server.links = AnswerLinks("https://desk.example", secret=DESK_SECRET)
    shown: list[str] = []

    async def show(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        assert isinstance(params, types.ElicitRequestURLParams)
        shown.append(params.url)
        # The person opens the link: the desk reads the token and answers as them.
        token = params.url.partition("#token=")[2]
        principal = await TokenAuthenticator(DESK_SECRET).authenticate(token)
        assert principal.request_id is not None
        await process.handler.aresolve(principal.request_id, "teal", by=principal.actor_id)
        return types.ElicitResult(action="accept")

    try:
        async with Client(process.server.server, elicitation_callback=show) as client:
            result = await client.call_tool(*ASK)
        assert [block.text for block in result.content] == ["teal"]  # type: ignore[union-attr]
        assert len(shown) == 1
        assert shown[0].startswith("https://desk.example/#token=")
    finally:
        await process.stop()
