"""Every step of a task and its tool in Full (issue #21): the steps set.

    HF_HUB_OFFLINE=1 python -m bench.eval_steps [--budget 4000] [--json] [--dev-misses] [--out bench/results/steps.json]

``bench/data/steps/tasks.jsonl`` holds everyday tasks for the four default shards, each split
by hand into the steps an agent takes (the implied ones included), every step with every tool
of the recorded catalogs (``bench/data/catalogs/``: 47 public MCP servers) that would do it,
and the tools that would be wrong for the task. Each task is compiled for its shard over the
shared pool of all recorded servers, as ``bench.eval_roles`` does for the roles set, and
scored (``bench/data/steps/README.md``, "How to score it"):

* **steps covered**: the share of steps with one of their tools in Full, over the steps that
  have a tool and that the role may take;
* **tasks complete**: the share of tasks whose every such step is covered (a task without one
  is not counted);
* **Full's size**: tools and estimated tokens of the Full tier, the mean over tasks;
* **forbidden in Full**: the task's forbidden tools in Full, summed over tasks;
* apart from the shares: steps the role may not take (``role_may: false``) whose tool reached
  Full anyway, and steps no recorded tool does, each with whether a warning names them.

The set is also the policy's tuning set, so the numbers are reported for the development
part and the held-out part (:func:`held_out`: tasks whose number is a multiple of 4) apart.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from bench.eval_roles import RESULTS, _jsonl, _mean, load_tools, make_pool
from jit.analysis.offline_analyzer import OfflineAnalyzer
from jit.config import AvailableTools, Config
from jit.config_files import load_config
from jit.embedding.factory import embedder_from_config
from jit.embedding.protocol import Embedder
from jit.evaluation.eval_report import machine_info
from jit.evaluation.evaluate import build_catalog
from jit.models import tool_key
from jit.selection.budget import tier_cost
from jit.selection.compiler import Compiler
from jit.selection.steps import DOES
from jit.selection.task import TaskContext
from jit.selection.tiers import Tier
from jit.selection.tokens import EstimateCounter
from jit.selection.toolset import ToolSet

DATA = Path(__file__).parent / "data" / "steps"
CATALOGS = Path(__file__).parent / "data" / "catalogs"

log = logging.getLogger("bench.eval_steps")


@dataclass(frozen=True, slots=True)
class Step:
    """One step of a task: what it does, its capability, every tool that does it."""

    step: str
    capability: str
    tools: tuple[str, ...]
    role_may: bool = True

    @property
    def scored(self) -> bool:
        """Counted in the shares: some tool does it and the role may take it."""
        return bool(self.tools) and self.role_may


@dataclass(frozen=True, slots=True)
class StepTask:
    """One labelled task of ``tasks.jsonl``; tools are ``server/tool`` keys."""

    id: str
    shard: str
    task: str
    steps: tuple[Step, ...]
    forbidden: tuple[str, ...] = ()


def load_tasks(path: Path = DATA / "tasks.jsonl") -> list[StepTask]:
    return [StepTask(id=r["id"], shard=r["shard"], task=r["task"],
                     steps=tuple(Step(s["step"], s["capability"], tuple(s["tools"]), bool(s.get("role_may", True)))
                                 for s in r["steps"]),
                     forbidden=tuple(r.get("forbidden", ())))
            for r in _jsonl(path)]


def held_out(task_id: str) -> bool:
    """The held-out part of the set: tasks whose number (``coder-08``) is a multiple of 4."""
    return int(task_id.rsplit("-", 1)[1]) % 4 == 0


def _named(step: Step, warnings: Sequence[str]) -> bool:
    """Whether a warning speaks of the step: it names the step's capability (``/send``, or as the
    selection's warnings say it: "send messages") or one of its words (``merge``, ``post``)."""
    words = {w for w in step.step.lower().replace("'", " ").split() if len(w) > 3}
    cap = "/" + step.capability
    return any(cap in w or DOES.get(cap, cap) in w or any(word in w.lower() for word in words) for w in warnings)


def score_task(task: StepTask, full: Sequence[str], warnings: Sequence[str] = (), *,
               full_tokens: int = 0) -> dict[str, Any]:
    """The Full tier of one task (``server/tool`` keys) against its steps."""
    in_full = set(full)
    steps = []
    for s in task.steps:
        hit = sorted(in_full.intersection(s.tools))
        steps.append({"step": s.step, "capability": s.capability, "scored": s.scored, "role_may": s.role_may,
                      "has_tool": bool(s.tools), "covered": bool(hit), "in_full": hit,
                      "warned": _named(s, warnings) if not s.scored else None})
    scored = [s for s in steps if s["scored"]]
    return {
        "id": task.id,
        "shard": task.shard,
        "held_out": held_out(task.id),
        "full": list(full),
        "full_tokens": full_tokens,
        "steps": steps,
        "covered": sum(s["covered"] for s in scored),
        "scored": len(scored),
        "complete": all(s["covered"] for s in scored) if scored else None,
        "forbidden_full": [k for k in full if k in set(task.forbidden)],
        "warnings": list(warnings),
    }


def summarize(rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """The numbers of one group of tasks."""
    scored = sum(r["scored"] for r in rows)
    complete = [r["complete"] for r in rows if r["complete"] is not None]
    refused = [s for r in rows for s in r["steps"] if not s["role_may"]]
    toolless = [s for r in rows for s in r["steps"] if s["role_may"] and not s["has_tool"]]
    return {
        "tasks": len(rows),
        "steps": scored,
        "steps_covered": sum(r["covered"] for r in rows) / scored if scored else None,
        "tasks_complete": sum(complete) / len(complete) if complete else None,
        "full_tools": _mean(len(r["full"]) for r in rows),
        "full_tokens": _mean(r["full_tokens"] for r in rows),
        "forbidden_full": sum(len(r["forbidden_full"]) for r in rows),
        "role_may_not": len(refused),
        "role_may_not_in_full": sum(s["covered"] for s in refused),
        "role_may_not_warned": sum(bool(s["warned"]) for s in refused),
        "no_tool": len(toolless),
        "no_tool_warned": sum(bool(s["warned"]) for s in toolless),
    }


def markdown(summary: dict[str, dict[str, Any]]) -> str:
    def num(v: float | None, digits: int = 3) -> str:
        return "–" if v is None else f"{v:.{digits}f}"

    lines = ["| part | tasks | steps | steps covered | tasks complete | Full tools | Full tokens | forbidden in Full "
             "| role may not: in Full / warned | no tool: warned |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for name, s in summary.items():
        lines.append(f"| {name} | {s['tasks']} | {s['steps']} | {num(s['steps_covered'])} "
                     f"| {num(s['tasks_complete'])} | {num(s['full_tools'], 1)} | {num(s['full_tokens'], 0)} "
                     f"| {s['forbidden_full']} | {s['role_may_not_in_full']} / {s['role_may_not_warned']} of "
                     f"{s['role_may_not']} | {s['no_tool_warned']} of {s['no_tool']} |")
    return "\n".join(lines)


def dev_misses(rows: Sequence[dict[str, Any]]) -> str:
    """The development part's steps that have a tool and the role may take but that Full lacks,
    per task with its Full tier; nothing of a held-out task."""
    lines = []
    for r in rows:
        missed = [s for s in r["steps"] if s["scored"] and not s["covered"]]
        if r["held_out"] or not missed:
            continue
        lines.append(f"{r['id']} ({r['shard']}): Full {', '.join(r['full'])}")
        lines += [f"  missed /{s['capability']}: {s['step']}" for s in missed]
    return "\n".join(lines)


def groups(rows: Sequence[dict[str, Any]], shards: Iterable[str]) -> dict[str, dict[str, Any]]:
    """The summary of every task, the development part, the held-out part and each shard."""
    out = {"all": summarize(rows), "dev": summarize([r for r in rows if not r["held_out"]]),
           "held-out": summarize([r for r in rows if r["held_out"]])}
    return out | {s: summarize([r for r in rows if r["shard"] == s]) for s in shards}


def full_of(ts: ToolSet) -> tuple[list[str], int]:
    """The Full tier's ``server/tool`` keys and its estimated tokens."""
    full = [s for s in ts.tools if s.tier is Tier.FULL]
    est = EstimateCounter()
    return ([tool_key(s.server, s.tool_name) for s in full],
            sum(tier_cost(s, Tier.FULL, ts.budget_format, est) for s in full))


def run(config: Config, embedder: Embedder, *, budget: int, cache: Path,
        tools_path: Path = CATALOGS / "tools.jsonl", tasks_path: Path = DATA / "tasks.jsonl") -> dict[str, Any]:
    started = time.perf_counter()
    tools = load_tools(tools_path)
    tasks = load_tasks(tasks_path)
    unknown = sorted({t.shard for t in tasks} - set(config.shards))
    if unknown:
        raise SystemExit(f"tasks name shard(s) {unknown} the config does not define ({sorted(config.shards)})")
    cache.parent.mkdir(parents=True, exist_ok=True)
    store = build_catalog(make_pool(tools, tools_path), cache, config, embedder,
                          analyzer=OfflineAnalyzer(config.shards))
    rows = []
    try:
        with Compiler(store, config, embedder, token_counter=EstimateCounter()) as compiler:
            for task in tasks:
                ts = compiler.compile(TaskContext(shard=task.shard, task=task.task, budget=budget))
                full, tokens = full_of(ts)
                rows.append(score_task(task, full, ts.warnings, full_tokens=tokens))
    finally:
        store.close()
    shards = sorted({t.shard for t in tasks}, key=list(config.shards).index)
    return {
        "set": "steps",
        "tools": len(tools),
        "servers": len({t.server for t in tools}),
        "budget": budget,
        "model": embedder.model_name,
        "summary": groups(rows, shards),
        "tasks": rows,
        "machine": machine_info(),
        "date": time.strftime("%Y-%m-%d"),
        "seconds": time.perf_counter() - started,
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.eval_steps", description=__doc__.split("\n\n")[0])
    parser.add_argument("--budget", type=int, default=4000, help="token budget of each compile (default: 4000)")
    parser.add_argument("--out", type=Path, default=RESULTS / "steps.json", help="where the JSON report goes")
    parser.add_argument("--json", action="store_true", help="print the summary as JSON instead of a table")
    parser.add_argument("--config", type=Path, help="config.json for weights, thresholds and shards "
                        "(default: built-in defaults); its harness tools are left out")
    parser.add_argument("--cache", type=Path, default=Path(".jit/eval/steps.db"), help="the catalog (reused)")
    parser.add_argument("--dev-misses", action="store_true",
                        help="also list the development part's steps Full lacks (never a held-out task's)")
    parser.add_argument("--tools", type=Path, default=CATALOGS / "tools.jsonl")
    parser.add_argument("--tasks", type=Path, default=DATA / "tasks.jsonl")
    args = parser.parse_args(argv)
    if args.budget <= 0:
        parser.error("--budget must be positive")
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(message)s"))
    logging.getLogger("jit").addHandler(handler)
    logging.getLogger("jit").setLevel(logging.WARNING)
    config = load_config(args.config) if args.config else Config.default()
    config = replace(config, available_tools=AvailableTools())
    report = run(config, embedder_from_config(config.embedding), budget=args.budget, cache=args.cache,
                 tools_path=args.tools, tasks_path=args.tasks)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    if args.json:
        print(json.dumps({k: report[k] for k in ("set", "tools", "servers", "budget", "date", "summary")}, indent=1))
    else:
        print(f"Steps set: {report['tools']} tools of {report['servers']} servers, budget {report['budget']} "
              f"tokens ({report['date']}, {report['seconds']:.0f} s)\n")
        print(markdown(report["summary"]))
    if args.dev_misses:
        print("\n" + dev_misses(report["tasks"]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
