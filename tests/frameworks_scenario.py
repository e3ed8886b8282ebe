"""What the framework adapters' end-to-end tests share (tests/test_frameworks_*.py).

A real catalog of the example servers (examples/servers/, run as processes by the client manager),
synced with the hashing embedder, and :class:`Script`: the scripted model's mind, the same for every
framework. Each framework's own test model (pydantic-ai's ``FunctionModel``, an Agents SDK ``Model``,
a LangChain chat model) asks the script for its next move given the tools it was shown and the last
tool result, so each test drives the framework's real agent loop through jit to the servers.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from conftest import write_example_config

from jit.adapters.agent_tools import CALL_TOOL, META_TOOLS, SEARCH_TOOL, AgentTools, ToolSpec
from jit.catalog.ownership import open_catalog
from jit.client.manager import ClientManager
from jit.config_files import load_config
from jit.pipeline import sync
from jit.selection.compiler import Compiler

#: The coder's task; at this budget the tracker's add_note is not in its Full tier.
CODER = ("coder", "Find where the greeting text 'hello' is defined in the code and change it to 'hello, world'.")
RESEARCHER = ("researcher", "Look through the project notes for what was decided about the release and summarise it.")
BUDGET = 800
NOTE = {"title": "Greeting", "text": "The greeting moves to 'hello, world'."}
#: The researcher's next task, given after its first call.
NEXT_TASK = "Look through the project notes and issues about the release and summarise them."
RELEASE_NOTE = {"notes": [{"id": 1, "title": "Release plan", "text": "Decided: ship the release on Friday.",
                           "tags": ["release"], "created_at": 0}], "next_note": 2}


@dataclass
class Env:
    root: Path
    manager: ClientManager
    compiler: Compiler

    async def tools(self, role: tuple[str, str]) -> AgentTools:
        return await AgentTools.create(self.compiler, self.manager, role[0], role[1], budget=BUDGET)

    def notes(self) -> list[dict[str, Any]]:
        """The tracker server's notes, as it saved them: what reached the upstream."""
        return json.loads((self.root / "tracker.json").read_text())["notes"]

    def calls(self, server: str, tool: str) -> int:
        return (self.manager.store.usage(server, tool) or {}).get("calls", 0)


@contextlib.asynccontextmanager
async def environment(root: Path, embedder: Any, **keys: Any) -> AsyncIterator[Env]:
    """The example servers as real processes behind a client manager, a synced catalog and a compiler
    (``keys``: more top-level keys of the config)."""
    config = load_config(write_example_config(root, **keys))
    (root / "tracker.json").write_text(json.dumps(RELEASE_NOTE), encoding="utf-8")
    with open_catalog(config) as store:
        async with ClientManager(config, store) as manager:
            await sync(config, store, embedder, manager=manager)
            with Compiler(store, config, embedder) as compiler:
                yield Env(root, manager, compiler)


@dataclass
class Script:
    """The scripted model: first ``probes`` (tools it must not have: called through jit_call_tool), then
    ``want`` with ``arguments``: called at once if it was shown, else searched for (``query``) and
    called through jit_call_tool with the schema the search gave; then an answer quoting the result."""

    want: str
    arguments: dict[str, Any]
    query: str = ""
    probes: list[str] = field(default_factory=list)
    #: What the model was shown on each turn (tool names), and the tool results it read.
    shown: list[list[str]] = field(default_factory=list)
    results: list[str] = field(default_factory=list)
    searched: bool = False
    called: bool = False
    #: The harness's move: after the first tool result, ``tools.set_task(task)``.
    then: tuple[AgentTools, str] | None = None

    def move(self, shown: list[str], result: str | None) -> tuple[str, dict[str, Any]] | str:
        """The next tool call ``(name, arguments)``, or the final answer's text."""
        self.shown.append(list(shown))
        if result is not None:
            self.results.append(result)
            if self.then is not None and len(self.results) == 1:
                self.then[0].set_task(self.then[1])
        if self.probes:
            return CALL_TOOL, {"name": self.probes.pop(0), "arguments": {}}
        if self.called:
            return f"Done: {self.results[-1][:200]}"
        if self.want in shown:
            self.called = True
            return self.want, dict(self.arguments)
        if not self.searched:
            self.searched = True
            return SEARCH_TOOL, {"query": self.query}
        hits = {h["name"]: h for h in json.loads(self.results[-1])["tools"]}
        assert "input_schema" in hits[self.want], f"the search gave no schema for {self.want}: {hits}"
        self.called = True
        return CALL_TOOL, {"name": self.want, "arguments": dict(self.arguments)}


class DeniedThenNewTask:
    """The researcher's run: it probes ``workspace__write_file`` (denied to the read-only role), is given
    :data:`NEXT_TASK` after that first call, and searches the notes; :meth:`check` what it was shown."""

    def __init__(self, tools: AgentTools) -> None:
        self.tools = tools
        self.before = [s.name for s in tools.full()]
        self.script = Script("tracker__search_notes", {"query": "release"}, probes=["workspace__write_file"],
                             then=(tools, NEXT_TASK))

    def check(self, env: Env, shown: list[list[ToolSpec]], answer: str) -> None:
        """Denied: never shown, refused with ``tool_denied``, nothing sent; the answer came from the notes;
        the first turn had the first task's Full tier, the last one the new task's."""
        assert "workspace__write_file" not in json.dumps([s.openai() for specs in shown for s in specs])
        denied = json.loads(self.script.results[0])
        assert denied["error"] == "tool_denied" and denied["shard"] == "researcher"
        assert env.calls("workspace", "write_file") == 0  # nothing was sent
        assert "Release plan" in answer and env.calls("tracker", "search_notes") == 1
        after = [s.name for s in self.tools.full()]
        assert after != self.before
        assert [s.name for s in shown[0]] == self.before + list(META_TOOLS)
        assert [s.name for s in shown[-1]] == after + list(META_TOOLS)


@contextlib.asynccontextmanager
async def researcher_moving_on(root: Path, embedder: Any) -> AsyncIterator[tuple[Env, AgentTools, DeniedThenNewTask]]:
    """:func:`environment`, the researcher's tools and :class:`DeniedThenNewTask` over them."""
    async with environment(root, embedder) as env:
        tools = await env.tools(RESEARCHER)
        yield env, tools, DeniedThenNewTask(tools)
