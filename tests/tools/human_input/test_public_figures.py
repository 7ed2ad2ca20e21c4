"""Tests and benchmarks see a handler through its public surface (``statistics()``,
``pending``, the stores' own listings), never through its private attributes, which are free
to change."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
TESTS = ROOT / "tests"
# A name bound to a handler (``handler``, ``self.handler``), then one of its private names;
# RoomKit 0.109's two names for the notification callback are its public API there.
PRIVATE_READ = re.compile(r"\bhandler\._(?!on_input_required\b|set_on_input_required\b)[A-Za-z]\w*")


def test_no_test_or_benchmark_reads_a_private_attribute_of_a_handler() -> None:
    found = [
        f"{path.relative_to(ROOT)}:{number}: {line.strip()}"
        for path in sorted([*TESTS.rglob("*.py"), *(ROOT / "bench").rglob("*.py")])
        if path != Path(__file__).resolve()  # its own samples below
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if PRIVATE_READ.search(line)
    ]
    assert found == [], "read handler.statistics() or another public figure instead"


def test_the_check_finds_a_private_read() -> None:
    assert PRIVATE_READ.search("while not handler._durable._waiters:")
    assert PRIVATE_READ.search("assert not self.handler._notifications")
    assert not PRIVATE_READ.search("handler.statistics().parked_waits")
    assert not PRIVATE_READ.search("tool_handler._private")
    assert not PRIVATE_READ.search("handler._on_input_required = callback")
    assert PRIVATE_READ.search("handler._on_input_required_tasks")
