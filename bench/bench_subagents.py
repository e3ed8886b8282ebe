"""Tokens of tool definitions a role's Claude Code sub-agent sees through jit, against every server attached directly.

    HF_HUB_OFFLINE=1 python -m bench.bench_subagents [--budget 4000] [--out bench/results/subagents.json]

The servers are the 47 recorded public MCP servers of ``bench/data/catalogs/`` (1,352 tools);
the tasks are the steps set's (``bench/data/steps/tasks.jsonl``, 88 everyday tasks for the four
default shards). Counted as Claude Code sends a tool to the model (``{"name", "description",
"input_schema"}``, the name ``mcp__SERVER__TOOL``), with jit's offline estimator
(jit/selection/tokens.py):

* **direct**: every tool of every server, attached to the session (and inherited by each sub-agent);
* **sub-agent**: what ``jit setup claude-code --subagents`` gives the role's agent: the tools
  ``jit serve --expose-shard ROLE`` lists (its meta-tools, read from a real ``jit serve``
  process, and the role's Full tier for the task, rendered as that server renders it), named
  ``mcp__jit-ROLE__…``; before the first ``set_task`` only the meta-tools and the role's skeleton.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from bench.eval_roles import _mean, compile_tasks, load_tools, parser_for, report, run_from
from bench.eval_steps import CATALOGS, DATA, load_tasks
from jit.config import Config
from jit.embedding.protocol import Embedder
from jit.selection.render import full_definition
from jit.selection.tiers import Tier
from jit.selection.tokens import EstimateCounter, compact_json
from jit.selection.toolset import ToolSet

COUNTER = EstimateCounter()


def tokens(definitions: Sequence[dict[str, Any]]) -> int:
    """Tokens of ``definitions`` as one ``tools`` list."""
    return COUNTER.count_text(compact_json(list(definitions)))


def sent(name: str, description: str | None, schema: dict[str, Any]) -> dict[str, Any]:
    return {"name": name, "description": description or "", "input_schema": schema}


async def _listed(shard: str) -> list[dict[str, Any]]:
    with tempfile.TemporaryDirectory() as tmp:
        config = Path(tmp) / "config.json"
        config.write_text(json.dumps({"servers": {}, "store": "catalog.db"}))
        params = StdioServerParameters(command=sys.executable,
                                       args=["-m", "jit", "serve", "--stdio", "-c", str(config), "--expose-shard",
                                             shard], env={**os.environ, "HF_HUB_OFFLINE": "1"})
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            return [t.model_dump(by_alias=True, exclude_none=True) for t in (await session.list_tools()).tools]


def meta_tools(shard: str) -> list[dict[str, Any]]:
    """The meta-tools a real ``jit serve --expose-shard SHARD`` lists, as Claude Code sends them."""
    return [sent(f"mcp__jit-{shard}__{t['name']}", t.get("description"), t["inputSchema"])
            for t in asyncio.run(_listed(shard))]


def exposed(shard: str, ts: ToolSet) -> list[dict[str, Any]]:
    """The role's Full tier as ``jit serve`` exposes it (jit/serve/server.py: ``full_definition``)."""
    out = []
    for s in ts.tier(Tier.FULL):
        d = full_definition(s)
        out.append(sent(f"mcp__jit-{shard}__{d['name']}", d["description"], d["input_schema"]))
    return out


def run(config: Config, embedder: Embedder, *, budget: int, cache: Path, tools_path: Path = CATALOGS / "tools.jsonl",
        tasks_path: Path = DATA / "tasks.jsonl") -> dict[str, Any]:
    started = time.perf_counter()
    tools = load_tools(tools_path)
    tasks = load_tasks(tasks_path)
    direct = tokens([sent(f"mcp__{t.server}__{t.name}", t.description, t.input_schema) for t in tools])
    rows = compile_tasks(config, embedder, tools, tools_path, tasks,
                         lambda task, ts: {"id": task.id, "shard": task.shard,
                                           "full": [f"{s.server}/{s.tool_name}" for s in ts.tier(Tier.FULL)],
                                           "exposed_tokens": tokens(exposed(task.shard, ts))},
                         budget=budget, cache=cache)
    roles = {}
    for shard in sorted({t.shard for t in tasks}, key=list(config.shards).index):
        listed = meta_tools(shard)
        meta = tokens(listed)
        mine = [r for r in rows if r["shard"] == shard]
        per_task = [meta + r["exposed_tokens"] for r in mine]
        roles[shard] = {"tasks": len(mine), "meta_tools": len(listed), "meta_tokens": meta,
                        "mean_tokens": _mean(per_task), "max_tokens": max(per_task),
                        "mean_full_tools": _mean(len(r["full"]) for r in mine),
                        "share_of_direct": _mean(per_task) / direct}
    summary = {"direct_tokens": direct, "direct_tools": len(tools), "counter": COUNTER.name, "roles": roles}
    return report("subagents", config, embedder, tools, budget=budget, summary=summary, rows=rows, started=started)


def markdown(summary: dict[str, Any]) -> str:
    lines = ["| role's sub-agent | tools it sees (mean over its tasks) | tokens, mean | tokens, max "
             "| share of direct |", "|---|---:|---:|---:|---:|"]
    for shard, r in summary["roles"].items():
        lines.append(f"| `jit-{shard}` ({r['tasks']} tasks) | {r['mean_full_tools']:.1f} + {r['meta_tools']} "
                     f"meta-tools | {r['mean_tokens']:,.0f} | {r['max_tokens']:,} | "
                     f"{100 * r['share_of_direct']:.1f} % |")
    lines.append(f"| every server attached directly | {summary['direct_tools']:,} | {summary['direct_tokens']:,} | "
                 f"{summary['direct_tokens']:,} | 100 % |")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = parser_for("python -m bench.bench_subagents", __doc__, "subagents", CATALOGS / "tools.jsonl",
                        DATA / "tasks.jsonl")
    result = run_from(parser.parse_args(argv), parser, run, logging.WARNING)
    print(f"{result['tools']} tools of {result['servers']} servers, budget {result['budget']} tokens, "
          f"{result['date']}, counter {result['summary']['counter']}\n")
    print(markdown(result["summary"]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
