"""LangChain and LangGraph: jit's tools for one role and task as ``StructuredTool``s, calls through jit.

::

    tools = await AgentTools.create(compiler, manager, "coder", "fix the greeting in src/app.py")
    agent = create_react_agent(chat_model, langchain_tools(tools))      # langgraph.prebuilt
    state = await agent.ainvoke({"messages": [("user", "fix the greeting in src/app.py")]})

:func:`langchain_tools` turns :meth:`AgentTools.specs <jit.adapters.agent_tools.AgentTools.specs>` (the
Full tools, then ``jit_search_tools``, ``jit_describe_tool`` and ``jit_call_tool``) into tools whose
argument schema is the upstream tool's JSON Schema as jit renders it; each is asynchronous and calls
:meth:`AgentTools.run <jit.adapters.agent_tools.AgentTools.run>` (the role check, the call through jit's
client manager, the usage record), and its answer's text is the tool message the model reads.

A LangChain tool list is fixed once bound (a LangGraph agent's tool node holds it): after
:meth:`~jit.adapters.agent_tools.AgentTools.set_task`, ``jit_call_tool`` already reaches the new task's
tools (it resolves any name the role may have), and calling :func:`langchain_tools` again, for the next
agent built, gives them as tools of their own. Needs ``langchain-core`` (and ``langgraph`` for its
prebuilt agent; the ``frameworks`` extra).
"""

from __future__ import annotations

from typing import Any

from langchain_core.tools import StructuredTool

from .agent_tools import AgentTools, ToolSpec

__all__ = ["langchain_tools"]


def _tool(tools: AgentTools, spec: ToolSpec) -> StructuredTool:
    async def call(**arguments: Any) -> str:
        return (await tools.run(spec.name, arguments)).text

    return StructuredTool(name=spec.name, description=spec.description, args_schema=spec.parameters,
                          coroutine=call)


def langchain_tools(tools: AgentTools) -> list[StructuredTool]:
    """The tools the model is given for ``tools``' current task, as LangChain tools (async only)."""
    return [_tool(tools, spec) for spec in tools.specs()]
