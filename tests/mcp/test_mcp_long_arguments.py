"""A call whose arguments are longer than a request keeps, on every store: an error result
saying how long they are and what to send instead, and nothing stored.

The stores do real I/O, so this module runs on the real event loop (``conftest.py``).
"""

from __future__ import annotations

import json
from typing import Any

from tests.mcp.mcp_kit import client_of, text_of
from tests.tools.human_input.durable.store_fixtures import HandlerFactory

from roomkit.mcp import HumanInputMCPServer


def error(result: Any) -> str:
    assert result.is_error
    return str(json.loads(text_of(result))["error"])


async def test_a_question_longer_than_a_request_keeps_says_so_on_every_store(
    make_handler: HandlerFactory,
) -> None:
    handler = make_handler()
    async with client_of(HumanInputMCPServer(handler).server) as client:
        result = await client.call_tool("AskUserQuestion", {"question": "x" * 60_000})
    assert error(result) == (
        "Invalid arguments for 'AskUserQuestion': the arguments are 60,015 characters as JSON, "
        "over the 56,000 a request keeps: shorten them (the question, its options), or pass "
        "what identifies large content (an id, a URL), not the content"
    )
    assert await handler.list_pending() == []
