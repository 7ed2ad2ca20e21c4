"""The one walk that lets a call's arguments through without the checks that say where they
are wrong: it never lets through what those checks refuse, and takes the common shapes."""

from __future__ import annotations

import enum
import math
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from roomkit._storable import non_finite_at, non_json_at, storable_as_is, unencodable_text
from roomkit.models.json_limits import MAX_ARGUMENTS_DEPTH, arguments_problem, circular_at
from roomkit.tools.human_input import HumanInputHandler
from roomkit.tools.human_input.checks import check_arguments_size


class Colour(enum.IntEnum):
    RED = 1


class Name(str):
    pass


SCALARS = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.integers(min_value=10**19, max_value=10**120)
    | st.floats()
    | st.text()
    | st.sampled_from(
        ["\ud800", "x\udfff", "é\U0001f600", '\x00\x1f"\\', "a" * 9_500, "\x00" * 9_400]
    )
    | st.sampled_from([b"bytes", {1, 2}, Colour.RED, Name("n"), 1j, math.nan, -math.inf])
)
KEYS = st.text(max_size=8) | st.sampled_from([1, None, True, 2.5, "\udc00", ("t",)])
VALUES = st.recursive(
    SCALARS,
    lambda inner: (
        st.lists(inner, max_size=5)
        | st.lists(inner, max_size=3).map(tuple)
        | st.dictionaries(KEYS, inner, max_size=5)
    ),
    max_leaves=30,
)


def every_check_passes(arguments: Any) -> bool:
    return (
        circular_at(arguments) is None
        and arguments_problem(arguments) is None
        and non_json_at(arguments) is None
        and unencodable_text(arguments) is None
        and non_finite_at(arguments) is None
    )


@settings(max_examples=120, derandomize=True)
@given(st.dictionaries(KEYS, VALUES, max_size=6))
def test_what_the_walk_lets_through_every_check_passes(arguments: dict[Any, Any]) -> None:
    if storable_as_is(arguments):
        assert every_check_passes(arguments)


REFUSED = [
    ("value", math.nan),
    ("value", -math.inf),
    ("value", "\ud800"),
    ("value", "\x00" * 9_400),  # 56,402 characters as JSON
    ("value", 10**101),
    ("value", b"x"),
    ("value", {1, 2}),
    ("key", 1),
    ("key", None),
    ("key", 2.5),
    ("key", "\udc00"),
]
PLAIN = st.recursive(
    st.none() | st.booleans() | st.integers(-(10**6), 10**6) | st.floats(-1e6, 1e6) | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=20,
)


def containers(value: Any) -> list[Any]:
    found = [value] if isinstance(value, dict | list) else []
    children = value.values() if isinstance(value, dict) else value if found else []
    for child in children:
        found += containers(child)
    return found


@settings(max_examples=150, derandomize=True)
@given(
    st.dictionaries(st.text(), PLAIN, max_size=4),
    st.sampled_from(REFUSED),
    st.integers(min_value=0),
)
def test_one_value_the_checks_refuse_is_found_anywhere(
    arguments: dict[Any, Any], refused: tuple[str, Any], where: int
) -> None:
    places = containers(arguments)
    place = places[where % len(places)]
    kind, value = refused
    if kind == "key":
        place = place if isinstance(place, dict) else arguments
        place[value] = "value"
    elif isinstance(place, dict):
        place["planted"] = value
    else:
        place.append(value)

    assert not every_check_passes(arguments)
    assert not storable_as_is(arguments)


def nested(levels: int) -> dict[str, Any]:
    value: dict[str, Any] = {}
    for _ in range(levels - 1):
        value = {"a": value}
    return value


@pytest.mark.parametrize(
    "arguments",
    [
        {"questions": [{"question": "Continue?", "options": [{"label": "Yes"}, {"label": "No"}]}]},
        {"to": "ops@example.com", "amount": 12.5, "count": -3, "urgent": True, "note": None},
        {"path": "/tmp/ü.txt", "lines": [1, 2, 3], "meta": {"tags": [], "owner": {}}},
        nested(MAX_ARGUMENTS_DEPTH),
    ],
)
def test_the_common_shapes_take_the_one_walk(arguments: dict[str, Any]) -> None:
    assert storable_as_is(arguments)
    assert every_check_passes(arguments)


def holding_itself() -> dict[str, Any]:
    loop: dict[str, Any] = {"a": []}
    loop["a"].append(loop)
    return loop


def shared_many_times() -> dict[str, Any]:
    # 2**40 paths to the innermost list: written out, far past any size.
    value: list[Any] = ["x"]
    for _ in range(40):
        value = [value, value]
    return {"v": value}


@pytest.mark.parametrize(
    "arguments",
    [
        nested(MAX_ARGUMENTS_DEPTH + 1),
        holding_itself(),
        shared_many_times(),
        {"n": math.nan},
        {"n": [math.inf]},
        {"t": "\ud800"},
        {"\udc00": 1},
        {1: "one"},
        {"b": b"x"},
        {"c": Colour.RED},
        {"t": ("a", "b")},
        {"n": 10**30},
        {"t": "a" * 10_000},
    ],
    ids=lambda arguments: str(list(arguments)[:1])[:20],
)
def test_anything_else_is_left_to_the_checks(arguments: dict[Any, Any]) -> None:
    assert not storable_as_is(arguments)


async def test_a_create_still_says_where_nested_arguments_are_wrong() -> None:
    handler = HumanInputHandler()
    with pytest.raises(ValueError, match=r"nan at 'q\[0\]\.n'"):
        await handler.create("Ask", {"q": [{"n": math.nan}]}, room_id="r")
    with pytest.raises(TypeError, match=r"a value of type bytes at 'q\[0\]\.b'"):
        await handler.create("Ask", {"q": [{"b": b"x"}]}, room_id="r")
    with pytest.raises(ValueError, match="hold themselves"):
        await handler.create("Ask", holding_itself(), room_id="r")
    with pytest.raises(ValueError, match=f"more than {MAX_ARGUMENTS_DEPTH} levels"):
        await handler.create("Ask", nested(MAX_ARGUMENTS_DEPTH + 1), room_id="r")
    with pytest.raises(ValueError, match="at least"):
        check_arguments_size(shared_many_times())

    asked = await handler.create("Ask", {"q": [{"n": 1.5, "t": ("a",)}]}, room_id="r")

    assert asked.arguments == {"q": [{"n": 1.5, "t": ("a",)}]}
    assert await handler.list_pending(room_id="r") == [asked]
