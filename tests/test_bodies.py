"""``roomkit.bodies``: JSON read under limits, the middleware that applies them, the route class."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
from fastapi import APIRouter, FastAPI
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import BaseModel

from roomkit.bodies import (
    BodyLimits,
    BodyRefusedError,
    BoundedBodies,
    bounded_route,
    json_depth,
    json_rpc_refusal,
    load_json,
)
from roomkit.core.exceptions import RoomKitError

DEEP = "[" * 50_000


@pytest.mark.parametrize(
    ("text", "words"),
    [
        (DEEP, "50000 levels deep; at most 64"),
        ("[" * 65 + "]" * 65, "65 levels deep"),
        ('{"a":' * 65 + "1" + "}" * 65, "65 levels deep"),
        ('[{"a": [' * 22 + "]}]" * 22, "66 levels deep"),
        ("9" * 101, "101 characters long; at most 100"),
        ('{"a": -' + "1" * 200 + ".5e10}", "characters long"),
        ('{"a": 1e999}', "beyond a float's range"),
        ('{"a": -1E400}', "beyond a float's range"),
        ('{"a": NaN}', "NaN, which is not a JSON number"),
        ("[-Infinity]", "-Infinity, which is not a JSON number"),
        ('{"a": 1, "a": 1}', "names the key 'a' twice"),
        ('{"ok": [{"b": 1, "c": 2, "b": 3}]}', "names the key 'b' twice"),
        ('{"\\ud800": 1, "\\ud800": 2}', "names the key '\\ud800' twice"),
        ("{", "is not valid JSON"),
        ('"a\x00b"', "is not valid JSON: Invalid control character"),
        ("\ufeff{}", "is not valid JSON"),
        ("", "is not valid JSON"),
    ],
)
def test_a_refused_text_gets_a_400_saying_why(text: str, words: str) -> None:
    with pytest.raises(BodyRefusedError) as refused:
        load_json(text)
    assert refused.value.status == 400
    assert words in str(refused.value)
    str(refused.value).encode("ascii")  # sent back as it is: nothing of the body but ASCII


def test_bytes_are_utf_8_and_a_body_over_the_cap_is_a_413() -> None:
    with pytest.raises(BodyRefusedError, match="not UTF-8 text"):
        load_json(b'{"a": "\xff"}')
    limits = BodyLimits(max_bytes=10)
    for data in (b"[" + b"1," * 5 + b"1]", "[" + '"é",' * 3 + '"é"]'):
        with pytest.raises(BodyRefusedError) as refused:
            load_json(data, limits)
        assert refused.value.status == 413
    assert load_json('"éé"', BodyLimits(max_bytes=6)) == "éé"


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("[" * 64 + "]" * 64, json.loads("[" * 64 + "]" * 64)),
        ('{"a": "[[[[[[' + "[" * 100 + '"}', {"a": "[" * 106}),
        ('["\\"' + "[" * 100 + '"]', ['"' + "[" * 100]),
        ("9" * 100, int("9" * 100)),
        ('{"a": "\\ud800"}', {"a": "\ud800"}),
        ('{"a\\u0000": "b\\u0000"}', {"a\x00": "b\x00"}),
        ('{"a": {"a": 1}, "b": [{"a": 2}, {"a": 3}]}', {"a": {"a": 1}, "b": [{"a": 2}, {"a": 3}]}),
        ("-0.5e-300", -0.5e-300),
    ],
)
def test_what_is_taken_reads_as_json_reads_it(text: str, value: Any) -> None:
    """Brackets in strings, lone surrogates and NUL pass: whoever stores the text checks it."""
    assert load_json(text) == value
    assert load_json(text.encode("utf-8", "surrogatepass")) == value


def test_the_what_names_the_text_in_every_message() -> None:
    with pytest.raises(BodyRefusedError, match=r"^Slack's payload nests arrays"):
        load_json(DEEP, what="Slack's payload")
    with pytest.raises(BodyRefusedError, match=r"^The frame holds a number"):
        load_json("1" * 200, what="The frame")


def test_the_error_is_in_the_tree_and_a_value_error() -> None:
    assert issubclass(BodyRefusedError, RoomKitError)
    assert issubclass(BodyRefusedError, ValueError)


@pytest.mark.parametrize(
    "options", [{"max_bytes": 0}, {"max_depth": True}, {"max_number_chars": 1.5}]
)
def test_limits_refuse_nonsense(options: dict[str, Any]) -> None:
    with pytest.raises(ValueError, match="BodyLimits"):
        BodyLimits(**options)


def _depth(value: Any) -> int:
    """The nesting of a parsed value, walked without recursion."""
    deepest, stack = 0, [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict | list):
            deepest = max(deepest, depth + 1)
            stack.extend(
                (child, depth + 1) for child in (item.values() if isinstance(item, dict) else item)
            )
    return deepest


def _nested(children: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    keys = st.text(alphabet='[]{}"\\a')
    return st.lists(children, max_size=4) | st.dictionaries(keys, children, max_size=4)


JSON_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(10**30), 10**30)
    | st.text(alphabet='[]{}"\\ab,:\x00é'),
    _nested,
    max_leaves=30,
)


@settings(max_examples=200, derandomize=True)
@given(JSON_VALUES)
def test_the_scan_measures_the_depth_the_parser_sees(value: Any) -> None:
    assert json_depth(json.dumps(value)) == _depth(value)


@settings(max_examples=200, derandomize=True)
@given(JSON_VALUES, st.integers(min_value=1, max_value=6))
def test_a_value_is_refused_exactly_when_it_nests_deeper_than_the_limit(
    value: Any, limit: int
) -> None:
    text, depth = json.dumps(value), _depth(value)
    if depth <= limit:
        assert load_json(text, BodyLimits(max_depth=limit)) == value
    else:
        with pytest.raises(BodyRefusedError, match=f"{depth} levels deep; at most {limit} "):
            load_json(text, BodyLimits(max_depth=limit))


@settings(max_examples=300, derandomize=True)
@given(st.text(alphabet='[]{}"\\:,1e.-a \x00\ud800') | st.binary())
def test_any_text_is_read_or_refused_with_a_body_error(data: str | bytes) -> None:
    try:
        load_json(data, BodyLimits(max_depth=3, max_number_chars=3))
    except BodyRefusedError as refused:
        str(refused).encode("ascii")


# -- the middleware and the route class -----------------------------------------------------


async def echo(scope: dict[str, Any], receive: Any, send: Any) -> None:
    """An ASGI app that answers with the body it read."""
    body = b""
    while True:
        message = await receive()
        body += message.get("body", b"")
        if not message.get("more_body"):
            break
    await send({"type": "http.response.start", "status": 200, "headers": []})
    await send({"type": "http.response.body", "body": body})


def client_of(app: Any) -> httpx.AsyncClient:
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://test")


async def test_the_middleware_hands_the_app_the_same_bytes() -> None:
    body = json.dumps({"a": [1, "é", {"b": None}]}).encode()
    async with client_of(BoundedBodies(echo)) as client:
        answered = await client.post(
            "/", content=body, headers={"content-type": "application/json"}
        )
        empty = await client.delete("/")
        fetched = await client.request("GET", "/", content=DEEP.encode())
    assert (answered.status_code, answered.content) == (200, body)
    assert (empty.status_code, empty.content) == (200, b"")
    assert fetched.status_code == 200, "a GET's body is nobody's to parse"


@pytest.mark.parametrize("content_type", ["application/json", "text/plain", None])
async def test_the_middleware_refuses_deep_json_before_the_app(content_type: str | None) -> None:
    headers = {} if content_type is None else {"content-type": content_type}
    async with client_of(BoundedBodies(echo)) as client:
        refused = await client.post("/", content=DEEP.encode(), headers=headers)
    assert refused.status_code == 400
    assert refused.json() == {
        "detail": "The body nests arrays and objects 50000 levels deep; at most 64 are taken"
    }


async def test_a_form_is_only_measured_and_json_rpc_gets_its_own_errors() -> None:
    form = b"payload=" + b"%5B" * 1000
    app = BoundedBodies(echo, BodyLimits(max_bytes=4000), refusal=json_rpc_refusal)
    async with client_of(app) as client:
        taken = await client.post(
            "/", content=form, headers={"content-type": "application/x-www-form-urlencoded"}
        )
        deep = await client.post("/", content=DEEP[:3000].encode())
        big = await client.post("/", content=b"[" + b"1," * 3000 + b"1]")
    assert (taken.status_code, taken.content) == (200, form)
    assert deep.status_code == 400
    assert deep.json()["error"]["code"] == -32700
    assert (deep.json()["jsonrpc"], deep.json()["id"]) == ("2.0", None)
    assert big.status_code == 413
    assert big.json()["error"]["code"] == -32600


async def test_a_declared_length_over_the_cap_is_refused_unread() -> None:
    reads = 0

    async def receive() -> dict[str, Any]:
        nonlocal reads
        reads += 1
        return {"type": "http.request", "body": b"[]", "more_body": False}

    sent: list[dict[str, Any]] = []

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    for length in (b"101", b"9" * 5000):
        scope = {"type": "http", "method": "POST", "headers": [(b"content-length", length)]}
        await BoundedBodies(echo, BodyLimits(max_bytes=100))(scope, receive, send)
    assert reads == 0
    assert [m["status"] for m in sent if m["type"] == "http.response.start"] == [413, 413]


async def test_a_streamed_body_is_refused_as_it_passes_the_cap() -> None:
    async def chunks() -> AsyncIterator[bytes]:
        for _ in range(100):
            yield b"[1]," * 1000

    async with client_of(BoundedBodies(echo, BodyLimits(max_bytes=10_000))) as client:
        refused = await client.post("/", content=chunks())
    assert refused.status_code == 413
    assert refused.json() == {"detail": "The body is over the 10000-byte limit: send less"}


async def test_a_client_gone_mid_body_reaches_no_app() -> None:
    called = False

    async def app(scope: Any, receive: Any, send: Any) -> None:
        nonlocal called
        called = True

    messages = iter(
        [{"type": "http.request", "body": b"[", "more_body": True}, {"type": "http.disconnect"}]
    )

    async def receive() -> Any:
        return next(messages)

    async def send(message: Any) -> None:
        raise AssertionError(f"nothing is sent to a client gone: {message}")

    await BoundedBodies(app)({"type": "http", "method": "POST", "headers": []}, receive, send)
    assert not called


class Item(BaseModel):
    name: str


async def test_a_bounded_route_checks_the_body_before_fastapi_parses_it() -> None:
    router = APIRouter(route_class=bounded_route(BodyLimits(max_depth=4)))

    @router.post("/items")
    async def add(item: Item) -> dict[str, str]:
        return {"name": item.name}

    app = FastAPI()
    app.include_router(router)
    async with client_of(app) as client:
        fine = await client.post("/items", json={"name": "x"})
        deep = await client.post("/items", content=b'{"name": [[[[["x"]]]]]}')
        twice = await client.post("/items", content=b'{"name": "x", "name": "y"}')
    assert fine.json() == {"name": "x"}
    assert deep.status_code == twice.status_code == 400
    assert "6 levels deep; at most 4" in deep.json()["detail"]
    assert "names the key 'name' twice" in twice.json()["detail"]
