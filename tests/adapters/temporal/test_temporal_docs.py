"""The code blocks of the Temporal how-to run (each in a fresh namespace)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

PAGE = Path(__file__).resolve().parents[3] / "docs" / "how-to" / "temporal.md"
BLOCKS = re.findall(r"```python\n(.*?)```", PAGE.read_text(), flags=re.DOTALL)


@pytest.mark.parametrize("index", range(len(BLOCKS)))
def test_the_how_to_block_runs(index: int) -> None:
    exec(compile(BLOCKS[index], f"{PAGE.name} block {index}", "exec"), {"__name__": "docs"})
