"""Google ADK: jit's tools for one role and task as a toolset of an agent (``JitToolset``), calls through jit.

::

    tools = await AgentTools.create(compiler, manager, "coder", "fix the greeting in src/app.py")
    agent = LlmAgent(name="coder", model="gemini-2.5-flash", tools=[JitToolset(tools)])

ADK asks an agent's toolsets for their tools on every model call; this toolset answers with
:meth:`AgentTools.specs <jit.adapters.agent_tools.AgentTools.specs>` (the Full tools, then
``jit_search_tools``, ``jit_describe_tool`` and ``jit_call_tool``) and keeps no per-invocation cache,
as ADK's own skill toolset does not, so a :meth:`~jit.adapters.agent_tools.AgentTools.set_task` changes
what the next model call is given. Each tool declares the upstream's JSON Schema as it is
(``parameters_json_schema``) and runs through :meth:`AgentTools.run
<jit.adapters.agent_tools.AgentTools.run>` (the role check, the call through jit's client manager, the
usage record); its answer is ``{"result": text}``, or ``{"error": text}`` for a failed call. Needs
``google-adk`` (the ``frameworks`` extra).
"""

from __future__ import annotations

from typing import Any

from google.adk.agents.readonly_context import ReadonlyContext
from google.adk.tools.base_tool import BaseTool
from google.adk.tools.base_toolset import BaseToolset
from google.adk.tools.tool_context import ToolContext
from google.genai import types

from .agent_tools import AgentTools, ToolSpec

__all__ = ["JitTool", "JitToolset"]


class JitTool(BaseTool):
    """One of the tools an :class:`~jit.adapters.agent_tools.AgentTools` gives the model, as an ADK tool."""

    def __init__(self, tools: AgentTools, spec: ToolSpec) -> None:
        super().__init__(name=spec.name, description=spec.description)
        self.tools = tools
        self.spec = spec

    def _get_declaration(self) -> types.FunctionDeclaration:
        return types.FunctionDeclaration(name=self.spec.name, description=self.spec.description,
                                         parameters_json_schema=self.spec.parameters)

    async def run_async(self, *, args: dict[str, Any], tool_context: ToolContext) -> dict[str, Any]:
        answer = await self.tools.run(self.spec.name, args)
        return {"error" if answer.is_error else "result": answer.text}


class JitToolset(BaseToolset):
    """An ADK toolset over one :class:`~jit.adapters.agent_tools.AgentTools`, read afresh on every model call."""

    def __init__(self, tools: AgentTools) -> None:
        super().__init__()
        self.tools = tools
        self._use_invocation_cache = False  # the tool set follows set_task within one invocation

    async def get_tools(self, readonly_context: ReadonlyContext | None = None) -> list[BaseTool]:
        return [JitTool(self.tools, spec) for spec in self.tools.specs()]
