"""The stdio lines refused before the SDK's parser reads them: each request answered under
its id where it names one, however deep the rest of it nests."""

from __future__ import annotations

from collections.abc import AsyncIterator

import anyio
import mcp_types as types
import pytest
from mcp.shared.message import SessionMessage

from roomkit.mcp._lines import CheckedLines


async def _answers(*lines: str) -> list[dict[str, object]]:
    """What the checked lines answer on the write stream; the lines taken end the run."""

    async def given() -> AsyncIterator[str]:
        for line in lines:
            yield line

    send, receive = anyio.create_memory_object_stream[SessionMessage](len(lines))
    with receive:
        with send:
            checked = CheckedLines(given())
            checked.answer_on(send)
            taken = [line async for line in checked]
        answers = [message.message.model_dump(exclude_none=True) async for message in receive]
    assert taken == [lines[-1]]
    return answers


def _nested(levels: int) -> str:
    return "[" * levels + "]" * levels


@pytest.mark.parametrize("levels", [65, 2_000, 100_000], ids=["just-over", "deep", "deepest"])
async def test_a_request_nesting_too_deep_is_answered_under_its_id(levels: int) -> None:
    deep = '{"jsonrpc": "2.0", "id": 7, "method": "tools/list", "params": {"x": %s}}'
    last = '{"jsonrpc": "2.0", "id": 8, "method": "ping"}'

    [answer] = await _answers(deep % _nested(levels), last)

    assert answer["id"] == 7
    assert answer["error"]["code"] == types.INVALID_REQUEST  # type: ignore[index]
    assert "levels deep; at most 64 are taken" in answer["error"]["message"]  # type: ignore[index]


async def test_the_id_after_the_deep_part_is_read_too() -> None:
    deep = '{"params": {"x": %s, "s": "a \\"}\\" ]"}, "id": "r-9", "method": "tools/list"}'

    [answer] = await _answers(deep % _nested(200), '{"jsonrpc": "2.0", "id": 1, "method": "ping"}')

    assert answer["id"] == "r-9"


@pytest.mark.parametrize(
    "line",
    [
        '{"id": 1, "id": 2, "method": "tools/list", "params": %s}',
        "[%s]",
        '{"id": {"a": %s}, "method": "tools/list"}',
    ],
    ids=["id-twice", "no-object", "id-not-readable"],
)
async def test_a_deep_line_without_one_readable_id_gets_the_parse_error(line: str) -> None:
    [answer] = await _answers(line % _nested(100), '{"jsonrpc": "2.0", "id": 1, "method": "ping"}')

    assert answer.get("id") is None
    assert answer["error"]["code"] == types.PARSE_ERROR  # type: ignore[index]


async def test_a_deep_notification_is_dropped_unanswered() -> None:
    deep = '{"jsonrpc": "2.0", "method": "notifications/progress", "params": %s}'

    assert (
        await _answers(deep % _nested(100), '{"jsonrpc": "2.0", "id": 1, "method": "ping"}') == []
    )
