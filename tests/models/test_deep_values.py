"""The checks that say where in a value something is wrong walk it with a path per value;
a value nested many thousand levels deep costs them memory in proportion to its depth, not
its square (a request's arguments 6,000 levels deep held some 150 MB while ``create``
worked out that they were too deep), and the place they name is the same."""

from __future__ import annotations

import tracemalloc
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from roomkit.core.exceptions import ArgumentsTooLargeError
from roomkit.tools.human_input import HumanInputHandler
from roomkit.tools.human_input.checks import check_request_text

LEVELS = 6_000
PEAK = 40 * 1024 * 1024
"""Bytes a walk of a value :data:`LEVELS` deep may hold at most (it holds a few MB)."""


def nested(levels: int, leaf: object = "leaf") -> list[Any]:
    """A list holding a list, ``levels`` deep, with ``leaf`` at the bottom."""
    value: list[Any] = [leaf]
    for _ in range(levels - 1):
        value = [value]
    return value


@contextmanager
def peak() -> Iterator[Callable[[], int]]:
    """Trace what the block allocates; gives the most it held at once (read at its end)."""
    most = [0]
    tracemalloc.start()
    try:
        yield lambda: most[0]
    finally:
        most[0] = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()


async def test_create_refuses_arguments_nested_thousands_deep_without_holding_their_paths() -> None:
    arguments = {"tree": nested(LEVELS)}
    handler = HumanInputHandler()

    with peak() as held, pytest.raises(ArgumentsTooLargeError) as caught:
        await handler.create("ask", arguments)

    assert "more than 24 levels deep (level 25 at 'tree[0][0]" in str(caught.value)
    assert held() < PEAK
    assert await handler.list_pending() == []


@pytest.mark.parametrize(
    ("leaf", "named"),
    [
        (float("nan"), "nan at 'tree[0][0][0]"),
        (b"bytes", "a value of type bytes at 'tree[0][0][0]"),
        ("\ud800", "a lone surrogate (U+D800) at character 0 of 'tree[0][0][0]"),
    ],
    ids=["NaN", "bytes", "a lone surrogate"],
)
def test_what_is_wrong_at_the_bottom_of_a_deep_value_is_named_there(
    leaf: object, named: str
) -> None:
    with peak() as held, pytest.raises((TypeError, ValueError)) as caught:
        check_request_text("ask", {"tree": nested(LEVELS, leaf)}, "", "", "", None)

    assert named in str(caught.value)
    assert str(caught.value).count("[0]") == LEVELS
    assert held() < PEAK


def test_a_loop_at_the_bottom_of_a_deep_value_is_named_there() -> None:
    top: list[Any] = []
    bottom = top
    for _ in range(LEVELS - 1):
        inner: list[Any] = []
        bottom.append(inner)
        bottom = inner
    bottom.append(top)

    with peak() as held, pytest.raises(ValueError, match="arguments hold themselves") as caught:
        check_request_text("ask", {"tree": top}, "", "", "", None)

    assert f"at 'tree{'[0]' * LEVELS}'" in str(caught.value)
    assert held() < PEAK
