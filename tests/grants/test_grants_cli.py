"""``roomkit grants``: list and revoke the grants of the desk's store."""

from __future__ import annotations

import asyncio
import json
import shlex
from pathlib import Path

import pytest
from tests.doc_pages import blocks

from roomkit.cli import main
from roomkit.policy.grants import GrantScope, approve_and_grant
from roomkit.stores.sqlite import SQLiteStore
from roomkit.tools.human_input import HumanInputHandler


async def _granted(path: Path) -> tuple[str, str]:
    """A grant made on an approval in the store at ``path``; its id and the request's."""
    async with SQLiteStore(path) as store:
        handler = HumanInputHandler(store=store)
        request = await handler.create_approval(
            "pay", {"amount": 5}, approvers=["ann"], actor_id="bot", room_id="r1"
        )
        scope = GrantScope(expires_in=3600, max_uses=3)
        _, grant = await approve_and_grant(handler, request.pending_id, scope, by="ann")
        assert grant is not None
        return grant.grant_id, request.pending_id


async def _covered(path: Path) -> bool:
    async with SQLiteStore(path) as store:
        handler = HumanInputHandler(store=store)
        request = await handler.create_approval(
            "pay", {"amount": 5}, approvers=["ann"], actor_id="bot", room_id="r1"
        )
        return request.settled_by is not None


def test_grants_are_listed_and_revoked(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "desk.db"
    grant_id, _ = asyncio.run(_granted(path))
    store = f"sqlite:///{path}"
    assert main(["grants", "list", "--store", store]) == 0
    line = capsys.readouterr().out.strip()
    assert line.startswith(f"{grant_id}  live  pay  uses 0/3  by ann (quorum 1)")
    assert "for actor bot" in line
    assert main(["grants", "list", "--store", store, "--json"]) == 0
    listed = json.loads(capsys.readouterr().out)
    assert (listed["grant_id"], listed["state"], listed["granted_by"]) == (
        grant_id,
        "live",
        ["ann"],
    )
    assert asyncio.run(_covered(path))
    assert main(["grants", "revoke", grant_id, "--store", store, "--by", "ann"]) == 0
    assert "Revoked grant" in capsys.readouterr().out
    assert not asyncio.run(_covered(path))
    assert main(["grants", "revoke", grant_id, "--store", store]) == 1
    assert "revoked already" in capsys.readouterr().err
    assert main(["grants", "list", "--store", store, "--live"]) == 0
    assert capsys.readouterr().out.strip() == "No grants"


def test_unknown_grants_and_the_memory_store_are_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "desk.db"
    asyncio.run(_granted(path))
    store = f"sqlite:///{path}"
    assert main(["grants", "revoke", "g-nope", "--store", store]) == 1
    assert "No grant g-nope" in capsys.readouterr().err
    assert main(["grants", "list"]) == 2
    assert "memory store lives inside the desk process" in capsys.readouterr().err


def test_the_pages_commands_run(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The commands docs/how-to/grants.md shows, on a store with a grant in it."""
    path = tmp_path / "desk.db"
    grant_id, _ = asyncio.run(_granted(path))
    page = Path(__file__).resolve().parents[2] / "docs" / "how-to" / "grants.md"
    [block] = [b for b in blocks(page) if b.lang == "sh"]
    for line in block.code.splitlines():
        command = line.split("#", 1)[0].replace("sqlite:///desk.db", f"sqlite:///{path}")
        argv = shlex.split(command.replace("g-0123abcd", grant_id))
        assert argv[0] == "roomkit"
        assert main(argv[1:]) == 0, line
    assert "Revoked grant" in capsys.readouterr().out


@pytest.mark.parametrize("command", [["list"], ["revoke", "g-nope"]])
def test_a_store_file_that_does_not_exist_is_refused_not_made(
    command: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "typo.db"
    assert main(["grants", *command, "--store", f"sqlite:///{path}"]) == 2
    assert f"{path} does not exist" in capsys.readouterr().err
    assert not path.exists()


@pytest.mark.parametrize("by", ["", "ann\nroot", " ann", "a" * 300])
def test_a_revoker_that_is_no_actor_name_is_refused_and_revokes_nothing(
    by: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``--by`` is kept with the grant as who revoked it: it is an actor name, like every
    name the desk and the trail keep."""
    path = tmp_path / "desk.db"
    grant_id, _ = asyncio.run(_granted(path))
    store = f"sqlite:///{path}"
    assert main(["grants", "revoke", grant_id, "--store", store, "--by", by]) == 2
    err = capsys.readouterr().err
    assert err.startswith("roomkit: --by "), err
    assert err.count("\n") == 1, err
    assert "an actor name is 1 to 256 printable characters" in err
    assert main(["grants", "list", "--store", store, "--live"]) == 0
    assert capsys.readouterr().out.startswith(grant_id)
