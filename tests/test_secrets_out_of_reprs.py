"""A secret a value holds never shows in its ``repr``, which logs and tracebacks print."""

from __future__ import annotations

from pathlib import Path

from roomkit.desk.demo import build_demo
from roomkit.providers.ai.anthropic import AnthropicConfig
from roomkit.providers.ai.openai import OpenAIConfig

KEY = "sk-live-0123456789abcdef"


def test_a_vendor_config_keeps_its_api_key_out_of_its_repr() -> None:
    for config in (
        AnthropicConfig("claude-opus-5", api_key=KEY),
        OpenAIConfig("gpt-4.1", KEY, "http://localhost:11434/v1"),
    ):
        shown = repr(config)
        assert KEY not in shown
        assert "claude-opus-5" in shown or "gpt-4.1" in shown
        assert config.api_key == KEY


async def test_the_demo_keeps_the_desk_secret_out_of_its_repr(tmp_path: Path) -> None:
    demo = await build_demo(tmp_path)
    try:
        shown = repr(demo)
        assert demo.secret
        assert repr(demo.secret) not in shown
        assert demo.secret.hex() not in shown
    finally:
        await demo.aclose()
