"""A LangGraph agent with jit's tools (jit/adapters/langchain.py): LangGraph's prebuilt ReAct agent, the role's tools.

    python examples/frameworks/langgraph_agent.py [--config config.json] [--offline]

With ``ANTHROPIC_API_KEY`` set (and ``langchain-anthropic`` installed) the agent runs on Claude; without
it, or with ``--offline``, a LangChain chat model emitting tool calls plays the model as
jit_agent.scripted_move says. Exits with 1 when no tool call succeeded.
"""

from __future__ import annotations

import itertools
import os
import sys
import warnings
from typing import Any

import anyio
from jit_agent import INSTRUCTIONS, TASK, agent_tools, parser, report, scripted_move
from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import AIMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.utils.function_calling import convert_to_openai_tool
from langgraph.prebuilt import create_react_agent

from jit.adapters.langchain import langchain_tools

# langgraph 1.x points to `langchain.agents.create_agent`, in the `langchain` package this example does not need.
warnings.filterwarnings("ignore", message="create_react_agent has been moved")


class ScriptedChatModel(BaseChatModel):
    """A chat model answering as :func:`scripted_move` does, with the tools ``bind_tools`` gave it."""

    ids: Any = None

    @property
    def _llm_type(self) -> str:
        return "scripted"

    def bind_tools(self, tools: Any, **kwargs: Any) -> Any:
        return self.bind(tools=[convert_to_openai_tool(t) for t in tools], **kwargs)

    def _generate(self, messages: Any, stop: Any = None, run_manager: Any = None, **kwargs: Any) -> ChatResult:
        results = [m.content for m in messages if isinstance(m, ToolMessage)]
        move = scripted_move([t["function"]["name"] for t in kwargs.get("tools", [])], results)
        message = AIMessage(content=move) if isinstance(move, str) else AIMessage(
            content="", tool_calls=[{"name": move[0], "args": move[1], "id": f"call_{next(self.ids)}",
                                     "type": "tool_call"}])
        return ChatResult(generations=[ChatGeneration(message=message)])


def chat_model(offline: bool) -> BaseChatModel:
    if offline or not os.environ.get("ANTHROPIC_API_KEY"):
        return ScriptedChatModel(ids=itertools.count(1))
    try:
        from langchain_anthropic import ChatAnthropic
    except ImportError:
        sys.exit("ANTHROPIC_API_KEY is set but langchain-anthropic is not installed: pip install langchain-anthropic "
                 "(or pass --offline)")
    return ChatAnthropic(model="claude-sonnet-4-6")


async def main(config: str | None, offline: bool, budget: int | None) -> int:
    async with agent_tools(config, budget=budget) as tools:
        agent = create_react_agent(chat_model(offline), langchain_tools(tools), prompt=INSTRUCTIONS)
        state = await agent.ainvoke({"messages": [("user", TASK)]})
        return report(tools, str(state["messages"][-1].content))


if __name__ == "__main__":
    args = parser(__doc__.splitlines()[0]).parse_args()
    sys.exit(anyio.run(main, args.config, args.offline, args.budget))
