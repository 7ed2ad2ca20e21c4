"""The ``roomkit`` command: tokens, the pending commands against a real desk, ``roomkit desk``."""

from __future__ import annotations

import asyncio
import json
import os
import re
import signal
import sys
from pathlib import Path

import pytest
from desk_harness import SECRET, World, serve, token
from tests.postgres_server import PostgresServer
from tests.tools.human_input.stores.redis_server import RedisServer

from roomkit import HumanInputRejectedError
from roomkit.cli import answer_body, main
from roomkit.desk import TokenAuthenticator, load_or_create_secret


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("ROOMKIT_DESK_SECRET", "ROOMKIT_TOKEN", "ROOMKIT_DESK_URL", "ROOMKIT_DESK_DATA"):
        monkeypatch.delenv(name, raising=False)


async def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    """Run the command in a thread (it blocks on HTTP while the loop serves the desk)."""
    code = await asyncio.to_thread(main, list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
async def world() -> World:
    world = World()
    await world.room("room", "alice")
    return world


async def test_the_token_command_signs_with_the_data_folders_key(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = await run(capsys, "token", "alice", "--admin", "--data-dir", str(tmp_path))
    principal = await TokenAuthenticator(load_or_create_secret(tmp_path)).authenticate(out.strip())
    assert code == 0
    assert (principal.actor_id, principal.admin) == ("alice", True)
    assert principal.expires_at is not None
    assert principal.issued_at is not None
    assert principal.expires_at - principal.issued_at == pytest.approx(30 * 86_400, abs=1)
    code, out, _ = await run(capsys, "token", "bob", "--ttl", "60", "--data-dir", str(tmp_path))
    assert (
        await TokenAuthenticator(load_or_create_secret(tmp_path)).authenticate(out.strip())
    ).expires_at


async def test_the_token_command_uses_the_environment_secret(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ROOMKIT_DESK_SECRET", SECRET)
    code, out, _ = await run(capsys, "token", "alice", "--data-dir", str(tmp_path))
    assert code == 0
    assert (await TokenAuthenticator(SECRET).authenticate(out.strip())).actor_id == "alice"
    assert not (tmp_path / "desk.key").exists()


async def test_pending_list_shows_the_callers_questions(
    world: World, capsys: pytest.CaptureFixture[str]
) -> None:
    pending_id = await world.ask({"question": "Colour?\x1b[2J"})
    async with serve(world.app) as base:
        code, out, _ = await run(
            capsys, "pending", "list", "--url", base, "--token", token("alice")
        )
        _, as_json, _ = await run(
            capsys, "pending", "list", "--json", "--url", base, "--token", token("alice")
        )
        _, empty, _ = await run(capsys, "pending", "list", "--url", base, "--token", token("bob"))
    assert code == 0
    assert pending_id in out
    assert "Colour?\\x1b[2J" in out, "escape sequences are shown, not run"
    assert "\x1b" not in out
    assert [view["id"] for view in json.loads(as_json)] == [pending_id]
    assert empty.strip() == "No open questions."


async def test_pending_answer_reaches_the_waiting_tool(
    world: World, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ROOMKIT_TOKEN", token("alice"))
    single = await world.ask({"question": "Colour?", "options": ["red", "blue"]})
    multi = await world.ask({"question": "Which?", "options": ["a", "b"], "multiSelect": True})
    confirm = await world.ask({"action": "Deploy"}, tool_name="ConfirmAction")
    async with serve(world.app) as base:
        results = [
            await run(capsys, "pending", "answer", single, "blue", "--url", base),
            await run(capsys, "pending", "answer", multi, '["a", "b"]', "--url", base),
            await run(capsys, "pending", "answer", confirm, "yes", "--url", base),
        ]
    assert [code for code, _, _ in results] == [0, 0, 0]
    assert results[0][1].strip() == f"Answered {single}"
    assert await world.handler.wait(single) == "blue"
    assert json.loads(await world.handler.wait(multi)) == {"answer": ["a", "b"]}
    assert json.loads(await world.handler.wait(confirm)) == {"confirmed": True}


async def test_pending_reject_passes_the_reason(
    world: World, capsys: pytest.CaptureFixture[str]
) -> None:
    pending_id = await world.ask()
    async with serve(world.app) as base:
        code, out, _ = await run(
            capsys, "pending", "reject", pending_id, "--reason", "not now",
            "--url", base, "--token", token("alice"),
        )  # fmt: skip
    assert (code, out.strip()) == (0, f"Rejected {pending_id}")
    with pytest.raises(HumanInputRejectedError, match="not now"):
        await world.handler.wait(pending_id)


async def test_failures_print_one_line_and_exit_nonzero(
    world: World, capsys: pytest.CaptureFixture[str]
) -> None:
    pending_id = await world.ask()
    await world.handler.aresolve(pending_id, "done", by="bob")
    async with serve(world.app) as base:
        refused = await run(capsys, "pending", "list", "--url", base, "--token", "forged.token")
        unknown = await run(
            capsys, "pending", "answer", "f" * 32, "x", "--url", base, "--token", token("alice")
        )
        settled = await run(
            capsys, "pending", "reject", pending_id, "--url", base, "--token", token("alice")
        )
        tokenless = await run(capsys, "pending", "list", "--url", base)
    unreachable = await run(
        capsys, "pending", "list", "--url", "http://127.0.0.1:9", "--token", token("alice")
    )
    for (code, _, err), words in [
        (refused, "refused the token"),
        (unknown, "No such request"),
        (settled, "answered by bob"),
        (unreachable, "cannot be reached"),
        (tokenless, "No token"),
    ]:
        assert code == (2 if words == "No token" else 1)
        assert words in err
        assert err.count("\n") == 1
        assert err.startswith("roomkit: ")


@pytest.mark.parametrize("argv", [["list"], ["show", "f" * 32]])
async def test_a_url_with_a_path_no_desk_is_at_says_so(
    argv: list[str], world: World, capsys: pytest.CaptureFixture[str]
) -> None:
    """The desk's own 404 for a path it has no route for is no missing request."""
    async with serve(world.app) as base:
        code, _, err = await run(
            capsys, "pending", *argv, "--url", f"{base}/desk", "--token", token("alice")
        )
    assert code == 1
    assert err == (
        f"roomkit: {base}/desk answered 404 (Not Found) for its API: no desk is at that path; "
        "pass --url (or set $ROOMKIT_DESK_URL) to the desk's address, such as "
        "http://127.0.0.1:8765\n"
    )


def test_the_missing_request_detail_is_the_desks() -> None:
    from roomkit.cli._desk_client import _NO_REQUEST
    from roomkit.desk.routes import NOT_FOUND

    assert _NO_REQUEST == NOT_FOUND


def test_a_bad_command_line_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["pending", "answer"])
    assert exited.value.code == 2
    assert main(["desk", "--store", "mongodb://x"]) == 2
    assert "sqlite" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("kind", "text", "schema", "body"),
    [
        ("question", "42", None, {"answer": "42"}),
        ("question", '["a"]', None, {"answer": ["a"]}),
        # A custom request with no schema, or a string's, takes text: 42 typed is "42".
        ("custom", "42", None, {"answer": "42"}),
        ("custom", "true", {"type": "string"}, {"answer": "true"}),
        ("custom", "42", {"type": "integer"}, {"answer": 42}),
        ("custom", "plain words", {"type": "object"}, {"answer": "plain words"}),
        # No JSON number: the text it is, never a traceback.
        ("custom", "NaN", {"type": "number"}, {"answer": "NaN"}),
        ("custom", "1e999", {"type": "number"}, {"answer": "1e999"}),
        ("confirm", "No", None, {"confirmed": False}),
        ("questions", '{"answers": []}', None, {"answers": []}),
    ],
)
def test_the_answer_text_becomes_the_body_its_kind_takes(
    kind: str, text: str, schema: object, body: dict
) -> None:
    assert answer_body(kind, text, schema) == body


async def _started(process: asyncio.subprocess.Process) -> str:
    """The desk's base URL, from the sign-in link it prints once it listens."""
    assert process.stdout is not None
    line = (await process.stdout.readline()).decode()
    found = re.match(r"Open (http://\S+)/#token=", line)
    assert found, f"the desk printed {line!r} instead of its link"
    return found.group(1)


async def test_roomkit_desk_serves_a_sqlite_store_to_the_pending_commands(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from roomkit.stores.sqlite import SQLiteStore
    from roomkit.tools.human_input import HumanInputHandler

    database = tmp_path / "desk.db"
    store = SQLiteStore(database, backstop_interval=0.02)
    agent = HumanInputHandler(store=store)
    asked = await agent.create("AskUserQuestion", {"question": "Where?"}, actor_id="alice")
    data = str(tmp_path / "data")
    desk = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "roomkit.cli", "desk", "--port", "0", "--data-dir", data,
        "--store", f"sqlite:///{database}",
        stdout=asyncio.subprocess.PIPE, env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )  # fmt: skip
    try:
        base = await _started(desk)
        _, alice, _ = await run(capsys, "token", "alice", "--data-dir", data)
        listed = await run(capsys, "pending", "list", "--url", base, "--token", alice.strip())
        answered = await run(
            capsys, "pending", "answer", asked.pending_id, "Lisbon", "--url", base,
            "--token", alice.strip(),
        )  # fmt: skip
        assert await agent.wait(asked.pending_id, timeout=30) == "Lisbon"
    finally:
        desk.send_signal(signal.SIGINT)
        await desk.communicate()
        await store.close()
    assert asked.pending_id in listed[1]
    assert answered[0] == 0
    assert desk.returncode == 0


@pytest.fixture(params=["redis", "postgres"])
async def shared_url(request: pytest.FixtureRequest) -> str:
    """The URL of a server the agent and the desk share, with nothing of other tests on it."""
    if request.param == "redis":
        url: str = request.getfixturevalue("redis_database")
        return url
    import psycopg

    postgres: PostgresServer = request.getfixturevalue("postgres_server")
    database = f"desk{os.urandom(4).hex()}"
    # A database of this test's own: the desk uses the default schema.
    async with await psycopg.AsyncConnection.connect(postgres.dsn, autocommit=True) as db:
        await db.execute(f'CREATE DATABASE "{database}"')
    return postgres.dsn_for(database)


async def test_roomkit_desk_on_a_shared_server_shows_a_question_asked_of_no_one_to_the_rooms_people(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], shared_url: str
) -> None:
    """The desk reads the rosters the agent keeps on Redis or Postgres: a question with no
    actor is listed to the room's participants, not to others."""
    from roomkit import RoomKit
    from roomkit.desk.stores import open_stores
    from roomkit.tools.human_input import HumanInputHandler

    store, rooms = open_stores(shared_url)
    kit = RoomKit(store=rooms)
    await kit.create_room("trip")
    await kit.add_participant("trip", "alice")
    asked = await HumanInputHandler(store=store).create(
        "AskUserQuestion", {"question": "Where?"}, room_id="trip"
    )
    data = str(tmp_path / "data")
    desk = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "roomkit.cli", "desk", "--port", "0", "--data-dir", data,
        "--store", shared_url,
        stdout=asyncio.subprocess.PIPE, env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )  # fmt: skip
    try:
        base = await _started(desk)
        _, alice, _ = await run(capsys, "token", "alice", "--data-dir", data)
        _, bob, _ = await run(capsys, "token", "bob", "--data-dir", data)
        seen = await run(capsys, "pending", "list", "--url", base, "--token", alice.strip())
        unseen = await run(capsys, "pending", "list", "--url", base, "--token", bob.strip())
    finally:
        desk.send_signal(signal.SIGINT)
        await desk.communicate()
        await store.close()
        await kit.store.close()  # type: ignore[attr-defined]
    assert asked.pending_id in seen[1]
    assert unseen[0] == 0
    assert asked.pending_id not in unseen[1]
    assert desk.returncode == 0


def test_both_postgres_url_schemes_name_the_postgres_stores() -> None:
    from roomkit.desk.stores import open_stores
    from roomkit.stores.postgres import PostgresRoomStore, PostgresStore

    for url in ("postgresql://app@db/app", "postgres://app@db/app"):
        pending, rooms = open_stores(url)
        assert isinstance(pending, PostgresStore)
        assert isinstance(rooms, PostgresRoomStore)


async def test_roomkit_desk_refuses_a_redis_room_store_of_another_format(
    tmp_path: Path, redis_server: RedisServer
) -> None:
    from redis.asyncio import Redis

    url = redis_server.url.removesuffix("/0") + "/1"
    raw = Redis.from_url(url)
    await raw.set("roomkit:rooms:format", "roomkit.rooms.v0")
    await raw.aclose()
    desk = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "roomkit.cli", "desk", "--port", "0",
        "--data-dir", str(tmp_path / "data"), "--store", url,
        stderr=asyncio.subprocess.PIPE, env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )  # fmt: skip
    _, errors = await desk.communicate()

    assert desk.returncode == 1
    assert "Cannot start the desk" in errors.decode()
    assert "'roomkit.rooms.v0'" in errors.decode()


async def test_roomkit_desk_answers_to_the_names_it_is_given(tmp_path: Path) -> None:
    import httpx

    desk = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "roomkit.cli", "desk", "--port", "0",
        "--data-dir", str(tmp_path / "data"), "--allowed-host", "desk.example.com",
        stdout=asyncio.subprocess.PIPE, env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )  # fmt: skip
    try:
        base = await _started(desk)
        async with httpx.AsyncClient(base_url=base) as client:
            named = await client.get("/", headers={"Host": "desk.example.com"})
            rebound = await client.get("/", headers={"Host": "evil.example.com"})
    finally:
        desk.send_signal(signal.SIGINT)
        await desk.communicate()
    assert named.status_code == 200
    assert rebound.status_code == 400


async def test_roomkit_desk_refuses_a_bad_allowed_host_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = await run(
        capsys, "desk", "--port", "0", "--data-dir", str(tmp_path), "--allowed-host",
        "https://desk.example.com",
    )  # fmt: skip
    assert code == 2
    assert err.count("\n") == 1
    assert err.startswith("roomkit: --allowed-host takes a host name without scheme or port")
    assert "'https://desk.example.com'" in err
    assert "allowed_hosts" not in err


@pytest.mark.parametrize("host", ["bad host", "desk.example.com:8765", "http://desk", "*"])
async def test_roomkit_desk_names_the_host_option_for_a_bad_host(
    host: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The line names --host, the option typed, not a parameter of the desk's app."""
    code, out, err = await run(
        capsys, "desk", "--port", "0", "--data-dir", str(tmp_path), "--host", host
    )
    assert (code, out) == (2, "")
    assert err.startswith("roomkit: --host takes an address or a host name")
    assert err.endswith(f"got {host!r}\n")
    assert err.count("\n") == 1
    assert "allowed_hosts" not in err


@pytest.mark.parametrize(
    ("option", "value", "said"),
    [
        ("--burst", "0", "whole number, got 0"),
        ("--rate", "nan", "number, got nan"),
        ("--admin-rate", "-1", "number, got -1.0"),
    ],
)
async def test_roomkit_desk_names_the_limit_option_alone(
    option: str, value: str, said: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = await run(
        capsys, "desk", "--port", "0", "--data-dir", str(tmp_path), option, value
    )
    assert (code, err) == (2, f"roomkit: {option} takes a positive {said}\n")


async def _desk_notice(database: Path, data: Path) -> list[str]:
    """What ``roomkit desk --store sqlite:///database`` says on stderr about its store, up
    to its stop."""
    desk = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "roomkit.cli", "desk", "--port", "0", "--data-dir", str(data),
        "--store", f"sqlite:///{database}",
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )  # fmt: skip
    try:
        await _started(desk)
    finally:
        desk.send_signal(signal.SIGINT)
        _, errors = await desk.communicate()
    assert desk.returncode == 0
    return [line for line in errors.decode().splitlines() if "store" in line]


async def test_roomkit_desk_says_when_it_creates_a_new_store_file(tmp_path: Path) -> None:
    """A new file is legitimate (a first run), and said once: a path typed unlike the
    agents' would otherwise start a store no one asks in."""
    database = tmp_path / "desk.db"
    assert await _desk_notice(database, tmp_path / "data") == [
        f"roomkit desk: created a new store in {database}: agents and roomkit mcp ask here "
        "only with the same --store"
    ]
    assert database.exists()
    assert await _desk_notice(database, tmp_path / "data") == []
