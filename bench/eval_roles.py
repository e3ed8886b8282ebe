"""Roles and least privilege on a real mixed catalog (issue #15): what each role is offered.

    HF_HUB_OFFLINE=1 python -m bench.eval_roles [--budget 4000] [--out bench/results/roles.json]
    HF_HUB_OFFLINE=1 python -m bench.eval_roles --replay [--folds 4]

``--replay`` measures instead what selection gains from the calls agents make
(``jit.evaluation.replay``, as ``jit eval SET --replay``): each task's needed tools are the
calls recorded for it, each task is compiled and measured for its own shard, and the curve is
printed and written to ``bench/results/roles-replay.json``.

The public sets (``jit.evaluation.evaluate``) score whether the gold tool is *somewhere*
in the selection for a general task. They cannot say whether the Full tier, what a model
can call without another turn, holds only what a reviewer of the task would accept, nor
whether a read-only role was handed a tool that commits, deletes or posts. This set can:
``bench/data/roles/tools.jsonl`` is the real tool list of 13 public MCP servers (recorded
by ``bench/record_roles.py``, annotations included), and ``tasks.jsonl`` holds tasks for
the four default shards, each labelled with the tools it *needs*, the tools a reviewer
would find *acceptable* beside them, and the tools that are *forbidden* to that role for
that task (writes for read-only roles unless the task grants them; remote systems the
task does not point at, for every role).

Each task is compiled for its shard at ``--budget`` tokens, and reported overall and per
shard:

* **Full precision**: ``|Full ∩ (needed ∪ acceptable)| / |Full|``, the mean over tasks
  whose Full tier is not empty (how many are empty is reported beside it);
* **needed recall** in Full, in Full + Condensed and in any rendered tier: the share of
  a task's needed tools that reached it, the mean over tasks that need a tool;
* **forbidden rendered**: forbidden tools in any tier but Excluded (and in Full), summed
  over tasks;
* **risky to read-only roles** (reviewer, researcher): rendered tools whose analysis names
  ``/write``, ``/delete``, ``/send`` or ``/execute`` (whatever ``readOnlyHint`` says: the
  analyzer has weighed it), or whose annotations say ``readOnlyHint: false`` or
  ``destructiveHint: true`` without ``readOnlyHint: true``, summed over tasks, whatever the
  labels say: the count the least-privilege policy must bring to 0.

The catalog is analyzed by the offline analyzer and tokens are counted by the offline
estimate whatever the environment holds, so a number does not depend on an API key.
Writes the numbers and every task's selection to ``--out`` (JSON) and prints a Markdown
table.
"""

from __future__ import annotations

import argparse
import json
import logging
import statistics
import sys
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from jit.analysis.offline_analyzer import OfflineAnalyzer
from jit.config import AvailableTools, Config
from jit.config_files import load_config
from jit.embedding.factory import embedder_from_config
from jit.embedding.protocol import Embedder
from jit.evaluation.datasets import EvalQuery, Pool
from jit.evaluation.eval_report import machine_info
from jit.evaluation.evaluate import build_catalog
from jit.evaluation.replay import replay, replay_markdown
from jit.models import ToolDef, tool_key
from jit.selection.compiler import Compiler
from jit.selection.scored_tool import ScoredTool
from jit.selection.task import TaskContext
from jit.selection.tiers import Tier
from jit.selection.tokens import EstimateCounter
from jit.selection.toolset import ToolSet

DATA = Path(__file__).parent / "data" / "roles"
RESULTS = Path(__file__).parent / "results"

#: Shards whose default role is read-only (issue #15): they must not be offered side effects.
READ_ONLY_SHARDS = ("reviewer", "researcher")
#: Analyzer capabilities that are side effects (jit.analysis.vocab.CAPABILITY_DEFINITIONS).
RISKY_CAPABILITIES = ("/write", "/delete", "/send", "/execute")
#: Tiers that reach the model, best first; Excluded is not sent.
RENDERED = (Tier.FULL, Tier.CONDENSED, Tier.MINIMAL)

log = logging.getLogger("bench.eval_roles")


# --------------------------------------------------------------------------- the data


@dataclass(frozen=True, slots=True)
class RoleTask:
    """One labelled task of ``tasks.jsonl``; tools are ``server/tool`` keys."""

    id: str
    shard: str
    task: str
    needed: tuple[str, ...]
    acceptable: tuple[str, ...]
    forbidden: tuple[str, ...]
    note: str = ""

    @property
    def accepted(self) -> frozenset[str]:
        """What a reviewer of the selection accepts in Full: needed or acceptable."""
        return frozenset(self.needed) | frozenset(self.acceptable)


def _jsonl(path: Path) -> Iterable[dict[str, Any]]:
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if line.strip():
            row = json.loads(line)
            if not isinstance(row, dict):
                raise ValueError(f"{path}:{n}: expected a JSON object")
            yield row


def load_tools(path: Path = DATA / "tools.jsonl") -> list[ToolDef]:
    """The recorded tools as jit's ToolDefs, title, output schema and annotations included.

    Built here rather than with ``jit.evaluation.datasets.load_pool``: that loader reads the
    public sets, which carry neither titles nor annotations, and keeps only name,
    description and input schema, while the annotations are what a least-privilege
    policy reads.
    """
    return [ToolDef(server=r["server"], name=r["name"], description=r.get("description") or "",
                    input_schema=r.get("input_schema") or {"type": "object", "properties": {}},
                    output_schema=r.get("output_schema"), title=r.get("title"),
                    annotations=r.get("annotations"))
            for r in _jsonl(path)]


def load_tasks(path: Path = DATA / "tasks.jsonl") -> list[RoleTask]:
    return [RoleTask(id=r["id"], shard=r["shard"], task=r["task"], needed=tuple(r["needed"]),
                     acceptable=tuple(r.get("acceptable", ())), forbidden=tuple(r.get("forbidden", ())),
                     note=r.get("note", ""))
            for r in _jsonl(path)]


def make_pool(tools: Sequence[ToolDef], path: Path) -> Pool:
    index = {(t.server, t.name): i for i, t in enumerate(tools)}
    if len(index) != len(tools):
        raise ValueError(f"{path}: a (server, name) pair appears twice")
    return Pool(list(tools), index, (str(path),))


# --------------------------------------------------------------------------- one task


def risky(scored: ScoredTool) -> list[str]:
    """Why a rendered tool is a side effect: its server's hints or its analyzed capabilities."""
    analysis = scored.tool.analysis
    return risky_reasons(scored.tool.tool.annotations, analysis.capabilities if analysis is not None else ())


def risky_reasons(annotations: Mapping[str, Any] | None, capabilities: Iterable[str]) -> list[str]:
    """Why a tool with these hints and analyzed capabilities is a side effect, as the role policy reads
    it (rules/policy.dl, ``changing``); empty when it is none."""
    why: list[str] = []
    annotations = annotations or {}
    if annotations.get("readOnlyHint") is False:
        why.append("readOnlyHint: false")  # the server declares it may modify its environment
    if annotations.get("destructiveHint") is True and annotations.get("readOnlyHint") is not True:
        why.append("destructiveHint")  # MCP: meaningful only when the tool is not read-only
    # A side effect the analyzer found counts whatever readOnlyHint says: annotations add danger,
    # never remove it (the analyzer itself lets readOnlyHint: true outweigh a plain write verb).
    why += [c for c in capabilities if c in RISKY_CAPABILITIES]
    return why


def label(task: RoleTask, key: str) -> str | None:
    """``needed``, ``acceptable`` or ``forbidden`` when the task labels the tool, else None."""
    for name in ("needed", "acceptable", "forbidden"):
        if key in getattr(task, name):
            return name
    return None


def score_task(task: RoleTask, ts: ToolSet) -> dict[str, Any]:
    """The selection of one task against its labels; every list is of ``server/tool`` keys."""
    tier_of = {tool_key(s.server, s.tool_name): s.tier for s in ts.tools}
    rendered = [s for s in ts.tools if s.tier in RENDERED]
    full = [tool_key(s.server, s.tool_name) for s in ts.tools if s.tier is Tier.FULL]

    def share(tiers: Sequence[Tier]) -> float | None:
        if not task.needed:
            return None
        return sum(tier_of.get(k) in tiers for k in task.needed) / len(task.needed)

    forbidden = set(task.forbidden)
    row: dict[str, Any] = {
        "id": task.id,
        "shard": task.shard,
        "full": full,
        "full_precision": (sum(k in task.accepted for k in full) / len(full)) if full else None,
        "recall_full": share(RENDERED[:1]),
        "recall_full_condensed": share(RENDERED[:2]),
        "recall_any": share(RENDERED),
        "needed_tiers": {k: tier_of[k].value if k in tier_of else None for k in task.needed},
        "forbidden_rendered": {k: tier_of[k].value for k in task.forbidden if tier_of.get(k) in RENDERED},
        "forbidden_full": [k for k in full if k in forbidden],
        "tokens_used": ts.tokens_used,
        "tools_rendered": {t.value: len(ts.tier(t)) for t in RENDERED},
        "warnings": list(ts.warnings),
    }
    if task.shard in READ_ONLY_SHARDS:
        # The label says whether the task grants the tool (needed or acceptable: a grant, or
        # an analyzer's capability that overstates a read) or forbids it.
        row["risky_rendered"] = {key: {"tier": s.tier.value, "why": why, "label": label(task, key)}
                                 for s in rendered if (why := risky(s)) and (key := tool_key(s.server, s.tool_name))}
    return row


# --------------------------------------------------------------------------- summaries


def _mean(values: Iterable[float | None]) -> float | None:
    kept = [v for v in values if v is not None]
    return statistics.fmean(kept) if kept else None


def summarize(rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """The numbers of one group of tasks (a shard, or all of them)."""
    read_only = [r for r in rows if "risky_rendered" in r]
    return {
        "tasks": len(rows),
        "full_size": _mean(len(r["full"]) for r in rows),
        "full_empty": sum(not r["full"] for r in rows),
        "full_precision": _mean(r["full_precision"] for r in rows),
        "recall_full": _mean(r["recall_full"] for r in rows),
        "recall_full_condensed": _mean(r["recall_full_condensed"] for r in rows),
        "recall_any": _mean(r["recall_any"] for r in rows),
        "forbidden_rendered": sum(len(r["forbidden_rendered"]) for r in rows),
        "forbidden_full": sum(len(r["forbidden_full"]) for r in rows),
        "risky_rendered": sum(len(r["risky_rendered"]) for r in read_only) if read_only else None,
        "risky_full": sum(v["tier"] == Tier.FULL.value for r in read_only for v in r["risky_rendered"].values())
        if read_only else None,
        # Of the risky ones, those the task grants (or the analyzer over-reads): not violations.
        "risky_granted": sum(v["label"] in ("needed", "acceptable") for r in read_only
                             for v in r["risky_rendered"].values()) if read_only else None,
        "tasks_without_forbidden": sum(not r["forbidden_rendered"] for r in rows),
        "tokens_used": _mean(r["tokens_used"] for r in rows),
    }


def markdown(summary: dict[str, dict[str, Any]]) -> str:
    """One row per shard and one for all tasks."""
    def num(v: float | None, digits: int = 3) -> str:
        return "–" if v is None else f"{v:.{digits}f}"

    def count(v: int | None) -> str:
        return "–" if v is None else str(v)

    lines = [("| shard | tasks | Full tools | Full precision | needed in Full | in Full+Cond. | in any tier "
              "| forbidden rendered (in Full) | risky to read-only (in Full) |"),
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for name, s in summary.items():
        lines.append(
            f"| {name} | {s['tasks']} | {num(s['full_size'], 1)} | {num(s['full_precision'])} "
            f"| {num(s['recall_full'])} | {num(s['recall_full_condensed'])} | {num(s['recall_any'])} "
            f"| {s['forbidden_rendered']} ({s['forbidden_full']}) "
            f"| {count(s['risky_rendered'])} ({count(s['risky_full'])}) |")
    return "\n".join(lines)


# --------------------------------------------------------------------------- the run


def compile_tasks(config: Config, embedder: Embedder, tools: Sequence[ToolDef], tools_path: Path,
                  tasks: Sequence[Any], score: Callable[[Any, ToolSet], dict[str, Any]], *, budget: int,
                  cache: Path) -> list[dict[str, Any]]:
    """Build (or reuse) the catalog of ``tools`` at ``cache``, compile every task (``.shard``,
    ``.task``) for its shard, and return ``score(task, tool_set)`` of each: the loop the roles and
    the steps sets (bench/eval_steps.py) share."""
    unknown = sorted({t.shard for t in tasks} - set(config.shards))
    if unknown:
        raise SystemExit(f"tasks name shard(s) {unknown} the config does not define ({sorted(config.shards)})")
    cache.parent.mkdir(parents=True, exist_ok=True)
    store = build_catalog(make_pool(tools, tools_path), cache, config, embedder,
                          analyzer=OfflineAnalyzer(config.shards))
    try:
        with Compiler(store, config, embedder, token_counter=EstimateCounter()) as compiler:
            return [score(task, compiler.compile(TaskContext(shard=task.shard, task=task.task, budget=budget)))
                    for task in tasks]
    finally:
        store.close()


def report(name: str, config: Config, embedder: Embedder, tools: Sequence[ToolDef], *, budget: int,
           summary: dict[str, Any], rows: list[dict[str, Any]], started: float) -> dict[str, Any]:
    """A set's report: what was compiled, with what, the summary and the rows."""
    return {
        "set": name,
        "tools": len(tools),
        "servers": len({t.server for t in tools}),
        "budget": budget,
        "model": embedder.model_name,
        "selection": config.tool_selection.model_dump(),
        "summary": summary,
        "tasks": rows,
        "machine": machine_info(),
        "date": time.strftime("%Y-%m-%d"),
        "seconds": time.perf_counter() - started,
    }


def run(config: Config, embedder: Embedder, *, budget: int, cache: Path,
        tools_path: Path = DATA / "tools.jsonl", tasks_path: Path = DATA / "tasks.jsonl") -> dict[str, Any]:
    """Build (or reuse) the catalog at ``cache``, compile every task, return the report."""
    started = time.perf_counter()
    tools = load_tools(tools_path)
    tasks = load_tasks(tasks_path)
    rows = compile_tasks(config, embedder, tools, tools_path, tasks, score_task, budget=budget, cache=cache)
    shards = sorted({t.shard for t in tasks}, key=list(config.shards).index)
    summary = {"all": summarize(rows)} | {s: summarize([r for r in rows if r["shard"] == s]) for s in shards}
    return report("roles", config, embedder, tools, budget=budget, summary=summary, rows=rows, started=started)


def run_replay(config: Config, embedder: Embedder, *, cache: Path, folds: int = 4,
               tools_path: Path = DATA / "tools.jsonl", tasks_path: Path = DATA / "tasks.jsonl") -> dict[str, Any]:
    """The roles set's learning curve: each task's needed tools (one gold group each) are what its
    agent called; every task learns from and is measured in its own shard."""
    started = time.perf_counter()
    tools = load_tools(tools_path)
    tasks = [t for t in load_tasks(tasks_path) if t.needed]
    pool = make_pool(tools, tools_path)
    queries = [EvalQuery(t.id, t.task, tuple((pool.index[tuple(k.split("/", 1))],) for k in t.needed)) for t in tasks]
    cache.parent.mkdir(parents=True, exist_ok=True)
    store = build_catalog(pool, cache, config, embedder, analyzer=OfflineAnalyzer(config.shards))
    try:
        rows = replay(store, config, embedder, pool, queries, shard=[t.shard for t in tasks], folds=folds)
    finally:
        store.close()
    return {"set": "roles", "tasks": len(tasks), "folds": folds, "curve": rows, "machine": machine_info(),
            "date": time.strftime("%Y-%m-%d"), "seconds": time.perf_counter() - started,
            "markdown": replay_markdown("roles", "of each task", folds, rows)}


def parser_for(prog: str, doc: str, name: str, tools: Path, tasks: Path) -> argparse.ArgumentParser:
    """The options the roles and the steps sets' commands share (``name``: the results file and cache)."""
    parser = argparse.ArgumentParser(prog=prog, description=doc.split("\n\n")[0])
    parser.add_argument("--budget", type=int, default=4000, help="token budget of each compile (default: 4000)")
    parser.add_argument("--out", type=Path, default=RESULTS / f"{name}.json", help="where the JSON report goes")
    parser.add_argument("--config", type=Path, help="config.json for weights, thresholds and shards "
                        "(default: built-in defaults); its harness tools are left out, the labels cover none")
    parser.add_argument("--cache", type=Path, default=Path(f".jit/eval/{name}.db"), help="the catalog (reused)")
    parser.add_argument("--tools", type=Path, default=tools)
    parser.add_argument("--tasks", type=Path, default=tasks)
    return parser


def run_from(args: argparse.Namespace, parser: argparse.ArgumentParser, run: Callable[..., dict[str, Any]],
             level: int) -> dict[str, Any]:
    """Check the options, log jit's messages at ``level`` to stderr, run the set, write its report."""
    if args.budget <= 0:
        parser.error("--budget must be positive")
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(message)s"))
    logging.getLogger("jit").addHandler(handler)
    logging.getLogger("jit").setLevel(level)
    config = load_config(args.config) if args.config else Config.default()
    config = replace(config, available_tools=AvailableTools())
    report = run(config, embedder_from_config(config.embedding), budget=args.budget, cache=args.cache,
                 tools_path=args.tools, tasks_path=args.tasks)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    return report


def main(argv: Sequence[str] | None = None) -> int:
    parser = parser_for("python -m bench.eval_roles", __doc__, "roles", DATA / "tools.jsonl", DATA / "tasks.jsonl")
    parser.add_argument("--replay", action="store_true", help="measure the learning curve (calls replayed) instead")
    parser.add_argument("--folds", type=int, default=4, help="--replay: the number of folds (default 4)")
    args = parser.parse_args(argv)
    if args.replay:
        if args.out == RESULTS / "roles.json":
            args.out = RESULTS / "roles-replay.json"
        found = run_from(args, parser, lambda config, embedder, *, budget, cache, tools_path, tasks_path: run_replay(
            config, embedder, cache=cache, folds=args.folds, tools_path=tools_path, tasks_path=tasks_path), logging.INFO)
        print(found["markdown"])
        return 0
    report = run_from(args, parser, run, logging.INFO)
    print(f"Roles set: {report['tools']} tools of {report['servers']} servers, {report['summary']['all']['tasks']} "
          f"tasks, budget {report['budget']} tokens ({report['date']}, {report['seconds']:.0f} s)\n")
    print(markdown(report["summary"]))
    return 0

if __name__ == "__main__":
    raise SystemExit(main())
