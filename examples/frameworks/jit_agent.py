"""What the framework examples share: the jit side of one agent, the scripted model's moves, the report.

Each example (``pydantic_ai_agent.py``, ``openai_agents_agent.py``, ``langgraph_agent.py``) gives its
framework jit's tools for the ``coder`` role and :data:`TASK`, then runs the framework's own agent loop:
with a real model when the provider's key is set, else (or with ``--offline``) with the framework's
test model answering as :func:`scripted_move` does: call :data:`WANT` if it was given as a tool, else
find it with ``jit_search_tools`` and call it through ``jit_call_tool``, then answer with its result.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
from collections.abc import AsyncIterator, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from jit import ClientManager, Compiler, Config, embedder_from_config, load_config, open_catalog, sync
from jit.adapters.agent_tools import CALL_TOOL, SEARCH_TOOL, AgentTools

SHARD = "coder"
TASK = "Find where the greeting text 'hello' is defined in the code and change it to 'hello, world'."
#: The tool the scripted model wants, and its arguments.
WANT = ("workspace__search_text", {"query": "hello"})
INSTRUCTIONS = ("You are the coder agent of a team. Use the tools to do your task. More tools than you are given "
                "are reachable: jit_call_tool lists some, jit_search_tools finds the rest.")
#: The commands :func:`with_this_python` runs on this interpreter.
PYTHONS = ("python", "python3")


def with_this_python(config: Config) -> Config:
    """``config`` with the servers it starts as ``python`` run by this interpreter, which has jit and the
    MCP SDK the example servers need (the first ``python`` on ``PATH`` may be another one)."""
    servers = {name: s.model_copy(update={"command": sys.executable}) if getattr(s, "command", "") in PYTHONS else s
               for name, s in config.servers.items()}
    return replace(config, servers=servers)


@contextlib.asynccontextmanager
async def agent_tools(config_path: str | Path | None, *, budget: int | None = None) -> AsyncIterator[AgentTools]:
    """The config's servers connected and synced, and the coder's tools for :data:`TASK`."""
    config = with_this_python(load_config(config_path))
    embedder = embedder_from_config(config.embedding)
    with open_catalog(config) as store:
        async with ClientManager(config, store) as manager:
            await sync(config, store, embedder, manager=manager)
            with Compiler(store, config, embedder) as compiler:
                yield await AgentTools.create(compiler, manager, SHARD, TASK, budget=budget)


def scripted_move(shown: Sequence[str], results: Sequence[str]) -> tuple[str, dict[str, Any]] | str:
    """The scripted model's next move, from the tool names it is given and the tool results so far: a
    tool call ``(name, arguments)`` or the final answer."""
    want, arguments = WANT
    if not results:
        return (want, dict(arguments)) if want in shown else (SEARCH_TOOL, {"query": "search the code for text"})
    if len(results) == 1 and want not in shown:
        return CALL_TOOL, {"name": want, "arguments": dict(arguments)}
    return f"Found it: {results[-1][:300]}"


def parser(description: str) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=description)
    p.add_argument("--config", help="jit config (default: as the jit command's)")
    p.add_argument("--offline", action="store_true", help="the scripted model even when a key is set")
    p.add_argument("--budget", type=int, help="token budget of the compile (default: the config's)")
    return p


def report(tools: AgentTools, answer: str) -> int:
    """Print what the model was given and what it did; 1 when no call reached a tool and succeeded."""
    given = [s.name for s in tools.specs()]
    print(f"## {tools.shard}: {tools.task}\n\ngiven: {', '.join(given)} ({tools.tokens()} tokens)")
    for call in tools.calls:
        print(f"call: {call.name} -> {call.server}/{call.tool} {json.dumps(call.arguments)}: "
              f"{'failed' if call.answer.is_error else 'ok'}")
    print(f"\n{answer}")
    if any(c.server is not None and not c.answer.is_error for c in tools.calls):
        return 0
    failed = [f"{c.name} failed: {c.answer.text[:300]}" for c in tools.calls] or ["no tool was called"]
    print("the example failed, no tool call succeeded:\n" + "\n".join(failed), file=sys.stderr)
    return 1
