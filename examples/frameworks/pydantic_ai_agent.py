"""A pydantic-ai agent with jit's tools (jit/adapters/pydantic_ai.py): one toolset, the role's tools for its task.

    python examples/frameworks/pydantic_ai_agent.py [--config config.json] [--offline]

With ``ANTHROPIC_API_KEY`` (or ``OPENAI_API_KEY``) set the agent runs on that provider's model; without
one, or with ``--offline``, pydantic-ai's ``FunctionModel`` plays the model as jit_agent.scripted_move
says. Exits with 1 when no tool call succeeded.
"""

from __future__ import annotations

import os
import sys

import anyio
from jit_agent import INSTRUCTIONS, TASK, agent_tools, parser, report, scripted_move
from pydantic_ai import Agent
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart, ToolReturnPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from jit.adapters.pydantic_ai import JitToolset


def scripted_model() -> FunctionModel:
    def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        results = [p.model_response_str() for m in messages for p in m.parts if isinstance(p, ToolReturnPart)]
        move = scripted_move([t.name for t in info.function_tools], results)
        return ModelResponse(parts=[TextPart(move)] if isinstance(move, str) else [ToolCallPart(move[0], move[1])])

    return FunctionModel(respond)


def real_model() -> str | None:
    if os.environ.get("ANTHROPIC_API_KEY"):
        return "anthropic:claude-sonnet-4-6"
    return "openai:gpt-4.1-mini" if os.environ.get("OPENAI_API_KEY") else None


async def main(config: str | None, offline: bool, budget: int | None) -> int:
    async with agent_tools(config, budget=budget) as tools:
        model = None if offline else real_model()
        agent = Agent(model or scripted_model(), instructions=INSTRUCTIONS, toolsets=[JitToolset(tools)])
        result = await agent.run(TASK)
        return report(tools, result.output)


if __name__ == "__main__":
    args = parser(__doc__.splitlines()[0]).parse_args()
    sys.exit(anyio.run(main, args.config, args.offline, args.budget))
