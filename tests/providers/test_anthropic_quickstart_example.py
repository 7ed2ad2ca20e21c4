"""examples/anthropic_quickstart.py runs as shipped, against a loopback fake of the API."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from types import ModuleType

import fake_anthropic as claude_api
import pytest

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "anthropic_quickstart.py"


def load_example() -> ModuleType:
    spec = importlib.util.spec_from_file_location("anthropic_quickstart", EXAMPLE)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


async def test_quickstart_asks_the_person_and_shows_the_reply(
    anthropic_api: claude_api.FakeAnthropic, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", claude_api.API_KEY)
    monkeypatch.setenv("ANTHROPIC_BASE_URL", anthropic_api.url)
    question = {"question": "Which colour should the logo be?"}
    anthropic_api.queue(
        claude_api.message(tool_uses=[("toolu_01", "AskUserQuestion", question)]),
        claude_api.message("A warm brown logo it is."),
    )
    heard: list[str] = []

    async def person(question: str) -> str:
        heard.append(question)
        return "brown"

    transcript = await load_example().main(answer=person)

    assert heard == ["Which colour should the logo be?"]
    assert transcript[1:] == [
        "[asked baker] Which colour should the logo be?",
        '[baker answers] {"answer": "brown"}',
        "[agent] A warm brown logo it is.",
    ]
    first, second = anthropic_api.bodies
    assert first["model"] == "claude-opus-5"
    assert second["messages"][-1]["content"] == [
        {
            "type": "tool_result",
            "tool_use_id": "toolu_01",
            "content": json.dumps({"answer": "brown"}),
        }
    ]


async def test_quickstart_without_a_key_exits_with_a_clear_message(
    clean_vendor_env: None,
) -> None:
    async def nobody(question: str) -> str:
        raise AssertionError("no question may be asked without a key")

    with pytest.raises(SystemExit, match="Set ANTHROPIC_API_KEY"):
        await load_example().main(answer=nobody)
