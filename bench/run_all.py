"""Run every speed-and-size benchmark and write ``docs/benchmarks.md``.

    python -m bench.run_all                 # run bench/bench_*.py, then write the report
    python -m bench.run_all --only store    # run some of them (the report still lists all results)
    python -m bench.run_all --no-run        # only rebuild the report from bench/results/*.json

Each ``bench/bench_<name>.py`` is run as ``python -m bench.bench_<name>`` in its own
process (so one's peak RSS does not leak into another's), its output kept in
``bench/results/<name>.log``. Each script measures with medians of several runs and
writes its numbers as JSON into ``bench/results/``; this script collects every JSON
there into one Markdown report, with the machine described and the targets checked.

The headline numbers and their targets are read from dotted keys into the result files
(``name[field=value]`` picks the list element whose ``field`` equals ``value``); see
:data:`HEADLINES`. For example the steady compile target at 10,000 tools is
``compile.json`` → ``sizes[tools=10000].p50_ms`` ≤ 15 ms.

A missing file or key shows as "not measured", never as a pass. Each result's section
names the command that writes its file (:func:`writer`) and when the file was written.
``bench/notes.md``, if present, is included after the headline table as written: how
the figures were produced, what they depend on and the design notes behind them, which
a person writes and keeps in the present tense (tests/test_bench_report.py checks that
docs/benchmarks.md carries it as it is).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
BENCH = REPO / "bench"
RESULTS = BENCH / "results"
DEFAULT_OUT = REPO / "docs" / "benchmarks.md"
#: Included after the headline table as written: what a person writes, not a script.
NOTES = BENCH / "notes.md"
#: The command that writes a result file whose name is not its script's (``bench_<name>.py``).
WRITERS = {"cli": "python -m bench.bench_serve", "roles": "python -m bench.eval_roles"}
#: Seconds one benchmark script may run before it is stopped.
DEFAULT_TIMEOUT = 3600


@dataclass(frozen=True)
class Headline:
    """One number of the summary table, looked up in one result file; with ``limit``, a target."""

    what: str
    file: str
    key: str
    unit: str = ""
    op: str | None = None  # "<=", ">=" or "==" for a target
    limit: float | None = None

    def check(self, results: dict[str, dict[str, Any]]) -> tuple[Any, str]:
        """``(measured value or None, verdict)``; a number that was not measured never passes."""
        data = results.get(self.file)
        value = _lookup(data, self.key) if data is not None else None
        if not isinstance(value, (int, float)) or isinstance(value, bool):
            return None, "not measured"
        if self.op is None or self.limit is None:
            return value, ""
        met = {"<=": value <= self.limit, ">=": value >= self.limit, "==": value == self.limit}[self.op]
        return value, "met" if met else "missed"


HEADLINES = (
    Headline("`jit serve --stdio`: initialize answered after process start, an upstream hanging", "serve",
             "startup.initialize_s", "s", "<=", 0.5),
    Headline("fresh process: imports + first compile, 10,000 tools (what `jit compile` does)", "compile",
             "sizes[tools=10000].fresh_process.index_file_kept.total_s", "s", "<=", 1.0),
    Headline("fresh process: imports + first compile, 100,000 tools", "compile",
             "sizes[tools=100000].fresh_process.index_file_kept.total_s", "s", "<=", 3.0),
    Headline("first compile() in a fresh process, 10,000 tools", "compile",
             "sizes[tools=10000].fresh_process.index_file_kept.first_compile_s", "s", "<=", 1.0),
    Headline("first compile() in a fresh process, 100,000 tools", "compile",
             "sizes[tools=100000].fresh_process.index_file_kept.first_compile_s", "s", "<=", 3.0),
    Headline("first compile() in a fresh process, 10,000 tools, no index file yet", "compile",
             "sizes[tools=10000].fresh_process.no_index_file.first_compile_s", "s"),
    Headline("first compile() in a fresh process, 100,000 tools, no index file yet", "compile",
             "sizes[tools=100000].fresh_process.no_index_file.first_compile_s", "s"),
    Headline("compile() p50, 10,000 tools, warm", "compile", "sizes[tools=10000].p50_ms", "ms", "<=", 15),
    Headline("compile() p50, 100,000 tools, warm", "compile", "sizes[tools=100000].p50_ms", "ms", "<=", 40),
    Headline("query embedding p50 (one task)", "compile", "sizes[tools=10000].query_embedding_p50_ms", "ms",
             "<=", 5),
    Headline("sync throughput (store + embed), 10,000 new tools", "store", "store_and_embed_tools_per_s",
             "tools/s", ">=", 300),
    Headline("`jit sync` end to end, 10,000 new tools on 40 stdio servers (a new process: connect, list, store, "
             "analyze, embed, view file)", "sync", "settings.auto.first_sync_tools_per_s", "tools/s", ">=", 300),
    Headline("the same with `embedding.bulk_runtime: off` (onnxruntime fp32 embeds the new tools)", "sync",
             "settings.off.first_sync_tools_per_s", "tools/s"),
    Headline("`jit sync` end to end, those 10,000 tools unchanged (a new process)", "sync",
             "settings.auto.resync_s", "s"),
    Headline("peak RSS, fresh process holding a 10,000-tool catalog and the model", "compile",
             "sizes[tools=10000].fresh_process.index_file_kept.peak_rss_mb", "MB", "<=", 300),
    Headline("peak RSS, fresh process holding a 100,000-tool catalog and the model", "compile",
             "sizes[tools=100000].fresh_process.index_file_kept.peak_rss_mb", "MB", "<=", 800),
    Headline("compile() right after another process changed one tool, a process holding 100,000 tools", "compile",
             "sizes[tools=100000].after_change.compile_after_change_s", "s"),
    Headline("the same, until the view and index files for the next process are written (on their own thread)",
             "compile", "sizes[tools=100000].after_change.files_written_s", "s"),
    Headline("RSS of that process after that compile and its files (holding 100,000 tools)", "compile",
             "sizes[tools=100000].after_change.rss_after_mb", "MB", "<=", 800),
    Headline("peak RSS during that compile and its files (old and new snapshot both held)", "compile",
             "sizes[tools=100000].after_change.peak_rss_mb", "MB"),
    Headline("compile() p50, 10,000 tools, same task for another shard (task vectors reused)", "compile",
             "sizes[tools=10000].p50_ms_same_task_other_shard", "ms"),
    Headline("compile() p50, 10,000 tools, same task right after a tool call (usage changed)", "compile",
             "sizes[tools=10000].same_task.p50_ms_after_a_tool_call", "ms"),
    Headline("re-sync of 10,000 unchanged tools", "store", "resync_unchanged_s", "s", "<=", 5),
    Headline("re-embeds on that re-sync", "store", "resync_reembedded", "", "==", 0),
    Headline("`jit serve` proxied call overhead p50 (stdio, exposed tool)", "serve",
             "stdio.jit_exposed_overhead.p50_ms", "ms", "<=", 2),
    Headline("`jit serve` call through the call_tool meta-tool, overhead p50 (stdio)", "serve",
             "stdio.jit_call_tool_overhead.p50_ms", "ms", "<=", 2),
    Headline("ClientManager.call_tool overhead over the bare SDK, p50", "clients", "call_tool.overhead_p50_ms",
             "ms", "<=", 2),
    Headline("compile() p50, 1,000 tools", "compile", "sizes[tools=1000].p50_ms", "ms"),
    Headline("compile() p95, 1,000 tools", "compile", "sizes[tools=1000].p95_ms", "ms"),
    Headline("compile() p95, 10,000 tools", "compile", "sizes[tools=10000].p95_ms", "ms"),
    Headline("compile() p95, 100,000 tools", "compile", "sizes[tools=100000].p95_ms", "ms"),
    Headline("peak RSS of the store benchmark", "store", "peak_rss_mb", "MB"),
    Headline("cold start of `jit compile` from the shell", "cli", "jit_compile.median_s", "s"),
)

_SELECT = re.compile(r"^(?P<name>[^\[]+)\[(?P<field>[^=\]]+)=(?P<value>[^\]]+)\]$")


def _lookup(data: Any, dotted: str) -> Any:
    for part in dotted.split("."):
        m = _SELECT.match(part)
        if m and isinstance(data, dict) and isinstance(data.get(m["name"]), list):
            data = next((e for e in data[m["name"]] if isinstance(e, dict) and str(e.get(m["field"])) == m["value"]),
                        None)
        elif isinstance(data, dict) and part in data:
            data = data[part]
        else:
            return None
    return data


def discover(only: list[str] | None = None) -> list[str]:
    """Names of the benchmark scripts (``bench_<name>.py`` → ``<name>``), filtered by ``only``."""
    names = sorted(p.stem.removeprefix("bench_") for p in BENCH.glob("bench_*.py"))
    if only:
        unknown = sorted(set(only) - set(names))
        if unknown:
            raise SystemExit(f"run_all: no benchmark named {', '.join(unknown)}; found {', '.join(names)}")
        names = [n for n in names if n in only]
    return names


@dataclass
class Run:
    name: str
    seconds: float
    status: str  # "ok", "failed (exit N)", "timed out"


def run_one(name: str, timeout: float) -> Run:
    """Run ``python -m bench.bench_<name>``; stdout and stderr go to ``results/<name>.log``."""
    RESULTS.mkdir(parents=True, exist_ok=True)
    log = RESULTS / f"{name}.log"
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    print(f"run_all: {name} ...", file=sys.stderr, flush=True)
    t0 = time.perf_counter()
    with log.open("w", encoding="utf-8") as out:
        try:
            proc = subprocess.run([sys.executable, "-m", f"bench.bench_{name}"], cwd=REPO, env=env, stdout=out,
                                  stderr=subprocess.STDOUT, timeout=timeout, check=False)
            status = "ok" if proc.returncode == 0 else f"failed (exit {proc.returncode}, see {log.name})"
        except subprocess.TimeoutExpired:
            status = f"timed out after {timeout:.0f} s"
    run = Run(name, time.perf_counter() - t0, status)
    print(f"run_all: {name} {run.status} in {run.seconds:.0f} s", file=sys.stderr, flush=True)
    return run


def load_results() -> dict[str, dict[str, Any]]:
    """Every ``results/*.json`` by file stem; unreadable files are reported, not skipped silently."""
    out: dict[str, dict[str, Any]] = {}
    for path in sorted(RESULTS.glob("*.json")):
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError) as exc:
            data = {"error": f"unreadable result file: {exc}"}
        out[path.stem] = data if isinstance(data, dict) else {"results": data}
        out[path.stem]["_written"] = time.strftime("%Y-%m-%d %H:%M", time.localtime(path.stat().st_mtime))
    return out


def _fmt(value: Any) -> str:
    if isinstance(value, bool) or value is None:
        return str(value).lower() if isinstance(value, bool) else "—"
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        return f"{value:,.3f}" if abs(value) < 10 else f"{value:,.1f}"
    if isinstance(value, (dict, list)):
        return "`" + json.dumps(value, ensure_ascii=False, separators=(",", ":")) + "`"
    return str(value).replace("|", "\\|").replace("\n", " ")


def _flatten(data: dict[str, Any], prefix: str = "") -> tuple[list[tuple[str, Any]], list[tuple[str, list[dict]]]]:
    """Scalars as ``(dotted key, value)``; lists of objects kept whole to render as tables."""
    scalars: list[tuple[str, Any]] = []
    tables: list[tuple[str, list[dict]]] = []
    for key, value in data.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict):
            s, t = _flatten(value, f"{name}.")
            scalars += s
            tables += t
        elif isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
            tables.append((name, value))
        else:
            scalars.append((name, value))
    return scalars, tables


def writer(name: str) -> str | None:
    """The command that writes ``results/<name>.json``, or None when no script here does."""
    if name in WRITERS:
        return WRITERS[name]
    return f"python -m bench.bench_{name}" if (BENCH / f"bench_{name}.py").is_file() else None


def render_result(name: str, data: dict[str, Any], run: Run | None) -> list[str]:
    data = dict(data)
    written = data.pop("_written", "")
    title = data.pop("title", None) or name
    lines = [f"### {title}", ""]
    description = data.pop("description", None)
    if description:
        lines += [str(description), ""]
    command = writer(name)
    source = f"`bench/results/{name}.json`, written" + (f" by `{command}`" if command else "") + f" on {written}"
    if run is not None and run.status == "ok":
        source += f" (a run of {run.seconds:.0f} s)"
    elif run is not None:  # the file, if any, is what an earlier run left
        source += f"; the latest run {run.status}"
    lines += [source + ".", ""]
    scalars, tables = _flatten(data)
    if scalars:
        lines += ["| measure | value |", "|---|---|"] + [f"| {k} | {_fmt(v)} |" for k, v in scalars] + [""]
    for tname, rows in tables:
        cols = list(dict.fromkeys(k for r in rows for k in r))
        lines += [f"{tname}:", "", "| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
        lines += ["| " + " | ".join(_fmt(r.get(c)) for c in cols) + " |" for r in rows] + [""]
    return lines


def write_report(path: Path, results: dict[str, dict[str, Any]], runs: dict[str, Run]) -> Path:
    """Write the Markdown report: how to reproduce, the machine, the targets, every result."""
    sys.path.insert(0, str(REPO))
    from jit.evaluation.eval_report import machine_info

    m = machine_info()
    lines = [
        "# Benchmarks",
        "",
        "Speed and size of jit, produced by `python -m bench.run_all` (do not edit by hand: rerun it).",
        "Every script reports medians of several runs; the targets below are benchmarks, not timed tests.",
        "Each row names its result file and key; that file's section under [Results](#results) says which",
        "command wrote it and when.",
        "",
        "## Machine",
        "",
        f"- CPU: {m['cpu']}, {m['cores']} cores",
        f"- RAM: {m['ram_gib']} GiB",
        f"- Python {m['python']} on {m['os']}",
        "- Packages: " + ", ".join(f"{k} {v}" for k, v in m["packages"].items()),
        "",
        "## Headline numbers and targets",
        "",
        "| measure | value | target | verdict |",
        "|---|---|---|---|",
    ]
    for h in HEADLINES:
        value, verdict = h.check(results)
        shown = "—" if value is None else f"{_fmt(value)} {h.unit}".strip()
        sign = {"<=": "≤", ">=": "≥", "==": "="}.get(h.op or "", "")
        limit = f"{sign} {_fmt(h.limit)} {h.unit}".strip() if h.op else ""
        lines.append(f"| {h.what} (`{h.file}.json` `{h.key}`) | {shown} | {limit} | {verdict} |")
    if NOTES.is_file():  # the hand-written part: how the figures were produced, the design notes
        lines += ["", NOTES.read_text(encoding="utf-8").rstrip()]
    lines += ["", "## Results", ""]
    if not results:
        lines += ["No results yet: no benchmark has written `bench/results/*.json`.", ""]
    for name, data in results.items():
        lines += render_result(name, data, runs.get(name))
    unmatched = [r for r in runs.values() if r.name not in results]
    if unmatched:
        lines += ["Scripts whose result file has another name, or none:", ""]
        lines += [f"- `bench_{r.name}`: {r.status}, {r.seconds:.0f} s" for r in unmatched] + [""]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines), encoding="utf-8")
    return path


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", help="comma-separated benchmark names (bench_<name>.py)")
    ap.add_argument("--no-run", action="store_true", help="do not run anything; rebuild the report only")
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT, help="the Markdown report (default docs/benchmarks.md)")
    ap.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT, help="seconds per benchmark script")
    args = ap.parse_args(argv)
    runs: dict[str, Run] = {}
    if not args.no_run:
        only = [n.strip() for n in args.only.split(",")] if args.only else None
        for name in discover(only):
            runs[name] = run_one(name, args.timeout)
    path = write_report(args.out, load_results(), runs)
    print(f"run_all: wrote {path}", file=sys.stderr)
    failed = [r for r in runs.values() if r.status != "ok"]
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
