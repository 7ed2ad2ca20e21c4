"""Typed history entries: each kind its model, read from and written back to the same JSON."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from roomkit import HumanInputHandler
from roomkit.core.exceptions import InvalidTextError
from roomkit.models.history import (
    ENTRY_MODELS,
    ENTRY_TYPES,
    Created,
    Decided,
    Settled,
    Shown,
    check_fields,
    parse_entry,
)
from roomkit.stores import check_entry, entry_text, entry_time, new_entry
from roomkit.stores._history import MAX_ENTRY_CHARS
from roomkit.stores.sqlite import SQLiteStore
from roomkit.tools.approvals import edit


def test_every_kind_has_its_model() -> None:
    assert {
        "created",
        "shown",
        "voted",
        "decided",
        "settled",
        "defaulted",
        "executed",
        "escalated",
        "delivered",
        "saved",
        "policy_decided",
        "grant_offered",
        "granted",
        "grant_used",
    } == ENTRY_TYPES
    for kind in ENTRY_TYPES:
        entry = parse_entry({"type": kind, "at": "2026-01-01T00:00:00Z", **_needed(kind)})
        assert entry.type == kind


def _needed(kind: str) -> dict[str, object]:
    return {
        "created": {"tool": "t", "digest": "d", "arguments": {}, "room": "r", "channel": "c"},
        "voted": {"decision": "approve"},
        "decided": {"decision": "approve"},
        "settled": {"status": "resolved"},
        "defaulted": {"answer": "no"},
        "escalated": {"approvers": ["ann"]},
    }.get(kind, {})


def test_an_entry_gives_back_exactly_its_fields() -> None:
    """A field left out stays out, a null stays null, an application's own field stays."""
    text = (
        '{"actor":null,"at":"2026-01-01T00:00:00Z","mine":{"n":1.5},"status":"resolved",'
        '"surface":"desk","type":"settled","withdrawn":null}'
    )
    entry = parse_entry(text)
    assert isinstance(entry, Settled)
    assert entry.withdrawn is None
    assert entry_text(entry.to_dict()) == text
    assert "digest" not in entry.to_dict()


@pytest.mark.parametrize(
    ("value", "problem"),
    [
        ("[]", "a JSON object"),
        ("{", "a JSON object"),
        ({"type": "liked", "at": "x"}, "type is one of"),
        ({"type": "settled", "at": "x", "status": "won"}, "status"),
        ({"type": "executed", "at": "x", "ran": 1}, "ran"),
        ({"type": "defaulted", "at": "x", "answer": 3}, "answer"),
    ],
)
def test_what_is_no_entry_of_its_kind_is_refused_by_name(value: object, problem: str) -> None:
    with pytest.raises(ValueError, match=problem):
        parse_entry(value)  # type: ignore[arg-type]


def test_the_store_check_takes_the_types() -> None:
    with pytest.raises(ValueError, match="not a 'executed' history entry: ran"):
        check_entry(new_entry("executed", ran="yes"))
    typed = check_entry(Shown(actor="ann", surface="desk", at="2026-01-01T00:00:00Z"))
    assert typed == {
        "type": "shown",
        "at": "2026-01-01T00:00:00Z",
        "actor": "ann",
        "surface": "desk",
    }


_VALUES: list[object] = [
    None,
    "x",
    "approve",
    "allow",
    "resolved",
    "\ud800",
    0,
    1,
    2**70,
    True,
    False,
    1.5,
    [],
    ["ann"],
    ("ann",),
    {},
    {"a": 1},
    {1: 2},
    b"x",
    object(),
]


@pytest.mark.parametrize("kind", sorted(ENTRY_TYPES))
def test_the_field_check_takes_what_the_model_takes(kind: str) -> None:
    """The check of plain fields, made without the validator, agrees with it on every
    field of every kind, an application's own field included."""
    model = ENTRY_MODELS[kind]
    for field in [*model.model_fields, "mine"]:
        for value in _VALUES:
            entry = {"type": kind, "at": "2026-01-01T00:00:00Z", field: value}
            try:
                model.model_validate(entry)
                valid = True
            except ValidationError:
                valid = False
            if valid:
                check_fields(model, entry)
            else:
                with pytest.raises(ValueError, match="history entry"):
                    check_fields(model, entry)


@pytest.mark.parametrize("durable", [False, True])
async def test_a_handler_records_and_reads_typed_entries(tmp_path: Path, durable: bool) -> None:
    store = SQLiteStore(tmp_path / "h.db") if durable else None
    if store is not None:
        await store.open()
    handler = HumanInputHandler(store=store) if store is not None else HumanInputHandler()
    try:
        held = await handler.create_approval(
            "pay", {"a": 1}, approvers=["ann"], tool_schema={"type": "object"}
        )
        assert await handler.record(held.pending_id, Shown(actor="ann", surface="desk")) == 1
        assert await handler.aresolve(held.pending_id, edit({"a": 2}), by="ann")
        entries = [parse_entry(entry) for entry in await handler.history(held.pending_id)]
        assert [type(entry) for entry in entries] == [Created, Shown, Decided, Settled]
        created, _, decided, settled = entries
        assert isinstance(created, Created)
        assert created.arguments == {"a": 1}
        assert created.approvers == ["ann"]
        assert isinstance(decided, Decided)
        assert (decided.decision, decided.arguments) == ("edit", {"a": 2})
        assert isinstance(settled, Settled)
        assert settled.status == "resolved"
        assert [entry.seq for entry in entries] == [0, 1, 2, 3]
        assert [entry.to_dict() for entry in entries] == await handler.history(held.pending_id)
    finally:
        await handler.close()
        if store is not None:
            await store.close()


@pytest.mark.parametrize(
    "nanos",
    [
        1_764_806_400_000_000_000,  # a whole second: no fraction, as isoformat spells it
        1_764_806_400_000_001_999,  # the first microsecond of that second
        1_764_806_459_999_999_000,  # the last microsecond before the next minute
        1_764_806_460_123_456_789,  # the next second, spelled anew
    ],
)
def test_an_entry_is_stamped_as_entry_time_spells_the_time(
    monkeypatch: pytest.MonkeyPatch, nanos: int
) -> None:
    """``new_entry`` stamps its ``at`` exactly as ``entry_time`` spells the same instant."""
    from datetime import UTC, datetime

    import roomkit.stores._history as history

    monkeypatch.setattr(history.time, "time_ns", lambda: nanos)
    at = datetime.fromtimestamp(nanos // 1000 / 1_000_000, UTC)
    at = datetime(*at.timetuple()[:6], microsecond=nanos // 1000 % 1_000_000, tzinfo=UTC)
    assert new_entry("shown")["at"] == entry_time(at)


def _created(arguments: dict[str, object]) -> dict[str, object]:
    return new_entry("created", tool="pay", digest="d", arguments=arguments, room="r", channel="")


@pytest.mark.parametrize(
    ("arguments", "error", "words"),
    [
        ({"to": ["\ud800"]}, InvalidTextError, "lone surrogate"),
        ({"to": ["\ud800"], "when": {1j}}, InvalidTextError, "lone surrogate"),
        ({"when": {1j}}, TypeError, "JSON-serialisable"),
        ({"to": ["x" * MAX_ENTRY_CHARS]}, ValueError, "at most"),
    ],
)
def test_a_nested_entry_is_refused_for_what_it_holds(
    arguments: dict[str, object], error: type[Exception], words: str
) -> None:
    """A lone surrogate is named first, then a value that is no JSON, then the length."""
    with pytest.raises(error, match=words):
        check_entry(_created(arguments))


def test_a_nested_entry_that_encodes_is_taken_as_given() -> None:
    entry = _created({"to": ["caf\u00e9"], "n": 1})
    assert check_entry(entry) == entry
