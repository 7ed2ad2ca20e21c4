"""A connection may hold only so many calls open at once: each puts a question to a person."""

from __future__ import annotations

import pytest
from tests.mcp.mcp_kit import Call, client_of, open_request, served, settled, text_of

from roomkit.mcp import HumanInputMCPServer
from roomkit.tools.human_input import HumanInputHandler

REFUSED = (
    '{"error": "Tool \'AskUserQuestion\' did not run: 2 questions from this connection are '
    'already waiting: wait for an answer before asking again"}'
)


async def test_a_call_over_the_cap_is_refused_and_an_answer_frees_a_place() -> None:
    """Nobody is asked for the call over the cap; once one is answered, the next is asked."""
    async with served(max_open_calls=2) as (handler, client):
        first = Call(client, "AskUserQuestion", {"question": "Tea?"})
        await first.wait_asked()
        second = Call(client, "AskUserQuestion", {"question": "Coffee?"})
        await second.wait_asked()
        refused = await client.call_tool("AskUserQuestion", {"question": "Water?"})
        assert (refused.is_error, text_of(refused)) == (True, REFUSED)
        waiting = await handler.list_pending()
        assert sorted(request.arguments["question"] for request in waiting) == ["Coffee?", "Tea?"]
        [tea] = [request for request in waiting if request.arguments["question"] == "Tea?"]
        assert handler.resolve(tea.pending_id, "yes")
        assert text_of(await first.result()) == "yes"
        third = Call(client, "AskUserQuestion", {"question": "Water?"})
        await third.wait_asked()
        assert len(await handler.list_pending()) == 2
        third.task.cancel()
        second.task.cancel()


async def test_a_cancelled_call_frees_its_place() -> None:
    async with served(max_open_calls=1) as (handler, client):
        first = Call(client, "ConfirmAction", {"action": "Deploy"})
        await first.wait_asked()
        request = await open_request(handler)
        first.task.cancel()
        await settled(handler, request.pending_id)
        again = Call(client, "ConfirmAction", {"action": "Deploy"})
        await again.wait_asked()
        again.task.cancel()


async def test_each_connection_has_a_cap_of_its_own() -> None:
    """Another client's call waiting on the same server takes no place of this one's."""
    handler = HumanInputHandler()
    server = HumanInputMCPServer(handler, max_open_calls=1)
    async with client_of(server.server) as one, client_of(server.server) as other:
        first = Call(one, "AskUserQuestion", {"question": "Tea?"})
        await first.wait_asked()
        second = Call(other, "AskUserQuestion", {"question": "Coffee?"})
        await second.wait_asked()
        refused = await one.call_tool("AskUserQuestion", {"question": "Water?"})
        assert refused.is_error
        assert "1 questions from this connection" in text_of(refused)
        assert len(await handler.list_pending()) == 2
        first.task.cancel()
        second.task.cancel()


@pytest.mark.parametrize(("cap", "error"), [(0, ValueError), (True, TypeError), (2.5, TypeError)])
def test_a_cap_that_is_no_positive_whole_number_is_refused(cap: object, error: type) -> None:
    with pytest.raises(error, match="max_open_calls"):
        HumanInputMCPServer(HumanInputHandler(), max_open_calls=cap)  # type: ignore[arg-type]
