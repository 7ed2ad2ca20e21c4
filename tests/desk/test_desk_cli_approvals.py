"""Deciding approvals from a terminal: ``roomkit pending approve|edit|reject|respond``."""

from __future__ import annotations

import asyncio
import json
import re
import shlex

import pytest
from desk_harness import World, serve, token

from roomkit.cli import main
from roomkit.models.pending_input import arguments_digest
from roomkit.tools.approvals import edit

SCHEMA = {
    "type": "object",
    "properties": {"to": {"type": "string"}},
    "required": ["to"],
    "additionalProperties": False,
}


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("ROOMKIT_DESK_SECRET", "ROOMKIT_DESK_URL", "ROOMKIT_DESK_DATA"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("ROOMKIT_TOKEN", token("alice"))


async def held(world: World) -> str:
    await world.room("room", "alice")
    request = await world.handler.create_approval(
        "send_email",
        {"to": "bob"},
        approvers=["alice"],
        tool_schema=SCHEMA,
        room_id="room",
        actor_id="alice",
    )
    return request.pending_id


async def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = await asyncio.to_thread(main, list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize(
    ("argv", "decision"),
    [
        (["approve"], {"decision": "approve"}),
        (["edit", "{ID}", '{"to": "carol"}'], {"decision": "edit", "arguments": {"to": "carol"}}),
        (["reject", "{ID}", "--reason", "not bob"], {"decision": "reject", "reason": "not bob"}),
        (["respond", "{ID}", "sent by hand"], {"decision": "respond", "result": "sent by hand"}),
        (["answer", "{ID}", "yes"], {"decision": "approve"}),
    ],
    ids=["approve", "edit", "reject", "respond", "answer-yes"],
)
async def test_each_decision_from_the_terminal(
    capsys: pytest.CaptureFixture[str], argv: list[str], decision: dict
) -> None:
    world = World()
    pending_id = await held(world)
    typed = [part.replace("{ID}", pending_id) for part in argv]
    if "{ID}" not in argv:
        typed.insert(1, pending_id)
    async with serve(world.app) as base:
        code, _, err = await run(capsys, "pending", *typed, "--url", base)
    assert (code, err) == (0, "")
    decided, settled = (await world.handler.history(pending_id))[-2:]
    assert decided["decision"] == decision["decision"]
    # The terminal answers through the desk's API with a token: the desk's surface.
    assert (settled["type"], settled["surface"]) == ("settled", "desk")
    for name in ("arguments", "reason", "result"):
        if name in decision:
            assert decided[name] == decision[name]


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (["approve"], "Already approved with changes by bob"),
        (["answer", "{ID}", "yes"], "Already approved with changes by bob"),
        (["reject", "{ID}", "--reason", "late"], "Already approved with changes by bob"),
    ],
    ids=["approve", "answer", "reject"],
)
async def test_deciding_an_approval_someone_decided_says_how_they_did(
    capsys: pytest.CaptureFixture[str], argv: list[str], said: str
) -> None:
    world = World()
    pending_id = await held(world)
    assert await world.handler.aresolve(pending_id, edit({"to": "carol"}), by="bob")
    typed = [part.replace("{ID}", pending_id) for part in argv]
    if "{ID}" not in argv:
        typed.insert(1, pending_id)
    async with serve(world.app) as base:
        code, out, err = await run(capsys, "pending", *typed, "--url", base)
    assert (code, out, err) == (1, "", f"roomkit: The desk refused it: {said}\n")


async def test_an_invalid_edit_is_refused_and_changes_nothing(
    capsys: pytest.CaptureFixture[str],
) -> None:
    world = World()
    pending_id = await held(world)
    async with serve(world.app) as base:
        bad = await run(capsys, "pending", "edit", pending_id, '{"cc": "x"}', "--url", base)
        shown = await run(capsys, "pending", "show", pending_id, "--url", base)
    assert bad[0] == 1
    assert "The desk refused it: Invalid edit" in bad[2]
    assert "pending approve" in shown[1]
    assert json.dumps({"to": "bob"}) in shown[1]
    request = await world.handler.get_request(pending_id)
    assert request is not None
    assert request.status == "pending"


async def test_approving_a_question_says_to_answer_it_instead(
    capsys: pytest.CaptureFixture[str],
) -> None:
    world = World()
    await world.room("room", "alice")
    pending_id = await world.ask()
    async with serve(world.app) as base:
        code, _, err = await run(capsys, "pending", "approve", pending_id, "--url", base)
    assert code == 2
    assert "is a question, not a call waiting for approval" in err
    assert f"pending answer {pending_id}" in err
    assert "422" not in err.replace(pending_id, "")  # the id is hex: it may hold "422"
    record = await world.handler.get_request(pending_id)
    assert record is not None
    assert record.status == "pending"


async def test_a_decision_copied_from_show_is_refused_once_the_arguments_changed(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """``pending show`` prints commands that name the digest of what it showed: after bob's
    edit they decide nothing and quote the new arguments; ``pending approve ID`` reads the
    request again and decides on what it reads."""
    world = World()
    await world.room("room", "alice", "bob")
    request = await world.handler.create_approval(
        "send_email",
        {"to": "bob"},
        approvers=["alice", "bob"],
        tool_schema=SCHEMA,
        room_id="room",
        actor_id="alice",
        quorum=2,
    )
    pending_id = request.pending_id
    async with serve(world.app) as base:
        _, shown, _ = await run(capsys, "pending", "show", pending_id, "--url", base)
        commands = [shlex.split(line)[2:] for line in shown.splitlines() if " pending " in line]
        assert await world.handler.aresolve(pending_id, edit({"to": "carol"}), by="bob")
        refused = [await run(capsys, "pending", *typed, "--url", base) for typed in commands]
        fresh = await run(capsys, "pending", "approve", pending_id, "--url", base)
    assert [typed[0] for typed in commands] == ["approve", "edit", "reject", "respond"]
    first = arguments_digest("send_email", {"to": "bob"})
    assert [typed[2:4] for typed in commands] == [["--digest", first]] * 4
    for code, _, err in refused[:1] + refused[2:3]:
        assert code == 1
        assert "The desk refused it: " in err
        # The status is not shown (an id or a digest in the text may hold those digits).
        assert re.search(r"\b409\b", err) is None
        assert '"to": "carol"' in err
    record = await world.handler.get_request(pending_id)
    assert record is not None
    assert [vote.actor for vote in record.votes] == ["bob", "alice"]
    assert fresh == (0, f"Approved {pending_id}\n", "")
    assert (record.status, record.arguments) == ("resolved", {"to": "carol"})


async def test_list_and_show_name_an_approvals_approvers_as_whom_it_asks(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """An approval naming no actor is not for anyone in the room: its approvers decide it."""
    world = World()
    await world.room("room", "alice", "bob", "carol")
    request = await world.handler.create_approval(
        "book", {"trip": "Lisbon"}, approvers=["bob", "carol"], room_id="room", quorum=2
    )
    async with serve(world.app) as base:
        _, listed, _ = await run(capsys, "pending", "list", "--url", base, "--token", token("bob"))
        _, shown, _ = await run(
            capsys, "pending", "show", request.pending_id, "--url", base, "--token", token("bob")
        )
    assert "for=bob, carol" in listed
    assert "for=bob, carol" in shown
    assert "anyone in the room" not in shown
