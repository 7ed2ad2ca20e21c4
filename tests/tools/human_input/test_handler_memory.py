"""A handler on the memory store holds what its retention holds, however long it runs: a
request's history lives as long as the store knows the request (open, retained, or kept by
``audit_retention``)."""

from __future__ import annotations

import pytest
from tests.traced_memory import tracing

from roomkit import HumanInputHandler
from roomkit.core.exceptions import UnknownRequestError
from roomkit.stores import broken_link, entry_text, new_entry
from roomkit.tools.human_input import MemoryStore


async def cycles(handler: HumanInputHandler, count: int) -> list[str]:
    """``count`` create -> resolve -> wait cycles; their ids."""
    ids = []
    for _ in range(count):
        pending = await handler.create("Ask", {"question": "Colour?"}, room_id="r")
        handler.resolve(pending.pending_id, "blue")
        assert await handler.wait(pending.pending_id) == "blue"
        ids.append(pending.pending_id)
    return ids


async def test_settled_requests_leave_nothing_behind() -> None:
    """6,000 settles hold what 1,000 hold, within 128 kB (26 bytes a settle): the last 128
    outcomes and their histories.

    Before, each settled request left its history behind (about 770 bytes): 3.8 MB here.
    """
    handler = HumanInputHandler()
    with tracing() as traced:
        await cycles(handler, 1_000)
        few = traced()
        await cycles(handler, 5_000)
        many = traced()
    assert many - few < 128 * 1024


async def test_a_history_lives_as_long_as_its_outcome_replays() -> None:
    handler = HumanInputHandler(retention=3)
    ids = await cycles(handler, 5)
    for pending_id in ids[-3:]:
        history = await handler.history(pending_id)
        assert [entry["type"] for entry in history] == ["created", "settled"]
    for pending_id in ids[:2]:
        assert await handler.history(pending_id) == []
        with pytest.raises(UnknownRequestError, match="audit_retention"):
            await handler.record(pending_id, new_entry("executed"))


async def test_an_open_requests_history_stays_whatever_settles_after_it() -> None:
    handler = HumanInputHandler(retention=1)
    open_one = await handler.create("Ask", {"question": "Still open?"}, actor_id="ann")
    await handler.record(open_one.pending_id, new_entry("shown", surface="desk"))
    await cycles(handler, 50)
    history = await handler.history(open_one.pending_id)
    assert [entry["type"] for entry in history] == ["created", "shown"]
    assert history[0]["actor"] == "ann"


async def test_audit_retention_keeps_more_histories_than_outcomes() -> None:
    handler = HumanInputHandler(store=MemoryStore(retention=2, audit_retention=4))
    ids = await cycles(handler, 6)
    assert [await handler.get_request(pending_id) is not None for pending_id in ids] == [
        False,
        False,
        False,
        False,
        True,
        True,
    ]
    kept = [bool(await handler.history(pending_id)) for pending_id in ids]
    assert kept == [False, False, True, True, True, True]
    # A kept history still takes entries, and stays one chain.
    assert await handler.record(ids[2], new_entry("executed")) == 2
    history = await handler.history(ids[2])
    texts = [entry_text({k: v for k, v in entry.items() if k != "seq"}) for entry in history]
    assert broken_link(ids[2], texts) is None


async def test_a_history_read_twice_is_the_same_chain() -> None:
    """Recorded cheaply, linked at the first read; later reads and appends build on it."""
    handler = HumanInputHandler()
    asked = await handler.create("Ask", {"question": "?"})
    handler.reject(asked.pending_id, "no")
    first = await handler.history(asked.pending_id)
    assert await handler.history(asked.pending_id) == first
    await handler.record(asked.pending_id, new_entry("defaulted", answer="maybe"))
    assert (await handler.history(asked.pending_id))[:2] == first


@pytest.mark.parametrize(
    ("retention", "audit_retention", "error"),
    [(5, 4, ValueError), (5, "9", TypeError), (5, True, TypeError), (0, -1, ValueError)],
)
def test_a_bad_audit_retention_is_refused(
    retention: int, audit_retention: object, error: type[Exception]
) -> None:
    with pytest.raises(error, match="audit_retention"):
        MemoryStore(retention=retention, audit_retention=audit_retention)  # type: ignore[arg-type]


async def test_an_entry_is_recorded_as_it_was_when_given() -> None:
    """An approval's arguments and an appended entry's lists and objects are recorded as
    they were at the call: the caller changing them afterwards changes no entry."""
    handler = HumanInputHandler()
    arguments = {"to": ["ann"], "amount": {"value": 5}, "memo": "rent"}
    request = await handler.create_approval("pay", arguments, approvers=["bob"], room_id="r")
    entry = new_entry("executed", content={"rows": [1, 2]}, ran=True)
    await handler.record(request.pending_id, entry)
    arguments["to"].append("eve")
    arguments["amount"]["value"] = 5000
    arguments["memo"] = "changed"
    entry["content"]["rows"].append(3)
    history = await handler.history(request.pending_id)
    assert history[0]["arguments"] == {"to": ["ann"], "amount": {"value": 5}, "memo": "rent"}
    assert history[-1]["content"] == {"rows": [1, 2]}
    texts = [entry_text({k: v for k, v in item.items() if k != "seq"}) for item in history]
    assert broken_link(request.pending_id, texts) is None
