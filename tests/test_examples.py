"""The examples and the README's code blocks run as shipped."""

from __future__ import annotations

import contextlib
import importlib.util
import io
import re
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parent.parent


def load(path: Path) -> ModuleType:
    spec = importlib.util.spec_from_file_location(path.stem, path)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[path.stem] = module
    spec.loader.exec_module(module)
    return module


async def test_ai_human_input_example_asks_and_continues() -> None:
    example = load(ROOT / "examples" / "ai_human_input.py")
    transcript = await example.main()
    assert transcript == [
        "[alice] Can you make me a logo?",
        "[asked alice] Which color should the logo be?",
        '[alice answers] {"answer": "blue"}',
        "[agent] Great, I'll make the logo blue.",
    ]


async def test_external_example_returns_the_answer_as_a_success() -> None:
    example = load(ROOT / "examples" / "external_human_input.py")
    log = await example.main()
    assert log == [
        "[asked bob] Deploy to production?",
        '[served] AskUserQuestion: {"answer": "yes"}',
        "[agent] Checking with you before I deploy.",
    ]


def readme_blocks() -> list[str]:
    text = (ROOT / "README.md").read_text()
    return re.findall(r"```python\n(.*?)```", text, flags=re.DOTALL)


@pytest.mark.parametrize("index", range(len(readme_blocks())))
def test_readme_code_block_runs(index: int) -> None:
    """Each Python block of the README runs in a fresh namespace (it starts its own loop)."""
    code = readme_blocks()[index]
    out = io.StringIO()

    def run() -> None:
        with contextlib.redirect_stdout(out):
            exec(compile(code, f"README block {index}", "exec"), {"__name__": "readme"})

    run()
    if "Notifier(" in code:
        assert out.getvalue().strip() == "question_pending Ship it?"
    if "approvals=" in code:
        shown, read = out.getvalue().strip().splitlines()
        assert shown == "approval send_email bob@example.com ('alice',)"
        assert '"result": "sent to carol@example.com"' in read
        assert '"changed": {"to": {"from": "bob@example.com"' in read
    if index == 0:
        assert out.getvalue().strip() == "Blue it is."
