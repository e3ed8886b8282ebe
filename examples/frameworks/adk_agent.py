"""A Google ADK agent with jit's tools (jit/adapters/google_adk.py): one toolset, the role's tools for its task.

    python examples/frameworks/adk_agent.py [--config config.json] [--offline]

With ``GOOGLE_API_KEY`` set the agent runs on Gemini; without it, or with ``--offline``, a ``BaseLlm``
plays the model as jit_agent.scripted_move says. Exits with 1 when no tool call succeeded.
"""

from __future__ import annotations

import os
import sys
from collections.abc import AsyncGenerator
from typing import Any

import anyio
from google.adk.agents import LlmAgent
from google.adk.models.base_llm import BaseLlm
from google.adk.models.llm_request import LlmRequest
from google.adk.models.llm_response import LlmResponse
from google.adk.runners import InMemoryRunner
from google.genai import types
from jit_agent import INSTRUCTIONS, TASK, agent_tools, parser, report, scripted_move

from jit.adapters.google_adk import JitToolset


class ScriptedLlm(BaseLlm):
    """ADK's model interface answering as ``move(shown, results)`` does (default :func:`scripted_move`);
    ``given`` keeps the function declarations it was given on each call."""

    model: str = "scripted"
    move: Any = scripted_move
    given: list = []

    async def generate_content_async(self, llm_request: LlmRequest, stream: bool = False
                                     ) -> AsyncGenerator[LlmResponse, None]:
        declarations = [d for t in (llm_request.config.tools or []) for d in (t.function_declarations or [])]
        self.given.append(declarations)
        responses = [p.function_response.response for c in llm_request.contents for p in (c.parts or [])
                     if p.function_response]
        move = self.move([d.name for d in declarations], [r.get("result", r.get("error")) for r in responses])
        part = types.Part(text=move) if isinstance(move, str) else \
            types.Part(function_call=types.FunctionCall(name=move[0], args=move[1]))
        yield LlmResponse(content=types.Content(role="model", parts=[part]))


async def run(agent: LlmAgent, text: str) -> str:
    """One run of ``agent`` on ``text`` in a fresh in-memory session; the last text it says."""
    runner = InMemoryRunner(agent=agent, app_name="jit")
    session = await runner.session_service.create_session(app_name="jit", user_id="user")
    answer = ""
    async for event in runner.run_async(user_id="user", session_id=session.id,
                                        new_message=types.Content(role="user", parts=[types.Part(text=text)])):
        if event.content and event.content.parts and event.content.parts[0].text:
            answer = event.content.parts[0].text
    return answer


async def main(config: str | None, offline: bool, budget: int | None) -> int:
    async with agent_tools(config, budget=budget) as tools:
        model = ScriptedLlm() if offline or not os.environ.get("GOOGLE_API_KEY") else "gemini-2.5-flash"
        agent = LlmAgent(name="coder", model=model, instruction=INSTRUCTIONS, tools=[JitToolset(tools)])
        return report(tools, await run(agent, TASK))


if __name__ == "__main__":
    args = parser(__doc__.splitlines()[0]).parse_args()
    sys.exit(anyio.run(main, args.config, args.offline, args.budget))
