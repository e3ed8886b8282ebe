"""A small agent harness on jit: two shards, each with its own compiled tool set, talking to Claude.

What a harness does with jit, end to end:

1. hold one :class:`~jit.client.manager.ClientManager` (live connections to every MCP
   server) and bring the catalog up to date with :func:`jit.sync`;
2. when a shard is spawned, ``compile()`` its tool set for its task;
3. send the Full tier (plus jit's ``jit_expand_tools`` meta-tool, which lists the
   Condensed and Minimal tools) as the Messages API ``tools``;
4. when the model calls a tool, map the rendered name back to ``(server, tool)``
   with :meth:`~jit.selection.toolset.ToolSet.resolve` and call it through the manager;
   when it calls the meta-tool, add the named tools' full definitions.

Run it against the real API (needs ``ANTHROPIC_API_KEY``)::

    python examples/harness.py --config config.json

Servers the config starts as ``python`` (config.json's example servers) run on the interpreter running
the harness, which has jit and the MCP SDK. A shard none of whose tool calls succeeded is a failure:
the harness names each shard's failed calls and exits with 1. ``tests/test_examples.py`` runs it
with a mocked HTTP transport instead.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import sys
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread

from jit import (
    HARNESS_SERVER,
    META_TOOL,
    ClientManager,
    Compiler,
    Config,
    Embedder,
    JitError,
    TaskContext,
    Tier,
    ToolSet,
    embedder_from_config,
    full_definition,
    load_config,
    open_catalog,
    sync,
)

DEFAULT_MODEL = "claude-sonnet-4-6"
MAX_TURNS = 8
#: The commands :func:`with_this_python` runs on this interpreter.
PYTHONS = ("python", "python3")

#: The shards this example spawns: (shard, task).
SHARDS = (
    ("coder", "Find where the greeting text 'hello' is defined in the code and change it to 'hello, world'."),
    ("researcher", "Look through the project notes for what was decided about the release and summarise it."),
)


@dataclass
class ShardRun:
    """One shard's conversation: its tool set, what the model sees, and what happened."""

    shard: str
    task: str
    toolset: ToolSet
    tools: list[dict[str, Any]]
    messages: list[dict[str, Any]] = field(default_factory=list)
    calls: list[dict[str, Any]] = field(default_factory=list)
    answer: str = ""

    @property
    def system(self) -> str:
        return (f"You are the {self.shard} agent of a team. Use the tools to do your task. "
                f"Tools listed in {META_TOOL} can be loaded by calling it with their names.")

    @property
    def failure(self) -> str | None:
        """Why the shard did not do its task (no tool call of it succeeded), or None."""
        if any(not c["is_error"] for c in self.calls):
            return None
        failed = [f"{c['tool']} failed: {c['error']}" for c in self.calls]
        return "; ".join(failed) or f"no tool was called: {self.answer}"


def spawn(compiler: Compiler, shard: str, task: str, budget: int | None = None) -> ShardRun:
    """Compile a shard's tool set; the model starts with its Anthropic rendering."""
    toolset = compiler.compile(TaskContext(shard=shard, task=task, budget=budget))
    run = ShardRun(shard=shard, task=task, toolset=toolset, tools=toolset.render("anthropic"))
    run.messages.append({"role": "user", "content": task})
    return run


def expand(run: ShardRun, names: list[str]) -> str:
    """The meta-tool: add the full definitions of Condensed / Minimal tools to the shard's tools."""
    loaded, unknown = [], []
    have = [t["name"] for t in run.tools]
    at = have.index(META_TOOL) if META_TOOL in have else len(have)
    for name in names:
        st = run.toolset.get(name)
        if st is None or st.tier is Tier.EXCLUDED:
            unknown.append(name)
        elif name not in have:
            run.tools.insert(at, full_definition(st))  # before the meta-tool, keeping the prefix stable
            at += 1
            loaded.append(name)
    parts = [f"loaded: {', '.join(loaded)}" if loaded else "nothing new loaded"]
    if unknown:
        parts.append(f"not in this tool set: {', '.join(unknown)}")
    return "; ".join(parts) + ". Call the loaded tools directly now."


async def call(manager: ClientManager, run: ShardRun, name: str, arguments: dict[str, Any]) -> tuple[str, bool]:
    """Run one ``tool_use``: resolve the rendered name and call the tool on its server."""
    if name == META_TOOL:
        return expand(run, list(arguments.get("names") or [])), False
    server, tool = None, name
    try:
        server, tool = run.toolset.resolve(name)
        if server == HARNESS_SERVER:  # a real harness runs its own tools (file reads, shell) itself
            text, is_error = f"{tool!r} is a harness tool; this example harness does not implement it", True
        else:
            result = await manager.call_tool(server, tool, arguments)
            text, is_error = result.text() or json.dumps(result.structured_content), result.is_error
    except JitError as exc:  # offline server, unknown tool, timeout: the model reads why
        text, is_error = json.dumps(exc.to_dict()), True
    # Every call is recorded, a failed one with its error.
    run.calls.append({"server": server, "tool": tool, "arguments": arguments, "is_error": is_error}
                     | ({"error": text} if is_error else {}))
    return text, is_error


async def converse(client: Any, manager: ClientManager, run: ShardRun, model: str) -> ShardRun:
    """The tool loop of one shard, until the model stops calling tools (or ``MAX_TURNS``)."""
    for _ in range(MAX_TURNS):
        request = {"model": model, "max_tokens": 1024, "system": run.system, "tools": run.tools,
                   "messages": run.messages}
        # The sync client runs in a worker thread so both shards talk to the API at once.
        response = await anyio.to_thread.run_sync(functools.partial(client.messages.create, **request))
        content = [block.model_dump(exclude_none=True) for block in response.content]
        run.messages.append({"role": "assistant", "content": content})
        if response.stop_reason != "tool_use":
            run.answer = "\n".join(b.text for b in response.content if b.type == "text")
            return run
        results = []
        for block in response.content:
            if block.type == "tool_use":
                text, is_error = await call(manager, run, block.name, dict(block.input))
                results.append({"type": "tool_result", "tool_use_id": block.id, "content": text,
                                "is_error": is_error})
        run.messages.append({"role": "user", "content": results})
    run.answer = f"(stopped after {MAX_TURNS} turns)"
    return run


def with_this_python(config: Config) -> Config:
    """``config`` with the servers it starts as ``python`` run by this interpreter: the first ``python``
    on ``PATH`` may be another one, without the MCP SDK the example servers need."""
    servers = {name: s.model_copy(update={"command": sys.executable}) if getattr(s, "command", "") in PYTHONS else s
               for name, s in config.servers.items()}
    return replace(config, servers=servers)


async def main(config_path: str | Path | None, client: Any, *, embedder: Embedder | None = None,
               model: str = DEFAULT_MODEL, shards: tuple[tuple[str, str], ...] = SHARDS) -> list[ShardRun]:
    """Sync the catalog, spawn ``shards`` and run their conversations concurrently."""
    config = with_this_python(load_config(config_path))
    embedder = embedder or embedder_from_config(config.embedding)
    with open_catalog(config) as store:  # this config's servers and the harness's tools
        async with ClientManager(config, store) as manager:
            await sync(config, store, embedder, manager=manager)
            with Compiler(store, config, embedder) as compiler:
                runs = [spawn(compiler, shard, task) for shard, task in shards]
                async with anyio.create_task_group() as tg:
                    for run in runs:
                        tg.start_soon(converse, client, manager, run, model)
    return runs


def _cli() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", help="jit config (default: as the jit command's)")
    parser.add_argument("--model", default=DEFAULT_MODEL)
    args = parser.parse_args()
    if not os.environ.get("ANTHROPIC_API_KEY"):
        sys.exit("set ANTHROPIC_API_KEY to run the harness against the Messages API")
    import anthropic

    runs = anyio.run(lambda: main(args.config, anthropic.Anthropic(), model=args.model), backend="asyncio")
    for run in runs:
        full = [t["name"] for t in run.tools if t["name"] != META_TOOL]
        print(f"## {run.shard}: {run.task}\n\ntools: {', '.join(full)}\ncalls: {run.calls}\n\n{run.answer}\n")
    failed = [f"{run.shard}: {run.failure}" for run in runs if run.failure]
    if failed:
        sys.exit("the example failed, no tool call succeeded for\n" + "\n".join(failed))


if __name__ == "__main__":
    _cli()
