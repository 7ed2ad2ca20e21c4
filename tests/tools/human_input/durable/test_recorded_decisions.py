"""A decision a store written by an earlier version holds with a lone surrogate in its text
(the JSON escape ``"\\ud800"``, which no decision takes any more) reads back with U+FFFD in
its place; one whose edited arguments hold it stays refused: they are not what was
approved."""

from __future__ import annotations

import logging
import sqlite3
from pathlib import Path

import pytest

from roomkit.core.exceptions import InvalidAnswerError
from roomkit.stores.sqlite import SQLiteStore
from roomkit.tools.approvals import Edit, Respond, read_decision, respond
from roomkit.tools.human_input import HumanInputHandler

SCHEMA = {"type": "object", "properties": {"to": {"type": "string"}}}


async def recorded(path: Path, written: str) -> str:
    """The id of an approval answered on the SQLite store at ``path``, its recorded decision
    then written over with ``written`` (JSON text), as an earlier version kept it."""
    handler = HumanInputHandler(store=SQLiteStore(path))
    held = await handler.create_approval(
        "send", {"to": "bob"}, approvers=["ann"], tool_schema=SCHEMA
    )
    assert await handler.aresolve(held.pending_id, respond("sent"), by="ann")
    await handler.close()
    with sqlite3.connect(path) as db:
        db.execute(
            "UPDATE roomkit_pending SET result = ? WHERE pending_id = ?",
            (written, held.pending_id),
        )
    db.close()
    return held.pending_id


async def test_a_recorded_result_with_a_lone_surrogate_reads_with_a_replacement(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "kit.db"
    pending_id = await recorded(path, '{"decision":"respond","result":"sent to caf\\ud800"}')
    handler = HumanInputHandler(store=SQLiteStore(path))

    with caplog.at_level(logging.WARNING, logger="roomkit.tools.approvals"):
        decision = await handler.wait_for(pending_id, Respond)

    assert decision == Respond("sent to caf\ufffd")
    assert "lone surrogate (U+D800) at character 11" in caplog.text
    await handler.close()


def test_only_a_recorded_decision_is_read_so() -> None:
    """An answer being given with such text is refused, as it always was."""
    text = '{"decision":"reject","reason":"\\udc00"}'
    assert read_decision(text, recorded=True).text == "\ufffd"
    with pytest.raises(InvalidAnswerError, match="must be valid Unicode text"):
        read_decision(text)


def test_a_recorded_edit_whose_arguments_hold_one_is_refused() -> None:
    with pytest.raises(InvalidAnswerError):
        read_decision('{"decision":"edit","arguments":{"to":"b\\ud800"}}', recorded=True)
    assert read_decision(Edit({"to": "bob"}), recorded=True) == Edit({"to": "bob"})
