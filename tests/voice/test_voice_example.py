"""The voice example runs as shipped."""

from __future__ import annotations

import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


async def test_voice_example_asks_the_caller_and_the_model_gets_the_answer() -> None:
    path = ROOT / "examples" / "voice_human_input.py"
    spec = importlib.util.spec_from_file_location("voice_human_input_example", path)
    assert spec is not None
    assert spec.loader is not None
    example = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(example)

    assert await example.main() == [
        "[alice] A table for tonight, please.",
        "[realtime_voice asks alice] For how many people?",
        '[alice answers] {"answer": "four people"}',
        '[model reads call-1] {"answer": "four people"}',
    ]
