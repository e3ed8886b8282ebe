"""An OpenAI Agents SDK agent with jit's tools (jit/adapters/openai_agents.py): one MCP server, the role's tools.

    python examples/frameworks/openai_agents_agent.py [--config config.json] [--offline]

With ``OPENAI_API_KEY`` set the agent runs on the SDK's default OpenAI model; without it, or with
``--offline``, a ``Model`` of the SDK's interface plays the model as jit_agent.scripted_move says
(tracing off: nothing leaves the machine). Exits with 1 when no tool call succeeded.
"""

from __future__ import annotations

import itertools
import json
import os
import sys
from collections.abc import Callable
from typing import Any

import anyio
from agents import Agent, ModelResponse, RunConfig, Runner, Usage
from agents.models.interface import Model
from jit_agent import INSTRUCTIONS, TASK, agent_tools, parser, report, scripted_move
from openai.types.responses import ResponseFunctionToolCall, ResponseOutputMessage, ResponseOutputText

from jit.adapters.openai_agents import JitMCPServer


def _text(output: Any) -> str:
    """A function call's output as the SDK hands it back: a string, or a list of content items."""
    return output if isinstance(output, str) else "".join(i.get("text", "") for i in output)


class ScriptedModel(Model):
    """The SDK's model interface, answering as ``move(shown, results)`` does (default :func:`scripted_move`);
    ``given`` keeps the tools the SDK gave it on each turn."""

    def __init__(self, move: Callable[[list[str], list[str]], tuple[str, dict[str, Any]] | str] = scripted_move
                 ) -> None:
        self.move = move
        self.given: list[list[Any]] = []
        self._ids = itertools.count(1)

    async def get_response(self, system_instructions, input, model_settings, tools, output_schema, handoffs,
                           tracing, **_kw) -> ModelResponse:
        self.given.append(list(tools))
        items = input if isinstance(input, list) else []
        results = [_text(i["output"]) for i in items if isinstance(i, dict) and i.get("type") == "function_call_output"]
        move, n = self.move([t.name for t in tools], results), next(self._ids)
        if isinstance(move, str):
            item = ResponseOutputMessage(id=f"msg_{n}", type="message", role="assistant", status="completed",
                                         content=[ResponseOutputText(type="output_text", text=move, annotations=[])])
        else:
            item = ResponseFunctionToolCall(id=f"fc_{n}", call_id=f"call_{n}", type="function_call", name=move[0],
                                            arguments=json.dumps(move[1]))
        return ModelResponse(output=[item], usage=Usage(), response_id=None)

    def stream_response(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError("the scripted model does not stream; run the agent with Runner.run")


async def main(config: str | None, offline: bool, budget: int | None) -> int:
    async with agent_tools(config, budget=budget) as tools:
        scripted = offline or not os.environ.get("OPENAI_API_KEY")
        agent = Agent(name="coder", instructions=INSTRUCTIONS, mcp_servers=[JitMCPServer(tools)],
                      **({"model": ScriptedModel()} if scripted else {}))
        result = await Runner.run(agent, TASK, run_config=RunConfig(tracing_disabled=scripted))
        return report(tools, str(result.final_output))


if __name__ == "__main__":
    args = parser(__doc__.splitlines()[0]).parse_args()
    sys.exit(anyio.run(main, args.config, args.offline, args.budget))
