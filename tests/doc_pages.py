"""Reading the README's and the documentation's pages and their code blocks, for the tests that
run them."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"

_FENCE = re.compile(
    r"(?:<!-- tested: (?P<tested>[^>]*?) -->\n)?"
    r"^```(?P<lang>[\w-]*)(?P<attrs>[^\n]*)\n(?P<code>.*?)^```$",
    flags=re.DOTALL | re.MULTILINE,
)


@dataclass(frozen=True)
class Block:
    """One fenced code block of a page."""

    page: str
    """The page's path from the checkout's root."""
    index: int
    lang: str
    title: str
    """The fence's ``title="..."``: shown above the block on the site."""
    tested: str
    """The test file that runs the block, named in a ``<!-- tested: PATH -->`` line above it."""
    code: str


def pages() -> list[Path]:
    """The README and every page of the site, in a stable order."""
    return [ROOT / "README.md", *sorted(DOCS.rglob("*.md"))]


def blocks(page: Path) -> list[Block]:
    """The page's fenced code blocks, in order."""
    text = page.read_text(encoding="utf-8")
    found = []
    for index, match in enumerate(_FENCE.finditer(text)):
        title = re.search(r'title="([^"]*)"', match.group("attrs"))
        found.append(
            Block(
                page=str(page.relative_to(ROOT)),
                index=index,
                lang=match.group("lang"),
                title=title.group(1) if title else "",
                tested=match.group("tested") or "",
                code=match.group("code"),
            )
        )
    return found


def page_blocks(relative: str, lang: str, containing: str = "") -> list[str]:
    """The code of the ``lang`` blocks of one page (from the root) that contain ``containing``."""
    return [
        block.code
        for block in blocks(ROOT / relative)
        if block.lang == lang and containing in block.code
    ]


def section(relative: str, heading: str) -> str:
    """The text of one page from ``heading`` (a whole line) to the next heading of its level."""
    text = (ROOT / relative).read_text(encoding="utf-8")
    level = heading.split(" ", 1)[0]
    start = text.index(f"\n{heading}\n")
    end = text.find(f"\n{level} ", start + len(heading) + 2)
    return text[start : end if end != -1 else len(text)]
