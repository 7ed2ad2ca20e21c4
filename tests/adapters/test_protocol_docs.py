"""The protocol pages' code blocks and examples run as shipped."""

from __future__ import annotations

import importlib.util
import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent.parent
PAGES = ["agui.md", "a2a.md", "mcp-long-waits.md"]


def blocks(page: str) -> list[str]:
    text = (ROOT / "docs" / "how-to" / page).read_text()
    return re.findall(r"```python\n(.*?)```", text, flags=re.DOTALL)


@pytest.mark.parametrize("page", PAGES)
def test_a_pages_blocks_run_in_order(page: str) -> None:
    """A page's blocks run one after the other in one namespace, as a reader runs them."""
    namespace: dict[str, object] = {"__name__": "__docs__"}
    for index, code in enumerate(blocks(page)):
        exec(compile(code, f"{page}[{index}]", "exec"), namespace)


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


async def test_the_a2a_example_waits_for_a_person_then_completes() -> None:
    path = ROOT / "examples" / "a2a_agent.py"
    spec = importlib.util.spec_from_file_location(path.stem, path)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[path.stem] = module
    spec.loader.exec_module(module)
    assert await module.main() == [
        "[TASK_STATE_INPUT_REQUIRED] Which colour?",
        "[TASK_STATE_COMPLETED] Blue it is.",
    ]


async def test_the_a2a_pages_app_serves_its_agent_card_to_anyone() -> None:
    """A calling agent finds the card where A2A says, without a token."""
    import httpx

    namespace: dict[str, object] = {"__name__": "__docs__"}
    exec(compile(blocks("a2a.md")[0], "a2a.md[0]", "exec"), namespace)
    transport = httpx.ASGITransport(app=namespace["app"])
    async with httpx.AsyncClient(transport=transport, base_url="http://agent.test") as http:
        card = await http.get("/.well-known/agent-card.json")
        tasks = await http.get("/tasks")
    assert card.status_code == 200
    assert card.json()["name"] == "logo agent"
    assert tasks.status_code == 401
