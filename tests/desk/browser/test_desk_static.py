"""The page's files as shipped: no inline code, no markup built from strings."""

from __future__ import annotations

import re
from html.parser import HTMLParser
from importlib.resources import files

STATIC = files("roomkit.desk") / "static"


class _Tags(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.inline_code: list[str] = []
        self._in: str | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))
        self._in = tag

    def handle_data(self, data: str) -> None:
        if self._in in {"script", "style"} and data.strip():
            self.inline_code.append(data)

    def handle_endtag(self, tag: str) -> None:
        self._in = None


SCRIPTS = (
    "desk.js",
    "session.js",
    "questions.js",
    "chat.js",
    "push.js",
    "cards.js",
    "dom.js",
    "notices.js",
    "approval.js",
    "schemaform.js",
    "readable.js",
    "exact.js",
)


def test_the_page_ships_in_the_package() -> None:
    assert {item.name for item in STATIC.iterdir()} >= {"index.html", "desk.css", *SCRIPTS}


def test_every_module_the_page_loads_is_listed() -> None:
    """SCRIPTS, which the checks here read, is desk.js and every module the scripts import."""
    imported = {
        name
        for script in SCRIPTS
        for name in re.findall(
            r"\bfrom '\./([\w.-]+)';$",
            STATIC.joinpath(script).read_text(encoding="utf-8"),
            flags=re.MULTILINE,
        )
    }
    assert imported == set(SCRIPTS) - {"desk.js"}


def test_the_page_has_no_inline_script_style_or_handler() -> None:
    parser = _Tags()
    parser.feed(STATIC.joinpath("index.html").read_text(encoding="utf-8"))
    assert parser.inline_code == []
    attributes = [name for _, attrs in parser.tags for name in attrs]
    assert [name for name in attributes if name.startswith("on") or name == "style"] == []
    scripts = [attrs for tag, attrs in parser.tags if tag == "script"]
    assert scripts == [{"type": "module", "src": "desk.js"}]


def test_the_scripts_never_turn_text_into_markup() -> None:
    script = "\n".join(STATIC.joinpath(name).read_text(encoding="utf-8") for name in SCRIPTS)
    sinks = (
        r"innerHTML|outerHTML|insertAdjacentHTML|document\.write|\beval\(|new Function|\.href\s*="
    )
    assert re.findall(sinks, script) == []
    assert "textContent" in script
