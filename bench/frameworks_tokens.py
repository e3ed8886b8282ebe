"""What an agent framework's model is sent as tool definitions, with jit and with the servers attached directly.

    HF_HUB_OFFLINE=1 python -m bench.frameworks_tokens [--budget N] [--out bench/results/frameworks_tokens.json]

Two catalogs out of ``bench/data/catalogs`` (the recorded ``tools/list`` of 47 public MCP servers): the
13 servers of the roles set (bench/data/roles) and all 47. The tasks are the roles set's 75, each
labelled with the tools it needs; each is compiled for its role through
:class:`~jit.adapters.agent_tools.AgentTools`, and for each framework the tool definitions the
framework hands its model are counted:

* **with jit**: the framework's tools from its adapter (the Full tier, then ``jit_search_tools``,
  ``jit_describe_tool`` and ``jit_call_tool``, whose description lists the Condensed and Minimal tools);
* **direct**: every tool of the same servers as the framework's own MCP integration makes it (pydantic-ai's
  MCP toolset and ``langchain-mcp-adapters`` keep each tool's name, description and input schema;
  the Agents SDK converts it with ``MCPUtil.to_function_tool``; ADK's ``McpTool`` adds the output
  schema), named ``server__tool`` on both sides.

Each definition is put in the Chat Completions ``tools`` shape as the framework does (pydantic-ai: its
``ToolDefinition`` as is; the Agents SDK: ``ChatCmplConverter.tool_to_openai``; LangChain:
``convert_to_openai_tool``), or for Google ADK in its ``FunctionDeclaration`` (whose ``McpTool`` also
declares a server's output schema), and counted by jit's offline estimate (``EstimateCounter``), so the numbers
need no key. Then, per needed tool, the model turns until it is called (:func:`turns`): attached
directly every tool is one turn away. The catalog is analyzed by the offline analyzer; the embedding
model is the config's.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import anyio
from agents.mcp import MCPUtil
from agents.models.chatcmpl_converter import Converter
from google.genai.types import FunctionDeclaration
from langchain_core.tools import StructuredTool
from langchain_core.utils.function_calling import convert_to_openai_tool
from mcp.types import Tool

from bench.eval_roles import load_tasks, load_tools, make_pool
from jit.adapters.agent_tools import AgentTools, ToolSpec
from jit.adapters.google_adk import JitTool
from jit.adapters.langchain import langchain_tools
from jit.adapters.openai_agents import JitMCPServer
from jit.analysis.offline_analyzer import OfflineAnalyzer
from jit.client.manager import ClientManager
from jit.config import AvailableTools, Config
from jit.embedding.factory import embedder_from_config
from jit.evaluation.evaluate import build_catalog
from jit.models import ToolDef
from jit.selection.compiler import Compiler
from jit.selection.render import namespaced
from jit.selection.tiers import Tier
from jit.selection.tokens import EstimateCounter

DATA = Path(__file__).parent / "data" / "catalogs"
RESULTS = Path(__file__).parent / "results"
#: The 13 servers of the roles set (bench/data/roles), as the catalogs set recorded them: its 75 tasks,
#: labelled with the tools each needs, are the tasks here.
ROLES_SERVERS = ("github", "filesystem", "everything", "git", "memory", "gitlab", "slack", "google-maps", "time",
                 "brave-search", "fetch", "sequential-thinking", "postgres")
#: How many hits jit_search_tools returns (its default).
SEARCH_LIMIT = 10
FRAMEWORKS = ("pydantic-ai", "openai-agents", "langchain", "google-adk")


def _pydantic_ai(specs: Sequence[ToolSpec], agent: AgentTools) -> list[dict[str, Any]]:
    return [s.openai() for s in specs]  # JitToolset's ToolDefinitions carry the specs as they are


def _openai_agents(specs: Sequence[ToolSpec], agent: AgentTools) -> list[dict[str, Any]]:
    server = JitMCPServer(agent)  # the conversion reads the server's name and settings
    tools = [MCPUtil.to_function_tool(Tool(name=s.name, description=s.description, input_schema=s.parameters),
                                      server, convert_schemas_to_strict=False) for s in specs]
    return [dict(Converter.tool_to_openai(t)) for t in tools]


def _langchain(specs: Sequence[ToolSpec], agent: AgentTools) -> list[dict[str, Any]]:
    """As ``langchain-mcp-adapters`` makes a server's tools (the input schema as the tool's args schema),
    which is what :func:`~jit.adapters.langchain.langchain_tools` does with jit's (checked in :func:`measure`)."""
    tools = [StructuredTool(name=s.name, description=s.description, args_schema=s.parameters, coroutine=_never)
             for s in specs]
    return [convert_to_openai_tool(t) for t in tools]


def _google_adk(specs: Sequence[ToolSpec], agent: AgentTools) -> list[dict[str, Any]]:
    return [JitTool(agent, s)._get_declaration().model_dump(mode="json", exclude_none=True) for s in specs]


def _google_adk_direct(tools: Sequence[ToolDef]) -> list[dict[str, Any]]:
    """As ADK's ``McpTool`` declares a server's tool: its input schema and its output schema, both as JSON Schema."""
    return [FunctionDeclaration(name=namespaced(t.server, t.name), description=t.description,
                                parameters_json_schema=t.input_schema or {"type": "object"},
                                response_json_schema=t.output_schema).model_dump(mode="json", exclude_none=True)
            for t in tools]


async def _never(**_arguments: Any) -> str:
    raise AssertionError("the bench counts definitions, it calls nothing")


CONVERT: dict[str, Callable[[Sequence[ToolSpec], AgentTools], list[dict[str, Any]]]] = {
    "pydantic-ai": _pydantic_ai, "openai-agents": _openai_agents, "langchain": _langchain, "google-adk": _google_adk}


def direct(tools: Sequence[ToolDef]) -> list[ToolSpec]:
    """Every tool as a framework's MCP integration gives it to the model."""
    return [ToolSpec(namespaced(t.server, t.name), t.description, t.input_schema or {"type": "object"})
            for t in tools]


def turns(agent: AgentTools, server: str, tool: str) -> int | None:
    """Model turns until ``server``'s ``tool`` is called, the model acting as the tests' scripted one does:
    1 for a Full tool; 2 for one listed in ``jit_call_tool`` (describe, call) or among the search's hits
    with its schema (search with the task's text, call); 3 for a hit without its schema (search,
    describe, call); None when the search's first hits miss it."""
    st = next((s for s in agent.toolset.tools if (s.server, s.tool_name) == (server, tool)), None)
    if st is not None and st.tier is Tier.FULL:
        return 1
    if st is not None and st.tier is not Tier.EXCLUDED:
        return 2
    hits = {h["name"]: h for h in anyio.run(agent.search, agent.task, SEARCH_LIMIT)["tools"]}
    name = namespaced(server, tool) if st is None else st.name
    if name not in hits:
        return None
    return 2 if "input_schema" in hits[name] else 3


def measure(name: str, config: Config, embedder: Any, tools: Sequence[ToolDef], cache: Path,
            budget: int | None) -> dict[str, Any]:
    count = EstimateCounter().count_tools
    store = build_catalog(make_pool(tools, DATA / "tools.jsonl"), cache, config, embedder,
                          analyzer=OfflineAnalyzer(config.shards))
    try:
        rows = []
        with Compiler(store, config, embedder, token_counter=EstimateCounter()) as compiler:
            manager = ClientManager(config, store)  # never started: the bench counts, it calls nothing
            for task in load_tasks():
                agent = AgentTools(compiler, manager, task.shard, task.task, budget)
                assert [convert_to_openai_tool(t) for t in langchain_tools(agent)] == _langchain(agent.specs(), agent)
                rows.append({"id": task.id, "shard": task.shard, "full": [s.name for s in agent.full()],
                             "tokens": {fw: count(CONVERT[fw](agent.specs(), agent)) for fw in FRAMEWORKS},
                             "turns": {need: turns(agent, *need.split("/", 1)) for need in task.needed}})
            attached = {fw: count(CONVERT[fw](direct(tools), agent)) for fw in FRAMEWORKS if fw != "google-adk"}
            attached["google-adk"] = count(_google_adk_direct(tools))
    finally:
        store.close()
    reached = [t for r in rows for t in r["turns"].values()]
    outside = [t for t in reached if t != 1]
    return {"catalog": name, "servers": len({t.server for t in tools}), "tools": len(tools), "direct": attached,
            "tasks": rows,
            "jit": {fw: {"mean": round(statistics.mean(r["tokens"][fw] for r in rows)),
                         "max": max(r["tokens"][fw] for r in rows)} for fw in FRAMEWORKS},
            "needed": len(reached),
            "turns": {str(k): sum(1 for t in reached if t == k) for k in (1, 2, 3)} | {
                "missed": sum(1 for t in reached if t is None)},
            "outside_full": len(outside),
            "outside_full_mean_turns": round(statistics.mean(t for t in outside if t is not None), 2)
            if any(t is not None for t in outside) else None}


def markdown(report: dict[str, Any]) -> str:
    lines = []
    for cat in report["catalogs"]:
        lines += [f"**{cat['catalog']}** ({cat['servers']} servers, {cat['tools']} tools; "
                  f"{len(cat['tasks'])} tasks)", "",
                  "| framework | direct: every tool | with jit: mean | with jit: largest |",
                  "|---|---:|---:|---:|"]
        for fw in FRAMEWORKS:
            jit = cat["jit"][fw]
            lines.append(f"| {fw} | {cat['direct'][fw]:,} | {jit['mean']:,} | {jit['max']:,} |")
        t = cat["turns"]
        lines += ["", f"Needed tools: {cat['needed']}; model turns to call one: 1 (Full) {t['1']}, 2 {t['2']}, "
                  f"3 {t['3']}, not in the search's first {SEARCH_LIMIT} hits {t['missed']}; outside Full: "
                  f"{cat['outside_full']}, mean {cat['outside_full_mean_turns']} turns where reached "
                  "(attached directly: 1 turn, every tool).", ""]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.frameworks_tokens", description=__doc__.split("\n\n")[0])
    parser.add_argument("--budget", type=int, help="token budget of each compile (default: the config's)")
    parser.add_argument("--out", type=Path, default=RESULTS / "frameworks_tokens.json")
    parser.add_argument("--cache", type=Path, default=Path(".jit/eval/frameworks"), help="the catalogs (reused)")
    args = parser.parse_args(argv)
    config = replace(Config.default(), available_tools=AvailableTools())  # no harness tools: servers only
    embedder = embedder_from_config(config.embedding)
    every = load_tools(DATA / "tools.jsonl")
    started = time.perf_counter()
    args.cache.mkdir(parents=True, exist_ok=True)
    catalogs = [measure("the roles set's servers", config, embedder, [t for t in every if t.server in ROLES_SERVERS],
                        args.cache / "roles.db", args.budget),
                measure("all recorded servers", config, embedder, every, args.cache / "all.db", args.budget)]
    report = {"budget": args.budget or config.tool_selection.token_budget, "catalogs": catalogs, "date": time.strftime("%Y-%m-%d"),
              "seconds": round(time.perf_counter() - started)}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    print(markdown(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
