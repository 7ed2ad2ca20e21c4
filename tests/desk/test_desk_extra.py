"""The ``desk`` extra installs what a desk runs on, WebSocket included (``make demo`` installs
only that extra, so nothing the development tools pull in may be missing)."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

PYPROJECT = Path(__file__).resolve().parents[2] / "pyproject.toml"


def extra(name: str) -> set[str]:
    """The distribution names an extra lists."""
    project = tomllib.loads(PYPROJECT.read_text())["project"]
    return {
        re.split(r"[<>=!~\[ ;]", item, maxsplit=1)[0]
        for item in project["optional-dependencies"][name]
    }


def test_the_desk_extra_serves_the_websocket() -> None:
    """uvicorn serves WebSockets only with websockets or wsproto installed beside it."""
    assert {"fastapi", "uvicorn", "httpx"} <= extra("desk")
    assert extra("desk") & {"websockets", "wsproto"}


def test_the_demo_runs_on_the_desk_and_sqlite_extras() -> None:
    assert "aiosqlite" in extra("desk") | extra("sqlite")
