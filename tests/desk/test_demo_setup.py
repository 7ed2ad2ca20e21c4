"""The demo's wiring and its entry point, in this process."""

from __future__ import annotations

import signal
import socket
from pathlib import Path

import httpx
import pytest
from tests.tools.human_input.stores.store_kit import connection_threads, still_running

from roomkit.channels.ai import AIChannel
from roomkit.desk import TokenAuthenticator
from roomkit.desk import demo as demo_module
from roomkit.desk.chat import ChatChannel
from roomkit.desk.demo import (
    AGENT_CHANNEL,
    CHAT_CHANNEL,
    DEMO_PERSON,
    DEMO_ROOM,
    build_demo,
    main,
)
from roomkit.desk.demo_model import TripPlannerModel


async def test_the_demo_sets_up_its_room_agent_and_chat() -> None:
    demo = await build_demo(None)
    try:
        kit = demo.kit
        assert {p.id for p in await kit.store.list_participants(DEMO_ROOM)} == {DEMO_PERSON}
        bound = {b.channel_id for b in await kit.store.list_bindings(DEMO_ROOM)}
        assert bound == {AGENT_CHANNEL, CHAT_CHANNEL}
        agent = kit.get_channel(AGENT_CHANNEL)
        assert isinstance(agent, AIChannel)
        assert isinstance(agent.provider, TripPlannerModel)
        assert {tool.name for tool in agent.tools} == {"AskUserQuestion", "book_trip"}
        assert isinstance(kit.get_channel(CHAT_CHANNEL), ChatChannel)
        assert kit.human_input_handlers == [demo.handler]
        transport = httpx.ASGITransport(app=demo.app)
        headers = {"Authorization": f"Bearer {demo.token_for(DEMO_PERSON)}"}
        async with httpx.AsyncClient(transport=transport, base_url="http://demo") as client:
            me = await client.get("/api/me", headers=headers)
            history = await client.get(f"/api/rooms/{DEMO_ROOM}/messages", headers=headers)
        assert me.json() == {"actor_id": DEMO_PERSON, "admin": False}
        assert history.json() == {"messages": []}
    finally:
        await demo.aclose()


async def test_opening_a_room_again_changes_nothing() -> None:
    demo = await build_demo(None)
    try:
        await demo.open_room(DEMO_ROOM, DEMO_PERSON)
        await demo.open_room("other", "someone")
        store = demo.kit.store
        assert len(await store.list_participants(DEMO_ROOM)) == 1
        assert len(await store.list_bindings(DEMO_ROOM)) == 2
        assert [p.id for p in await store.list_participants("other")] == ["someone"]
    finally:
        await demo.aclose()


async def test_the_data_folder_keeps_the_key_across_runs(tmp_path: Path) -> None:
    first = await build_demo(tmp_path)
    await first.aclose()
    second = await build_demo(tmp_path)
    await second.aclose()
    assert first.secret == second.secret
    earlier = await TokenAuthenticator(second.secret).authenticate(first.token_for(DEMO_PERSON))
    assert earlier.actor_id == DEMO_PERSON


def test_main_serves_until_ctrl_c(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The link is printed once the desk listens; Ctrl-C stops it cleanly, stores closed."""
    printed: list[str] = []

    def print_then_interrupt(line: str, **options: object) -> None:
        printed.append(line)
        signal.raise_signal(signal.SIGINT)

    monkeypatch.setattr(demo_module, "print", print_then_interrupt, raising=False)
    monkeypatch.setenv("PORT", "0")
    before = connection_threads()
    assert main(["--data-dir", str(tmp_path / "data")]) == 0
    assert len(printed) == 1
    assert printed[0].startswith("Open http://127.0.0.1:")
    assert "/#token=" in printed[0]
    assert printed[0].endswith(
        "\n\nAnswer from Slack: `roomkit desk --notify notify.toml` (docs/how-to/slack.md)"
    )
    assert (tmp_path / "data" / "demo.db").exists()
    assert not still_running(before)
    assert capsys.readouterr().err == ""


def test_main_refuses_a_port_that_is_not_a_number(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    monkeypatch.setenv("PORT", "eighty")
    assert main(["--data-dir", str(tmp_path)]) == 2
    assert capsys.readouterr().err == "PORT must be a number, got 'eighty'\n"


def test_main_says_when_the_port_is_taken(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        monkeypatch.setenv("PORT", str(taken.getsockname()[1]))
        before = connection_threads()
        assert main(["--data-dir", str(tmp_path)]) == 1
    assert capsys.readouterr().err.startswith("Cannot start the demo: ")
    assert not still_running(before)
