"""Analyzer benchmark: the offline analyzer over 10,000 real tools, and what the LLM path would send.

1. ``OfflineAnalyzer.analyze`` over N tools of the Toucan/Smithery catalogue
   (tools/s, median of ``--repeat`` runs), and ``detect_hostile_many`` alone (the injection
   rules per tool and the learned model over the rules' silent ones, as the analyzer runs them).
2. The catalog pass ``analyze_pending`` over the same tools in a fresh SQLite
   catalog (analysis + writes), then again on the unchanged catalog (cache hits only).
3. Coverage on those tools: share with at least one category, flagged tools.
4. The LLM request size the same tools would cost, without calling anything:
   fenced characters per tool after the ``max_tool_chars`` summary, requests at
   ``tools_per_request``, and an input-token estimate (characters / 4, the system
   prompt and the analysis tool's schema included in every request).
5. Agreement of the offline analyzer with the reference labels in
   tests/data/analyzer_labels.jsonl (micro/macro F1, Jaccard).

Prints a summary and writes bench/results/analyze.json.

    python -m bench.bench_analyze [--tools 10000] [--repeat 3] [--data ../shared/data/toucan_smithery/tools.jsonl]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from jit.analysis.analyze import analyze_pending
from jit.injection.detect import detect_hostile_many
from jit.analysis.llm_analyzer import analysis_tool, label_agreement, render_tool, system_prompt, user_message
from jit.analysis.offline_analyzer import OfflineAnalyzer
from jit.catalog.store import Store
from jit.config import DEFAULT_SHARDS, AnalyzerConfig
from jit.evaluation.datasets import load_pool
from jit.models import ToolDef

REPO = Path(__file__).resolve().parent.parent
DEFAULT_DATA = REPO.parent / "shared" / "data" / "toucan_smithery" / "tools.jsonl"
LIVEMCPBENCH = REPO / "tests" / "data" / "livemcpbench" / "tools.jsonl"
LABELS = REPO / "tests" / "data" / "analyzer_labels.jsonl"
RESULTS = REPO / "bench" / "results"


def load_tools(path: Path, limit: int) -> list[ToolDef]:
    """The first ``limit`` tools of a tools.jsonl, one per (server, name)."""
    return load_pool([path]).tools[:limit]


def timed(fn: Any, repeat: int) -> tuple[list[float], list[float], Any]:
    """Wall and CPU seconds of each of ``repeat`` calls, and the last result.

    CPU time is reported too: on a shared machine it moves less than wall time.
    """
    wall, cpu, result = [], [], None
    for _ in range(repeat):
        t0, c0 = time.perf_counter(), time.process_time()
        result = fn()
        wall.append(time.perf_counter() - t0)
        cpu.append(time.process_time() - c0)
    return wall, cpu, result


def catalog_pass(tools: list[ToolDef], repeat: int) -> dict[str, float]:
    """analyze_pending over a fresh catalog (median of ``repeat``), then over the unchanged one."""
    first, again = [], []
    for _ in range(repeat):
        with tempfile.TemporaryDirectory() as tmp, Store(Path(tmp) / "catalog.db") as store:
            store.sync_catalog(tools)
            analyzer = OfflineAnalyzer(DEFAULT_SHARDS)
            t0 = time.perf_counter()
            report = analyze_pending(store, analyzer)
            first.append(time.perf_counter() - t0)
            assert report.analyzed == len(tools), report
            t0 = time.perf_counter()
            assert analyze_pending(store, analyzer).analyzed == 0
            again.append(time.perf_counter() - t0)
    return {"analyze_pending_s": statistics.median(first),
            "analyze_pending_tools_per_s": len(tools) / statistics.median(first),
            "unchanged_pass_s": statistics.median(again)}


def llm_request_size(tools: list[ToolDef], cfg: AnalyzerConfig) -> dict[str, float]:
    per_tool = [len(render_tool(t, cfg.max_tool_chars)) for t in tools]
    requests = -(-len(tools) // cfg.tools_per_request)
    # Every request repeats the system prompt and the analysis tool's schema.
    prompt_chars = len(system_prompt(DEFAULT_SHARDS)) + len(json.dumps(analysis_tool(DEFAULT_SHARDS)))
    batches = [tools[i : i + cfg.tools_per_request] for i in range(0, len(tools), cfg.tools_per_request)]
    user_chars = sum(len(user_message(b, cfg.max_tool_chars)) for b in batches)
    est_tokens = (user_chars + requests * prompt_chars) / 4
    return {
        "max_tool_chars": cfg.max_tool_chars,
        "tools_per_request": cfg.tools_per_request,
        "requests": requests,
        "fenced_chars_per_tool_p50": statistics.median(per_tool),
        "fenced_chars_per_tool_max": max(per_tool),
        "prompt_and_tool_chars_per_request": prompt_chars,
        "estimated_input_tokens_per_tool": est_tokens / len(tools),
    }


def data_name(path: Path) -> str:
    """The data set as the report shows it: its path in the repository, else its folder and
    file name (``toucan_smithery/tools.jsonl``), never this machine's absolute path."""
    path = path.resolve()
    if path.is_relative_to(REPO):
        return path.relative_to(REPO).as_posix()
    return f"{path.parent.name}/{path.name}"


def agreement() -> dict[str, Any] | None:
    if not (LABELS.exists() and LIVEMCPBENCH.exists()):
        return None
    lines = LIVEMCPBENCH.read_text(encoding="utf-8").splitlines()
    labels = [json.loads(line) for line in LABELS.read_text(encoding="utf-8").splitlines()]
    analyzer = OfflineAnalyzer(DEFAULT_SHARDS)
    predicted = []
    for row in labels:
        r = json.loads(lines[row["line"]])
        predicted.append(analyzer.analyze_one(ToolDef(r["server"], r["name"], r.get("description") or "",
                                                      r.get("input_schema") or {})))
    return label_agreement(predicted, labels).to_json()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tools", type=int, default=10_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA)
    args = ap.parse_args()

    tools = load_tools(args.data, args.tools)
    n = len(tools)
    print(f"{n} tools from {args.data}")
    # The first run starts with a cold stemmer cache, as a fresh process does; all runs are kept.
    offline_runs, offline_cpu, analyses = timed(lambda: OfflineAnalyzer(DEFAULT_SHARDS).analyze(tools), args.repeat)
    offline_s = statistics.median(offline_runs)
    hostile_s = statistics.median(timed(lambda: detect_hostile_many(tools), args.repeat)[0])
    catalog = catalog_pass(tools, args.repeat)
    flagged: dict[str, int] = {}
    for a in analyses:
        for f in a.flags:
            flagged[f] = flagged.get(f, 0) + 1
    result = {
        "tools": n,
        "repeat": args.repeat,
        "data": data_name(args.data),
        "machine": {"python": platform.python_version(), "platform": platform.platform(),
                    "cpus": os.cpu_count()},
        "offline_s": offline_s,
        "offline_runs_s": offline_runs,
        "offline_cpu_runs_s": offline_cpu,
        "offline_cpu_tools_per_s": n / statistics.median(offline_cpu),
        "offline_tools_per_s": n / offline_s,
        "detect_hostile_tools_per_s": n / hostile_s,
        **catalog,
        "with_category": sum(bool(a.categories) for a in analyses) / n,
        "flagged_tools": sum(bool(a.flags) for a in analyses),
        "flags": flagged,
        "llm_request": llm_request_size(tools, AnalyzerConfig()),
        "agreement": agreement(),
    }
    print(f"offline analyzer     {result['offline_tools_per_s']:>9,.0f} tools/s (median of {args.repeat}, "
          f"{offline_s:.2f} s for {n}; runs {', '.join(f'{t:.2f}' for t in offline_runs)} s); "
          f"{result['offline_cpu_tools_per_s']:,.0f} tools/s of CPU time")
    print(f"detect_hostile_many {result['detect_hostile_tools_per_s']:>10,.0f} tools/s")
    print(f"analyze_pending      {catalog['analyze_pending_tools_per_s']:>9,.0f} tools/s "
          f"({catalog['analyze_pending_s']:.2f} s incl. SQLite writes); unchanged pass "
          f"{catalog['unchanged_pass_s'] * 1000:.0f} ms")
    print(f"with a category      {result['with_category']:.1%}; flagged {result['flagged_tools']} {flagged}")
    req = result["llm_request"]
    print(f"LLM path would send  {req['requests']} requests, ~{req['estimated_input_tokens_per_tool']:.0f} input "
          f"tokens/tool (p50 {req['fenced_chars_per_tool_p50']:.0f} chars/tool, "
          f"max {req['fenced_chars_per_tool_max']})")
    if result["agreement"]:
        a = result["agreement"]
        print(f"agreement (n={a['n']})   categories micro-F1 {a['micro_f1']['categories']:.3f} "
              f"Jaccard {a['jaccard']['categories']:.3f}; capabilities micro-F1 {a['micro_f1']['capabilities']:.3f} "
              f"Jaccard {a['jaccard']['capabilities']:.3f}")
    RESULTS.mkdir(parents=True, exist_ok=True)
    out = RESULTS / "analyze.json"
    out.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
