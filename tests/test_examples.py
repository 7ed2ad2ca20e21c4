"""The examples, and the code blocks of the README and the docs, run as shipped."""

from __future__ import annotations

import contextlib
import importlib.util
import io
import json
import logging
import sys
import tomllib
from pathlib import Path
from types import ModuleType

import pytest
from tests.doc_pages import Block, blocks, pages

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


NOT_RUN = "Not run"
"""How a block's title starts when the block cannot run here; the rest of the title says why."""
RUN_ELSEWHERE = ("sh", "bash", "console", "py")
"""Languages whose blocks the page itself cannot run: each names the test that runs it, or why
it is not run."""


def python_page_ids() -> list[str]:
    return [
        str(page.relative_to(ROOT))
        for page in pages()
        if any(block.lang == "python" for block in blocks(page))
    ]


def run_page(page: Path) -> list[tuple[Block, str]]:
    """Run the page's Python blocks in order in one namespace; each block's printed output."""
    namespace: dict[str, object] = {"__name__": "docs"}
    ran = []
    for block in blocks(page):
        if block.lang != "python" or block.title.startswith(NOT_RUN):
            continue
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            exec(compile(block.code, f"{block.page} block {block.index}", "exec"), namespace)
        ran.append((block, out.getvalue()))
    return ran


@pytest.mark.parametrize("page", python_page_ids())
def test_every_python_block_of_the_docs_runs_and_prints_what_the_page_shows(
    page: str, caplog: pytest.LogCaptureFixture
) -> None:
    """A block followed by an ``Output`` block prints exactly that, and no block logs a
    warning: a reader who copies it sees only what the page shows."""
    path = ROOT / page
    with caplog.at_level(logging.WARNING):
        outputs = {block.index: output for block, output in run_page(path)}
    warned = [record.getMessage() for record in caplog.records if record.levelno >= logging.WARNING]
    assert not warned, f"{page} logs: {warned}"
    shown = blocks(path)
    for block in shown:
        if block.index in outputs and block.index + 1 < len(shown):
            after = shown[block.index + 1]
            if after.lang == "text" and after.title == "Output":
                assert outputs[block.index].strip() == after.code.strip(), block.index


STANDALONE_BLOCKS = (
    "docs/how-to/delegation.md",
    "docs/how-to/mcp.md",
    "docs/how-to/phone.md",
    "docs/how-to/policy.md",
)
"""Pages read by their sections: each Python block holds its own imports and runs alone."""


@pytest.mark.parametrize("page", STANDALONE_BLOCKS)
def test_each_block_of_a_page_read_by_section_runs_alone(page: str) -> None:
    """A block copied from the middle of the page needs nothing from the blocks above it."""
    for block in blocks(ROOT / page):
        if block.lang != "python" or block.title.startswith(NOT_RUN):
            continue
        namespace: dict[str, object] = {"__name__": "docs"}
        with contextlib.redirect_stdout(io.StringIO()):
            exec(compile(block.code, f"{block.page} block {block.index}", "exec"), namespace)


def test_the_readme_quick_start_and_the_tutorials_print_their_promises() -> None:
    readme = run_page(ROOT / "README.md")
    assert readme[0][1].strip() == "Blue it is."
    for block, out in run_page(ROOT / "docs" / "tutorials" / "approvals.md"):
        if "approvals=" in block.code:
            shown, read = out.strip().splitlines()
            assert shown == "approval send_email bob@example.com ('alice',)"
            assert '"result": "sent to carol@example.com"' in read
            assert '"changed": {"to": {"from": "bob@example.com"' in read


def commands(block: Block) -> list[str]:
    """A shell block's command lines, without comments and blank lines."""
    lines = [line.split("#", 1)[0].strip() for line in block.code.splitlines()]
    return [line for line in lines if line]


def every_block() -> list[Block]:
    return [block for page in pages() for block in blocks(page)]


@pytest.mark.parametrize("block", every_block(), ids=lambda b: f"{b.page}:{b.index}")
def test_every_block_runs_or_says_where_or_why_not(block: Block) -> None:
    """JSON and TOML parse; a shell block names the test that runs it, or why it cannot run."""
    if block.lang == "json":
        json.loads(block.code)
    elif block.lang == "toml":
        tomllib.loads(block.code)
    elif block.lang in RUN_ELSEWHERE or block.title.startswith(NOT_RUN):
        if block.lang == "sh" and all(line.startswith("pip install") for line in commands(block)):
            return  # tests/test_install_docs.py checks every documented pip install
        if block.tested:
            test = ROOT / block.tested
            assert test.is_file(), f"{block.tested} does not exist"
            text = test.read_text(encoding="utf-8")
            assert block.page in text or "pages()" in text, f"{block.tested} reads no page"
        else:
            assert block.title.startswith(NOT_RUN), (
                f'{block.page} block {block.index}: a {block.lang} block needs title="Not run'
                ' ...: why" or a <!-- tested: tests/... --> line above it'
            )
            assert len(block.title) > len(NOT_RUN) + 10, "the title says why it is not run"


def test_the_readme_stays_short() -> None:
    """The manual lives in docs/; the README introduces and links into it."""
    lines = (ROOT / "README.md").read_text(encoding="utf-8").splitlines()
    assert len(lines) <= 160


@pytest.mark.parametrize(
    "block",
    [b for b in every_block() if b.lang == "sh" and "roomkit pending" in b.code],
    ids=lambda b: f"{b.page}:{b.index}",
)
def test_every_pending_command_of_a_shell_block_has_its_token(block: Block) -> None:
    """Copied line by line, each ``roomkit pending`` command finds a token: one given on its own
    line only (``ROOMKIT_TOKEN=... roomkit pending list``) would leave the next ones without."""
    exported = False
    for line in commands(block):
        exported = exported or line.startswith("export ROOMKIT_TOKEN=")
        if "roomkit pending" in line:
            given = line.startswith("ROOMKIT_TOKEN=") or "--token" in line
            assert exported or given, (
                f"{block.page} block {block.index}: {line!r} has no token: "
                "export ROOMKIT_TOKEN on a line before it, or pass --token"
            )
