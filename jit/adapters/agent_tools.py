"""One agent's jit tools, framework-neutral: the compiled tool set of a role and a task, and every call back through jit.

The framework adapters (:mod:`jit.adapters.openai_agents`, :mod:`jit.adapters.pydantic_ai`,
:mod:`jit.adapters.langchain`) each turn an :class:`AgentTools` into their framework's tools; this
module is what they share, so a call takes one path whatever the framework.

What the model is given (:meth:`AgentTools.specs`), by tier:

* the **Full** tools of the compiled :class:`~jit.selection.toolset.ToolSet`, each as a tool of its own
  with its complete definition (named ``server__tool`` as every jit rendering names it);
* ``jit_call_tool(name, arguments)``, whose description lists the **Condensed** tools (a line each)
  and the **Minimal** ones (names), and which calls any tool the role may have;
* ``jit_search_tools(query)``, ranking the whole catalog for the role (the best hits carry their
  input schema, so a tool outside the tool set is two model turns away: search, then call);
* ``jit_describe_tool(name)``, one tool's full definition.

Denied tools are in none of these: the compile leaves them out, the search ranks for the role.
Harness tools (``available_tools.json``'s own) are left to the framework, which runs its own tools.

Every call of a tool (:meth:`AgentTools.call`), directly or through ``jit_call_tool``, goes:

1. the name to ``(server, tool)``: the tool set's, else the catalog's rendered name;
2. the role check, :meth:`Compiler.check_allowed <jit.selection.compiler.Compiler.check_allowed>` on
   the newest catalog (a tool awaiting approval is judged on its new definition and on the one last
   approved), refusing a denied tool before anything is sent;
3. :meth:`ClientManager.call_tool <jit.client.manager.ClientManager.call_tool>`: timeouts, the offline
   error, ``security.pin_definitions``, result checks, and the usage record.

A jit error on the way is the tool's answer, its ``to_dict()`` as JSON, for the model to read and act
on; every call is kept in :attr:`AgentTools.calls`. :meth:`AgentTools.set_task` recompiles for a new
task: the adapters read :meth:`AgentTools.specs` on each model turn, so the tools follow.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import anyio.to_thread

from ..analysis.analyze import hostile_flags
from ..errors import InvalidArgumentsError, JitError, ToolNotFoundError
from ..models import HARNESS_SERVER
from ..payloads import add_search_schemas, described_for_model
from ..selection.render import also_line, by_tier, condensed_line, full_definition, summary_line
from ..selection.task import TaskContext
from ..selection.tokens import EstimateCounter

if TYPE_CHECKING:
    from ..client.manager import ClientManager
    from ..selection.compiler import Compiler
    from ..selection.toolset import ToolSet

__all__ = ["CALL_TOOL", "DESCRIBE_TOOL", "META_TOOLS", "SEARCH_TOOL", "AgentTools", "Answer", "Call", "ToolSpec"]

SEARCH_TOOL = "jit_search_tools"
DESCRIBE_TOOL = "jit_describe_tool"
CALL_TOOL = "jit_call_tool"
META_TOOLS = (SEARCH_TOOL, DESCRIBE_TOOL, CALL_TOOL)


@dataclass(frozen=True)
class ToolSpec:
    """One tool as a framework declares it: a name, a description and a JSON Schema of its arguments."""

    name: str
    description: str
    parameters: dict[str, Any]

    def openai(self) -> dict[str, Any]:
        """The Chat Completions ``tools`` entry: what the bench counts as the definition a model is sent."""
        return {"type": "function", "function": {"name": self.name, "description": self.description,
                                                 "parameters": self.parameters}}


@dataclass(frozen=True)
class Answer:
    """What a tool call gives back to the model: text, whether it failed, and structured content if any."""

    text: str
    is_error: bool = False
    structured: Any = None


@dataclass(frozen=True)
class Call:
    """One call the agent made: the name the model used, the upstream tool it reached (None when refused
    before that), the arguments and the answer."""

    name: str
    server: str | None
    tool: str | None
    arguments: dict[str, Any]
    answer: Answer


def _object(properties: dict[str, Any], required: Sequence[str]) -> dict[str, Any]:
    return {"type": "object", "properties": properties, "required": list(required), "additionalProperties": False}


_NAME = {"type": "string", "description": "The tool's name (server__tool), as listed or as jit_search_tools gives it"}


@dataclass
class AgentTools:
    """The tools of one agent: a role (``shard``) and its task, compiled by ``compiler``, called through ``manager``.

    Build it with :meth:`create` (compiles off the event loop) or directly in synchronous code."""

    compiler: Compiler
    manager: ClientManager
    shard: str
    task: str
    budget: int | None = None
    calls: list[Call] = field(default_factory=list)
    toolset: ToolSet = field(init=False)

    def __post_init__(self) -> None:
        self.toolset = self._compile(self.task)

    @classmethod
    async def create(cls, compiler: Compiler, manager: ClientManager, shard: str, task: str, *,
                     budget: int | None = None) -> AgentTools:
        """:class:`AgentTools` compiled in a worker thread (a compile embeds the task and runs the rules)."""
        return await anyio.to_thread.run_sync(lambda: cls(compiler, manager, shard, task, budget))

    def _compile(self, task: str) -> ToolSet:
        return self.compiler.compile(TaskContext(shard=self.shard, task=task, budget=self.budget))

    def set_task(self, task: str) -> ToolSet:
        """Recompile for ``task`` (same role and budget); the next model turn sees the new tool set."""
        self.toolset = self._compile(task)
        self.task = task
        return self.toolset

    async def aset_task(self, task: str) -> ToolSet:
        """:meth:`set_task` in a worker thread."""
        return await anyio.to_thread.run_sync(self.set_task, task)

    # ---------------------------------------------------------------- what the model is shown

    def full(self) -> list[ToolSpec]:
        """The Full tier's tools, complete definitions, harness tools left out."""
        full, _condensed, _minimal = by_tier(self.toolset.tools)
        out = []
        for st in full:
            if st.server == HARNESS_SERVER:
                continue
            fn = full_definition(st, "openai")["function"]
            out.append(ToolSpec(fn["name"], fn["description"], fn["parameters"]))
        return out

    def meta(self) -> list[ToolSpec]:
        """jit's three meta-tools, ``jit_call_tool`` listing the Condensed and Minimal tools."""
        _full, condensed, minimal = by_tier(self.toolset.tools)
        condensed = [s for s in condensed if s.server != HARNESS_SERVER]
        minimal = [s for s in minimal if s.server != HARNESS_SERVER]
        listing = ["Call any tool by name, with its arguments (jit_describe_tool gives a tool's schema)."]
        if condensed:
            listing.append("More tools for this task (name: what it does):")
            listing.extend(condensed_line(s) for s in condensed)
        if minimal:
            listing.append(also_line(minimal))
        return [
            ToolSpec(SEARCH_TOOL, f"Find tools for the {self.shard} role by what they should do, best first. "
                     "The best hits carry their input schema: call one with jit_call_tool next.",
                     _object({"query": {"type": "string", "description": "What the tool should do, in plain words"},
                              "limit": {"type": "integer", "minimum": 1, "maximum": 50,
                                        "description": "How many tools to return (default 10)"}}, ["query"])),
            ToolSpec(DESCRIBE_TOOL, "The full definition of one tool: its description and input schema.",
                     _object({"name": _NAME}, ["name"])),
            ToolSpec(CALL_TOOL, "\n".join(listing),
                     _object({"name": _NAME, "arguments": {"type": "object", "description": "The tool's arguments"}},
                             ["name"])),
        ]

    def specs(self) -> list[ToolSpec]:
        """Everything the model is given for the current task: the Full tools, then the meta-tools."""
        return self.full() + self.meta()

    def tokens(self, specs: Sequence[ToolSpec] | None = None) -> int:
        """Tokens of ``specs`` (default: :meth:`specs`) as Chat Completions tool definitions, by jit's
        offline estimate (:class:`~jit.selection.tokens.EstimateCounter`)."""
        return EstimateCounter().count_tools([s.openai() for s in (self.specs() if specs is None else specs)])

    # ---------------------------------------------------------------- calls

    async def run(self, name: str, arguments: dict[str, Any] | None) -> Answer:
        """Answer the model's call of ``name`` (a meta-tool or a tool), jit errors as the answer's text."""
        arguments = dict(arguments or {})
        try:
            if name == SEARCH_TOOL:
                return _data(await self.search(_text(arguments, "query", name), _limit(arguments)))
            if name == DESCRIBE_TOOL:
                return _data(await self.describe(_text(arguments, "name", name)))
            if name == CALL_TOOL:
                inner = arguments.get("arguments") or {}
                if not isinstance(inner, dict):
                    raise _bad(CALL_TOOL, "arguments", "must be an object")
                return await self.call(_text(arguments, "name", CALL_TOOL), inner)
            return await self.call(name, arguments)
        except JitError as exc:
            return Answer(json.dumps(exc.to_dict(), ensure_ascii=False, default=str), is_error=True)

    def _resolve(self, name: str) -> tuple[str, str]:
        st = self.toolset.get(name)
        if st is not None:
            return st.server, st.tool_name
        catalog = self.compiler.catalog
        view = catalog.snapshot()
        t = catalog.tool_named(view, name)
        if t is None:
            raise ToolNotFoundError.not_in_toolset(name)
        return view.heads[t]

    async def _allowed(self, name: str) -> tuple[str, str]:
        """``(server, tool)`` of ``name``, once the role check passed (raises ``ToolDeniedError``)."""
        server, tool = await anyio.to_thread.run_sync(self._resolve, name)
        if server == HARNESS_SERVER:
            raise ToolNotFoundError(f"{name!r} is a harness tool: the framework runs it, not jit",
                                    server=server, tool=tool)
        await anyio.to_thread.run_sync(self.compiler.check_allowed, self.shard, server, tool)
        return server, tool

    async def call(self, name: str, arguments: dict[str, Any]) -> Answer:
        """Call the tool the model names ``name`` on its server, through the role check; recorded in :attr:`calls`."""
        server = tool = None
        try:
            server, tool = await self._allowed(name)
            result = await self.manager.call_tool(server, tool, arguments)
            answer = Answer(result.text() or json.dumps(result.structured_content, ensure_ascii=False),
                            result.is_error, result.structured_content)
        except JitError as exc:
            answer = Answer(json.dumps(exc.to_dict(), ensure_ascii=False, default=str), is_error=True)
        self.calls.append(Call(name, server, tool, arguments, answer))
        return answer

    async def search(self, query: str, limit: int = 10) -> dict[str, Any]:
        """The catalog ranked for ``query`` and the role (denied tools are not ranked); flagged text withheld."""
        def ranked() -> list[dict[str, Any]]:
            config = self.compiler.config
            found = [(st, score, name) for st, score, name in self.compiler.rank_named(query, limit, shard=self.shard)
                     if st.tool.server != HARNESS_SERVER]
            flags = [hostile_flags(st, config.available_tools) for st, _score, _name in found]
            hits = [{"name": name, "score": round(float(score), 4), "online": st.online,
                     "summary": summary_line(st.tool.description, st.analysis.condensed if st.analysis else "", f)}
                    for (st, score, name), f in zip(found, flags, strict=True)]
            add_search_schemas(hits, [st for st, _score, _name in found], flags, config.serve)
            return hits

        return {"query": query, "shard": self.shard, "tools": await anyio.to_thread.run_sync(ranked)}

    async def describe(self, name: str) -> dict[str, Any]:
        """One tool's definition as the role may read it: a denied tool is refused as a call to it is, a
        definition awaiting approval under ``security.pin_definitions`` too, and flagged text is withheld."""
        server, tool = await self._allowed(name)

        def record() -> dict[str, Any]:
            config, store = self.compiler.config, self.manager.store
            stored = store.tool(server, tool)
            if stored is None:
                raise ToolNotFoundError.in_catalog(server, tool, server_known=store.server(server) is not None)
            full = described_for_model(config, store, stored)
            return {k: full[k] for k in ("name", "server", "tool", "online", "definition")}

        return await anyio.to_thread.run_sync(record)


def _data(data: dict[str, Any]) -> Answer:
    return Answer(json.dumps(data, ensure_ascii=False, default=str), structured=data)


def _bad(meta: str, key: str, problem: str) -> InvalidArgumentsError:
    """A meta-tool's argument the model got wrong: jit's own tool, so nothing went upstream."""
    return InvalidArgumentsError(server="jit", tool=meta, path=f"arguments.{key}", problem=problem)


def _text(arguments: dict[str, Any], key: str, meta: str) -> str:
    value = arguments.get(key)
    if not isinstance(value, str) or not value.strip():
        raise _bad(meta, key, "is required: a non-empty string")
    return value


def _limit(arguments: dict[str, Any]) -> int:
    value = arguments.get("limit", 10)
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= 50:
        raise _bad(SEARCH_TOOL, "limit", "must be an integer from 1 to 50")
    return value
