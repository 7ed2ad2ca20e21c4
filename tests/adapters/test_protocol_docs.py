"""The protocol pages' code blocks and examples run as shipped."""

from __future__ import annotations

import importlib.util
import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent.parent
PAGES = ["agui.md", "mcp-long-waits.md"]


def blocks() -> list[tuple[str, int, str]]:
    found = []
    for page in PAGES:
        text = (ROOT / "docs" / "how-to" / page).read_text()
        for index, code in enumerate(re.findall(r"```python\n(.*?)```", text, flags=re.DOTALL)):
            found.append((page, index, code))
    return found


@pytest.mark.parametrize(("page", "index", "code"), blocks())
def test_a_page_block_runs(page: str, index: int, code: str) -> None:
    exec(compile(code, f"{page}[{index}]", "exec"), {"__name__": "__docs__"})


async def test_the_agui_example_interrupts_and_resumes() -> None:
    path = ROOT / "examples" / "agui_endpoint.py"
    spec = importlib.util.spec_from_file_location(path.stem, path)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[path.stem] = module
    spec.loader.exec_module(module)
    transcript = await module.main()
    assert transcript[0].startswith("[interrupt] Which colour? (until ")
    assert transcript[1:] == ["[agent] Blue it is.", "[run] RUN_FINISHED"]
