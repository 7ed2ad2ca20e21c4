"""Render the benchmarks' results files into the performance page and the README's summary.

Every benchmark writes ``bench/results/<bench>.json`` (see ``bench/_harness.py``). This
script turns them into ``docs/explanation/performance.md`` (a section per benchmark, a table
per area, each with the machine, its load and the date) and into the summary table of the
README, between the lines ``<!-- bench:summary -->`` and ``<!-- /bench -->``. Nothing in
either is written by hand: change a figure by running its benchmark again.

    python bench/report.py           write both files
    python bench/report.py --check   exit 1 when either differs from what the results give
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "bench" / "results"
PAGE = ROOT / "docs" / "explanation" / "performance.md"
README = ROOT / "README.md"
BEGIN = "<!-- bench:summary -->"
END = "<!-- /bench -->"

ORDER = (
    "human_input",
    "turns",
    "bodies",
    "desk",
    "mcp",
    "stores",
    "postgres",
    "quorum",
    "trail",
    "idle",
    "handoff",
    "notify",
    "notify_bad_receivers",
    "notify_scale",
)
"""The page's sections in reading order; results of other benchmarks follow, by name."""

SUMMARY = (
    ("human_input", "sequential create/wait/resolve"),
    ("turns", "a human turn"),
    ("desk", "wake:"),
    ("desk", "throughput:"),
    ("mcp", "MCP overhead"),
    ("quorum", "redis: a single decision"),
    ("quorum", "postgres: a single decision"),
    ("notify", "signed webhooks"),
)
"""The README's summary: (benchmark, the start of a row's case), in order."""

INTRO = """\
# Performance

Every figure on this page comes from `bench/results/*.json`, the files the benchmarks in
`bench/` write; `bench/report.py` renders the page from them (`make bench` runs every
benchmark, then the report). Each benchmark measures its baseline in the same run (a bare
future and task, the same call without the layer under test, one store beside another), so
the ratios hold across machines better than the absolute times.

The machines are shared and often busy: each section says which CPU ran it, with how many
cores, the load average at its start and at its end, and the date. A run made with
`--quick` takes fewer samples and says so. A target marked *miss* on a loaded machine is
worth measuring again on a quiet one before reading anything into it.
"""


def load(results: Path = RESULTS) -> list[dict[str, Any]]:
    """Every results file under ``results``, in the page's order."""
    found = {
        path.stem: {**json.loads(path.read_text()), "name": path.stem}
        for path in sorted(results.glob("*.json"))
    }
    known = [name for name in ORDER if name in found]
    return [found[name] for name in [*known, *sorted(set(found) - set(known))]]


def machine_line(result: dict[str, Any]) -> str:
    """The machine, its load and the date of one run, as one sentence."""
    facts = result["machine"]
    quick = " with `--quick`" if result["options"].get("quick") else ""
    return (
        f"Run {result['date']}{quick} on {facts['cpu']}, {facts['cores']} cores, "
        f"load average {facts['load_start']:g} at the start and {facts['load_end']:g} at the "
        f"end; Python {facts['python']}."
    )


def table(rows: Iterable[dict[str, Any]], columns: Sequence[str]) -> list[str]:
    """A markdown table of ``rows`` with ``columns`` (of case, figure, target, result)."""
    titles = {"case": "case", "figure": "figure", "target": "target", "result": "result"}
    lines = [
        "| " + " | ".join(titles[column] for column in columns) + " |",
        "|" + "|".join("---" for _ in columns) + "|",
    ]
    for row in rows:
        cells = {**row, "result": _verdict(row.get("met"))}
        lines.append("| " + " | ".join(_cell(cells.get(c, "")) for c in columns) + " |")
    return lines


def _verdict(met: bool | None) -> str:
    return "" if met is None else "met" if met else "*miss*"


def _cell(value: object) -> str:
    return str(value if value is not None else "").replace("|", "\\|").replace("\n", " ")


def heading(title: str) -> str:
    """A docstring's first line as a heading: Markdown's code marks, no "Benchmark of"."""
    title = title.replace("``", "`").removeprefix("Benchmark of ")
    return title[:1].upper() + title[1:]


def page(results: Sequence[dict[str, Any]]) -> str:
    """The whole performance page."""
    lines = [INTRO]
    for result in results:
        # A run with a mode of its own (``--bad-receivers``) writes <bench>_<mode>.json.
        mode = result["name"].removeprefix(result["bench"]).strip("_")
        title = heading(result["title"]) + (f" ({mode.replace('_', ' ')})" if mode else "")
        command = f"bench/bench_{result['bench']}.py" + (
            f" --{mode.replace('_', '-')}" if mode else ""
        )
        lines += [f"## {title}", "", f"`{command}`. {machine_line(result)}"]
        lines.append("")
        for part in result["tables"]:
            note = f" ({part['note']})" if part.get("note") else ""
            lines += [f"### {part['area']}{note}", ""]
            with_targets = any(row.get("target") for row in part["rows"])
            columns = ("case", "figure", "target", "result") if with_targets else ("case", "figure")
            lines += [*table(part["rows"], columns), ""]
    return "\n".join(lines).rstrip() + "\n"


def summary(results: Sequence[dict[str, Any]]) -> str:
    """The README's block: the headline figures, with where and when they were measured."""
    by_name = {result["name"]: result for result in results}
    rows: list[dict[str, Any]] = []
    loads: list[str] = []
    for bench, start in SUMMARY:
        result = by_name.get(bench)
        if result is None:
            continue
        for part in result["tables"]:
            for row in part["rows"]:
                if row["case"].startswith(start):
                    rows.append({**row, "case": f"{part['area']}: {row['case']}"})
                    break
            else:
                continue
            break
        facts = result["machine"]
        loads.append(f"{facts['load_start']:g}")
    lines = [BEGIN, "", *table(rows, ("case", "figure", "target", "result")), ""]
    if results:
        facts = results[0]["machine"]
        dates = sorted({result["date"][:10] for result in results})
        when = dates[0] if len(dates) == 1 else f"{dates[0]} to {dates[-1]}"
        lines.append(
            f"From `bench/results/` ({facts['cores']} cores, {when}, load "
            f"averages {min(loads, key=float) if loads else '?'} to "
            f"{max(loads, key=float) if loads else '?'}); every figure, its machine and its "
            "load: [the performance page](docs/explanation/performance.md)."
        )
        lines.append("")
    lines.append(END)
    return "\n".join(lines)


def readme_with(text: str, block: str) -> str:
    """``text`` with its summary block replaced by ``block``."""
    start, end = text.find(BEGIN), text.find(END)
    if start == -1 or end == -1 or end < start:
        raise SystemExit(
            f"README.md has no summary block: put the lines {BEGIN} and {END} where it goes"
        )
    return text[:start] + block + text[end + len(END) :]


def rendered(root: Path = ROOT) -> dict[Path, str]:
    """What the page and the README hold once rendered from the results under ``root``."""
    results = load(root / "bench" / "results")
    readme = root / "README.md"
    return {
        root / "docs" / "explanation" / "performance.md": page(results),
        readme: readme_with(readme.read_text(encoding="utf-8"), summary(results)),
    }


def main(arguments: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--check", action="store_true", help="exit 1 when a file is stale")
    given = parser.parse_args(arguments)
    stale = []
    for path, text in rendered().items():
        if path.exists() and path.read_text(encoding="utf-8") == text:
            continue
        if given.check:
            stale.append(path.relative_to(ROOT))
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        print(f"wrote {path.relative_to(ROOT)}")
    if stale:
        names = ", ".join(str(path) for path in stale)
        print(f"out of date with bench/results/: {names} (run python bench/report.py)")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
