"""The typed decisions and answers page's code blocks run as shipped."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

PAGE = Path(__file__).resolve().parents[2] / "docs" / "how-to" / "typed-decisions-and-answers.md"


def test_the_page_runs_and_prints_the_edit() -> None:
    blocks = re.findall(r"```python\n(.*?)```", PAGE.read_text(encoding="utf-8"), re.DOTALL)
    assert blocks
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        for block in blocks:
            exec(compile(block, str(PAGE), "exec"), {"__name__": "__docs__"})
    assert out.getvalue() == "runs with {'amount': 50}\n"
