"""The performance page and the README's summary are what ``bench/report.py`` renders from
the committed results in ``bench/results/``, never figures copied by hand; and every results
file says on what machine, under what load and when it was measured."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parent.parent
BENCH = ROOT / "bench"


def bench_module(name: str) -> ModuleType:
    """``bench/<name>.py``, imported as the benchmarks import each other (``bench/`` first)."""
    sys.path.insert(0, str(BENCH))
    try:
        spec = importlib.util.spec_from_file_location(
            f"bench_{name}_under_test", BENCH / f"{name}.py"
        )
        assert spec is not None
        assert spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        # Dataclasses look their module up by name while the module runs.
        sys.modules[spec.name] = module
        spec.loader.exec_module(module)
        return module
    finally:
        sys.path.remove(str(BENCH))


def test_the_performance_page_and_the_readme_summary_are_rendered_from_the_results() -> None:
    report = bench_module("report")
    for path, text in report.rendered(ROOT).items():
        assert path.read_text(encoding="utf-8") == text, (
            f"{path.relative_to(ROOT)} differs from what bench/report.py renders from "
            "bench/results/: run python bench/report.py"
        )


def test_every_benchmark_has_results_saying_where_and_when() -> None:
    benches = {path.stem.removeprefix("bench_") for path in BENCH.glob("bench_*.py")}
    files = {path.stem: json.loads(path.read_text()) for path in (BENCH / "results").glob("*.json")}
    assert benches <= set(files), f"no results for {sorted(benches - set(files))}"
    for name, result in files.items():
        assert result["format"] == "roomkit.bench.v1", name
        machine = result["machine"]
        assert {"cpu", "cores", "load_start", "load_end", "python"} <= set(machine), name
        assert result["date"], name
        assert result["tables"], name
        assert all(table["rows"] for table in result["tables"]), name


def test_the_report_says_where_the_summary_goes_when_the_readme_has_no_block(
    tmp_path: Path,
) -> None:
    report = bench_module("report")
    with pytest.raises(SystemExit, match="bench:summary"):
        report.readme_with("# A README without the block\n", report.summary([]))


def test_one_percentile_for_every_benchmark() -> None:
    harness = bench_module("_harness")
    values = [float(n) for n in range(1, 101)]
    assert (harness.percentile(values, 0.5), harness.percentile(values, 0.99)) == (50.0, 99.0)
    assert harness.percentile([3.0], 0.99) == 3.0
    with pytest.raises(ValueError, match="no values"):
        harness.percentile([], 0.5)


def test_every_benchmark_takes_the_same_command_line(tmp_path: Path) -> None:
    harness = bench_module("_harness")
    out = tmp_path / "x.json"
    run = harness.start("x", "A benchmark.", ["--quick", "--rounds", "3", "--out", str(out)])
    assert (run.quick, run.rounds, run.out, run.rounds_or(10, 2)) == (True, 3, out, 3)
    run.table("an area", [harness.Row("a case", "1 ms", "<= 2 ms", True, value=1.0, unit="ms")])
    assert run.finish() == 0
    written = json.loads(out.read_text())
    assert written["options"] == {"quick": True, "rounds": 3}
    assert written["tables"][0]["rows"][0]["value"] == 1.0
    with pytest.raises(SystemExit):
        harness.start("x", "A benchmark.", ["--rounds", "0"])


def test_no_benchmark_keeps_a_command_line_or_percentile_of_its_own() -> None:
    for path in BENCH.glob("*.py"):
        if path.name == "_harness.py":
            continue
        text = path.read_text()
        assert "argparse" not in text or path.name == "report.py", path.name
        assert "def percentile" not in text, path.name
        assert "statistics.quantiles" not in text, path.name
