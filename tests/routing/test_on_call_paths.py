"""A schedule's path that names no file is refused saying what to give, quoted short."""

from __future__ import annotations

from pathlib import Path

import pytest

from roomkit.routing import ICalOnCall


def test_a_path_holding_a_nul_is_refused_saying_what_to_give(tmp_path: Path) -> None:
    with pytest.raises(
        ValueError, match=r"cannot read '.*a\\x00b\.ics' \(embedded null byte\): give the path"
    ):
        ICalOnCall(tmp_path / "a\x00b.ics")


def test_a_path_too_long_for_a_file_is_quoted_cut_short(tmp_path: Path) -> None:
    too_long = r"cannot read '.*\.\.\. \(File name too long\)"
    with pytest.raises(ValueError, match=too_long) as refused:
        ICalOnCall(tmp_path / ("a" * 100_000 + ".ics"))
    assert len(str(refused.value)) < 400
