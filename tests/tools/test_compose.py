"""compose_tool_handlers: the first handler that serves a name answers."""

from __future__ import annotations

from typing import Any

import pytest

from roomkit.core.exceptions import UnservedToolCallError
from roomkit.tools import compose_tool_handlers
from roomkit.tools.compose import compose_tool_handlers as compose_from_module
from roomkit.tools.human_input import HumanInputToolHandler


class Serving:
    """A tool handler serving ``names``; it declines others by raising or by the envelope."""

    def __init__(self, label: str, names: set[str], *, envelope: bool = False) -> None:
        self.label = label
        self.names = names
        self.envelope = envelope
        self.calls: list[str] = []

    async def __call__(self, name: str, arguments: dict[str, Any]) -> str:
        self.calls.append(name)
        if name in self.names:
            return f"{self.label}:{name}"
        if self.envelope:
            return f'{{"error": "Unknown tool: {name}"}}'
        raise UnservedToolCallError(f"tool {name!r} is not served here")


def test_the_module_path_and_the_package_path_agree() -> None:
    assert compose_from_module is compose_tool_handlers


@pytest.mark.parametrize("count", [0, 1])
def test_fewer_than_two_handlers_raise(count: int) -> None:
    handlers = [Serving("a", {"x"})] * count

    with pytest.raises(ValueError, match="at least 2") as caught:
        compose_tool_handlers(*handlers)

    assert str(caught.value) == "compose_tool_handlers requires at least 2 handlers"


def test_a_non_callable_raises_type_error() -> None:
    with pytest.raises(TypeError, match="callables"):
        compose_tool_handlers(Serving("a", {"x"}), "not a handler")  # type: ignore[arg-type]


async def test_the_first_handler_to_answer_wins() -> None:
    first, second = Serving("first", {"x"}), Serving("second", {"x"})
    composed = compose_tool_handlers(first, second)

    assert await composed("x", {}) == "first:x"
    assert second.calls == []


async def test_a_raised_decline_passes_the_call_on() -> None:
    first, second = Serving("first", {"x"}), Serving("second", {"y"})
    composed = compose_tool_handlers(first, second)

    assert await composed("y", {}) == "second:y"
    assert (first.calls, second.calls) == (["y"], ["y"])


async def test_the_unknown_tool_envelope_passes_the_call_on() -> None:
    first = Serving("first", {"x"}, envelope=True)
    second = Serving("second", {"y"})
    composed = compose_tool_handlers(first, second)

    assert await composed("y", {}) == "second:y"


async def test_calls_go_through_every_handler_in_order() -> None:
    handlers = [Serving(label, {label}) for label in "abc"]
    composed = compose_tool_handlers(*handlers)

    assert await composed("c", {}) == "c:c"
    assert [h.calls for h in handlers] == [["c"], ["c"], ["c"]]


async def test_the_last_handlers_decline_is_returned_as_is() -> None:
    composed = compose_tool_handlers(Serving("a", {"x"}), Serving("b", {"y"}, envelope=True))

    assert await composed("z", {}) == '{"error": "Unknown tool: z"}'


async def test_the_last_handlers_raised_decline_propagates() -> None:
    composed = compose_tool_handlers(Serving("a", {"x"}), Serving("b", {"y"}))

    with pytest.raises(UnservedToolCallError, match="tool 'z' is not served here"):
        await composed("z", {})


async def test_an_error_envelope_that_is_not_a_decline_is_an_answer() -> None:
    async def failing(name: str, arguments: dict[str, Any]) -> str:
        return '{"error": "Unknown tool: x", "detail": "answered anyway"}'

    second = Serving("second", {"x"})
    composed = compose_tool_handlers(failing, second)

    assert await composed("x", {}) == '{"error": "Unknown tool: x", "detail": "answered anyway"}'
    assert second.calls == []


async def test_other_errors_are_not_declines() -> None:
    async def broken(name: str, arguments: dict[str, Any]) -> str:
        raise KeyError(name)

    second = Serving("second", {"x"})
    composed = compose_tool_handlers(broken, second)

    with pytest.raises(KeyError):
        await composed("x", {})
    assert second.calls == []


async def test_the_composed_handler_passes_the_arguments() -> None:
    seen: list[dict[str, Any]] = []

    async def record(name: str, arguments: dict[str, Any]) -> str:
        seen.append(arguments)
        return "ok"

    composed = compose_tool_handlers(Serving("a", set()), record)

    assert await composed("x", {"q": 1}) == "ok"
    assert seen == [{"q": 1}]


async def test_human_input_tools_compose_with_other_tools() -> None:
    human = HumanInputToolHandler({"Ask"})

    async def answer(event: Any) -> bool:
        human.handler.resolve(event.pending_id, "asked")
        return True

    human.handler.on_input_required = answer
    others = Serving("others", {"search"})
    composed = compose_tool_handlers(human, others)

    assert await composed("Ask", {}) == "asked"
    assert await composed("search", {}) == "others:search"
    assert others.calls == ["search"]
