"""pydantic-ai: jit's tools for one role and task as a toolset (``JitToolset``), calls through jit.

::

    tools = await AgentTools.create(compiler, manager, "coder", "fix the greeting in src/app.py")
    agent = Agent(model, toolsets=[JitToolset(tools)])
    result = await agent.run("fix the greeting in src/app.py")

The toolset lists :meth:`AgentTools.specs <jit.adapters.agent_tools.AgentTools.specs>` on every
step of a run (the Full tools, then ``jit_search_tools``, ``jit_describe_tool`` and ``jit_call_tool``),
so a :meth:`~jit.adapters.agent_tools.AgentTools.set_task` between steps changes what the model is
given next. Every call goes through :meth:`AgentTools.run <jit.adapters.agent_tools.AgentTools.run>`
(the role check, the call through the client manager, the usage record); arguments are checked by
the upstream server against its own schema, not again here. Needs ``pydantic-ai-slim`` (the
``frameworks`` extra).
"""

from __future__ import annotations

from typing import Any

from pydantic_ai import RunContext
from pydantic_ai.tools import ToolDefinition
from pydantic_ai.toolsets import AbstractToolset, ToolsetTool
from pydantic_core import SchemaValidator, core_schema

from .agent_tools import AgentTools

__all__ = ["JitToolset"]

#: Arguments are a JSON object; what is in it is the upstream tool's to judge.
_ARGUMENTS = SchemaValidator(core_schema.dict_schema(core_schema.str_schema(), core_schema.any_schema()))


class JitToolset(AbstractToolset[Any]):
    """A pydantic-ai toolset over one :class:`~jit.adapters.agent_tools.AgentTools`."""

    def __init__(self, tools: AgentTools, *, id: str | None = "jit", max_retries: int = 1) -> None:
        self.tools = tools
        self._id = id
        self.max_retries = max_retries

    @property
    def id(self) -> str | None:
        return self._id

    async def get_tools(self, ctx: RunContext[Any]) -> dict[str, ToolsetTool[Any]]:
        return {
            spec.name: ToolsetTool(
                toolset=self,
                tool_def=ToolDefinition(name=spec.name, description=spec.description,
                                        parameters_json_schema=spec.parameters),
                max_retries=self.max_retries,
                args_validator=_ARGUMENTS,
            )
            for spec in self.tools.specs()
        }

    async def call_tool(self, name: str, tool_args: dict[str, Any], ctx: RunContext[Any],
                        tool: ToolsetTool[Any]) -> str:
        """The answer's text: a failed call's too (an upstream ``isError`` or a jit error's payload), for
        the model to read and act on."""
        return (await self.tools.run(name, tool_args)).text
