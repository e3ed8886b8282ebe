"""docs/benchmarks.md is what ``python -m bench.run_all`` writes: bench/notes.md as it is, between the
headline table and the results, and each result's section naming the command that wrote its file and when."""

from __future__ import annotations

import re
from pathlib import Path

from bench import run_all

DOC = Path(__file__).resolve().parent.parent / "docs" / "benchmarks.md"


def test_the_page_carries_bench_notes_as_written() -> None:
    """A hand edit of the page's notes that bench/notes.md lacks is lost at the next run_all."""
    text = DOC.read_text(encoding="utf-8")
    notes = run_all.NOTES.read_text(encoding="utf-8").rstrip()
    assert f"\n\n{notes}\n\n## Results\n" in text, (
        "docs/benchmarks.md's text between the headline table and '## Results' is not bench/notes.md: "
        "edit bench/notes.md and copy it into the page (or rerun python -m bench.run_all)")


def test_each_result_section_names_its_command_and_date_as_run_all_writes_it() -> None:
    results = DOC.read_text(encoding="utf-8").partition("\n## Results\n")[2]
    sources = re.findall(r"(?m)^`bench/results/(\w+)\.json`.*$", results)
    lines = re.findall(r"(?m)^`bench/results/\w+\.json`.*$", results)
    assert sources and len(sources) == len(re.findall(r"(?m)^### ", results))
    for name, line in zip(sources, lines):
        written = re.search(r"\d{4}-\d\d-\d\d \d\d:\d\d", line)
        assert written, line
        assert line == run_all.render_result(name, {"_written": written[0]}, None)[2]


def test_a_result_names_the_command_that_writes_it_and_what_the_latest_run_did() -> None:
    def source(name: str, run: run_all.Run | None) -> str:
        return run_all.render_result(name, {"_written": "2026-11-25 12:19", "p50_ms": 11.5}, run)[2]

    assert source("compile", None) == (
        "`bench/results/compile.json`, written by `python -m bench.bench_compile` on 2026-11-25 12:19.")
    assert source("compile", run_all.Run("compile", 421.6, "ok")) == (
        "`bench/results/compile.json`, written by `python -m bench.bench_compile` on 2026-11-25 12:19"
        " (a run of 422 s).")
    assert source("cli", run_all.Run("serve", 3.0, "failed (exit 1, see serve.log)")) == (
        "`bench/results/cli.json`, written by `python -m bench.bench_serve` on 2026-11-25 12:19;"
        " the latest run failed (exit 1, see serve.log).")
    assert source("roles", None) == (
        "`bench/results/roles.json`, written by `python -m bench.eval_roles` on 2026-11-25 12:19.")
    assert source("elsewhere", None) == "`bench/results/elsewhere.json`, written on 2026-11-25 12:19."
