"""``roomkit audit export --format a2a-evidence``: the history as A2A evidence records."""

from __future__ import annotations

import asyncio
import json
import sqlite3
from contextlib import closing
from pathlib import Path

import pytest

from roomkit.adapters.a2a_evidence import GENESIS, chain_problem
from roomkit.cli import main
from roomkit.desk.stores import close_stores, open_stores
from roomkit.tools.approvals import approve
from roomkit.tools.human_input import HumanInputHandler


async def decide(url: str) -> None:
    questions, rooms = open_stores(url)
    handler = HumanInputHandler(store=questions)
    held = await handler.create_approval(
        "send", {"to": "bob"}, room_id="ctx-1", channel_id="ai", actor_id="alice"
    )
    await handler.aresolve(held.pending_id, approve(), by="alice", surface="desk")
    asked = await handler.create(
        "AskUserQuestion", {"question": "Ship?"}, room_id="ctx-1", channel_id="ai"
    )
    await handler.areject(asked.pending_id, "not today", by="bob", surface="slack")
    await handler.close()
    await close_stores(questions, rooms)


def test_the_export_is_a_chain_the_proposals_check_accepts(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    url = f"sqlite:///{tmp_path / 'kit.db'}"
    asyncio.run(decide(url))
    assert main(["audit", "export", "--store", url, "--format", "a2a-evidence"]) == 0
    records = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [r["decision"] for r in records] == ["ALLOW", "DENY"]
    assert [r["action_type"] for r in records] == ["send", "AskUserQuestion"]
    assert records[0]["prev_record_hash"] == GENESIS
    assert records[0]["intent"]["arguments"] == {"to": "bob"}
    assert records[1]["outcome"] == "rejected by bob on slack"
    assert records[0]["task_id"] == "ctx-1"
    assert chain_problem(records) is None
    records[0]["decision"] = "DENY"
    assert chain_problem(records) == "record 0 was changed after it was hashed"


def test_a_lone_surrogate_in_a_history_is_exported_as_a_replacement(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A history an earlier version wrote with a lone surrogate (the JSON escape) exports
    as a chain that holds, with U+FFFD in its place; the history is left as it is."""
    path = tmp_path / "kit.db"
    url = f"sqlite:///{path}"
    asyncio.run(decide(url))
    edit = "UPDATE roomkit_history SET entry = replace(entry, ?, ?) RETURNING entry"
    with closing(sqlite3.connect(path)) as db, db:
        stored = sorted(db.execute(edit, ('"to":"bob"', '"to":"b\\ud800b"')).fetchall())
    assert main(["audit", "export", "--store", url, "--format", "a2a-evidence"]) == 0
    records = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert records[0]["intent"]["arguments"] == {"to": "b\ufffdb"}
    assert chain_problem(records) is None
    with closing(sqlite3.connect(path)) as db:
        assert sorted(db.execute("SELECT entry FROM roomkit_history").fetchall()) == stored


def test_since_is_refused_with_the_evidence_format(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    url = f"sqlite:///{tmp_path / 'kit.db'}"
    asyncio.run(decide(url))
    args = ["audit", "export", "--store", url, "--format", "a2a-evidence", "--since", "2026-01-01"]
    assert main(args) == 2  # a mistake in the arguments, as the CLI reference says
    assert "--since does not apply" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("line", "problem"),
    [
        ('"x"', "record 1 is no JSON object"),
        ('{"prev_record_hash": "PREV", "record_hash": "0", "intent": "\\ud800"}', "record 1 holds"),
    ],
    ids=["no object", "lone surrogate"],
)
def test_a_record_no_chain_could_hash_is_a_problem_not_an_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], line: str, problem: str
) -> None:
    """Records read from a file may hold anything: one that is no object, or that holds a
    lone surrogate, is where the chain breaks."""
    url = f"sqlite:///{tmp_path / 'kit.db'}"
    asyncio.run(decide(url))
    assert main(["audit", "export", "--store", url, "--format", "a2a-evidence"]) == 0
    first = capsys.readouterr().out.splitlines()[0]
    prev = json.loads(first)["record_hash"]
    records = [json.loads(text) for text in (first, line.replace("PREV", prev))]
    found = chain_problem(records)
    assert found is not None
    assert found.startswith(problem)
