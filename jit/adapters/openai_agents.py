"""The OpenAI Agents SDK: jit's tools for one role and task as an MCP server of the agent (``JitMCPServer``).

::

    tools = await AgentTools.create(compiler, manager, "coder", "fix the greeting in src/app.py")
    agent = Agent(name="coder", instructions="...", mcp_servers=[JitMCPServer(tools)])
    result = await Runner.run(agent, "fix the greeting in src/app.py")

The SDK lists an agent's MCP servers' tools on every turn (``Agent.get_mcp_tools``); this server lists
:meth:`AgentTools.specs <jit.adapters.agent_tools.AgentTools.specs>` (the Full tools, then
``jit_search_tools``, ``jit_describe_tool`` and ``jit_call_tool``), so what the model is given follows
:meth:`~jit.adapters.agent_tools.AgentTools.set_task`, as a ``tool_filter`` would but from jit's
compile. It is a server in the SDK's sense only: nothing is spawned or dialled; each call goes through
:meth:`AgentTools.run <jit.adapters.agent_tools.AgentTools.run>` (the role check, the call through jit's
client manager to the upstream server, the usage record). Needs ``openai-agents`` (the ``frameworks``
extra); the SDK's ``require_approval`` and guardrails apply as to any MCP server.
"""

from __future__ import annotations

from typing import Any

from agents.mcp import MCPServer
from mcp.types import CallToolResult, GetPromptResult, ListPromptsResult, TextContent, Tool

from ..errors import JitError
from .agent_tools import AgentTools

__all__ = ["JitMCPServer"]


class JitMCPServer(MCPServer):
    """An Agents SDK MCP server over one :class:`~jit.adapters.agent_tools.AgentTools`."""

    def __init__(self, tools: AgentTools, *, name: str = "jit", **options: Any) -> None:
        super().__init__(**options)
        self.tools = tools
        self._name = name

    @property
    def name(self) -> str:
        return self._name

    async def connect(self) -> None:
        """Nothing to open: the upstream connections are jit's client manager's."""

    async def cleanup(self) -> None:
        """Nothing to close: the client manager's owner closes it."""

    async def list_tools(self, run_context: Any = None, agent: Any = None) -> list[Tool]:
        return [Tool(name=s.name, description=s.description, input_schema=s.parameters) for s in self.tools.specs()]

    async def call_tool(self, tool_name: str, arguments: dict[str, Any] | None,
                        meta: dict[str, Any] | None = None) -> CallToolResult:
        """The call through jit; a failure (an upstream ``isError``, a jit error's payload) is an
        ``isError`` result the model reads."""
        answer = await self.tools.run(tool_name, arguments)
        return CallToolResult(content=[TextContent(type="text", text=answer.text)], is_error=answer.is_error)

    async def list_prompts(self) -> ListPromptsResult:
        return ListPromptsResult(prompts=[])

    async def get_prompt(self, name: str, arguments: dict[str, Any] | None = None) -> GetPromptResult:
        raise JitError(f"no prompt {name!r}: jit's adapter serves tools only (`jit serve` passes prompts through)",
                       prompt=name)
