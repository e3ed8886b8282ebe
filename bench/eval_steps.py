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

import json
import logging
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.eval_roles import _jsonl, _mean, compile_tasks, load_tools, parser_for, report, run_from
from jit.config import Config
from jit.embedding.protocol import Embedder
from jit.models import tool_key
from jit.selection.budget import tier_cost
from jit.selection.steps import DOES
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
    """Build (or reuse) the catalog at ``cache``, compile every task, return the report."""
    started = time.perf_counter()
    tools = load_tools(tools_path)
    tasks = load_tasks(tasks_path)

    def score(task: StepTask, ts: ToolSet) -> dict[str, Any]:
        full, tokens = full_of(ts)
        return score_task(task, full, ts.warnings, full_tokens=tokens)

    rows = compile_tasks(config, embedder, tools, tools_path, tasks, score, budget=budget, cache=cache)
    shards = sorted({t.shard for t in tasks}, key=list(config.shards).index)
    return report("steps", config, embedder, tools, budget=budget, summary=groups(rows, shards), rows=rows,
                  started=started)


def main(argv: Sequence[str] | None = None) -> int:
    parser = parser_for("python -m bench.eval_steps", __doc__, "steps", CATALOGS / "tools.jsonl", DATA / "tasks.jsonl")
    parser.add_argument("--json", action="store_true", help="print the summary as JSON instead of a table")
    parser.add_argument("--dev-misses", action="store_true",
                        help="also list the development part's steps Full lacks (never a held-out task's)")
    args = parser.parse_args(argv)
    report = run_from(args, parser, run, logging.WARNING)
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
