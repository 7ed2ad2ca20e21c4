"""The texts the model reads are written in ``roomkit.tools.texts`` and nowhere else."""

from __future__ import annotations

from pathlib import Path

import pytest

import roomkit
from roomkit.tools import texts

PACKAGE = Path(roomkit.__file__).parent
PHRASES = [
    texts.denied("X").removeprefix("Tool 'X'"),
    texts.external_denied("X").removeprefix("Tool 'X'"),
    texts.result_blocked("X").removeprefix("Tool 'X'"),
    "Tool call cancelled",
    texts.TURN_ENDED,
    texts.CHANNEL_CLOSED,
]


@pytest.mark.parametrize("phrase", PHRASES)
def test_a_model_text_is_written_only_in_texts(phrase: str) -> None:
    writers = [
        path.relative_to(PACKAGE).as_posix()
        for path in sorted(PACKAGE.rglob("*.py"))
        if phrase in path.read_text(encoding="utf-8")
    ]
    assert writers == ["tools/texts.py"]
