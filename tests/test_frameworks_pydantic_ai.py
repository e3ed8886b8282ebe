"""pydantic-ai with jit (jit/adapters/pydantic_ai.py) end to end: a ``FunctionModel`` plays the model,
the agent's real loop calls jit's toolset, the calls reach the example servers' real processes."""

from __future__ import annotations

import json

import pytest
from frameworks_scenario import CODER, NOTE, RESEARCHER, Script, environment, researcher_moving_on

pytest.importorskip("pydantic_ai")

from pydantic_ai import Agent  # noqa: E402
from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart, ToolReturnPart  # noqa: E402
from pydantic_ai.models.function import AgentInfo, FunctionModel  # noqa: E402

from jit.adapters.agent_tools import META_TOOLS, ToolSpec  # noqa: E402
from jit.adapters.pydantic_ai import JitToolset  # noqa: E402
from jit.selection.tiers import Tier  # noqa: E402

pytestmark = [pytest.mark.anyio, pytest.mark.frameworks, pytest.mark.slow]  # real server processes


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def scripted(script: Script, shown_specs: list[list[ToolSpec]]) -> FunctionModel:
    """A FunctionModel answering as ``script`` does, keeping the tool definitions it was given each turn."""

    def respond(messages, info: AgentInfo) -> ModelResponse:
        shown_specs.append([ToolSpec(t.name, t.description or "", t.parameters_json_schema)
                            for t in info.function_tools])
        returned = [p for p in messages[-1].parts if isinstance(p, ToolReturnPart)]
        move = script.move([t.name for t in info.function_tools], returned[-1].model_response_str() if returned
                           else None)
        if isinstance(move, str):
            return ModelResponse(parts=[TextPart(move)])
        return ModelResponse(parts=[ToolCallPart(move[0], json.dumps(move[1]))])

    return FunctionModel(respond)


async def test_a_pydantic_ai_agent_reaches_a_tool_outside_full_through_jit(tmp_path, hashing_embedder):
    async with environment(tmp_path, hashing_embedder) as env:
        tools = await env.tools(CODER)
        assert tools.toolset.get("tracker__add_note").tier is not Tier.FULL
        script, shown = Script("tracker__add_note", NOTE, query="add a note to the project tracker"), []
        agent = Agent(scripted(script, shown), toolsets=[JitToolset(tools)])

        result = await agent.run(CODER[1])

        # The model was shown the Full tier as tools and jit's meta-tools, nothing else, on every turn.
        full = [s.name for s in tools.toolset.tier(Tier.FULL) if s.server != "harness"]
        assert full and all([s.name for s in specs] == full + list(META_TOOLS) for specs in shown)
        assert shown[0] == tools.specs() and tools.tokens(shown[0]) == tools.tokens() > 0
        # Three model turns: search, call through jit_call_tool, answer.
        assert len(shown) == 3 and script.searched and script.called
        # The call reached the tracker process, which saved the note; jit recorded its usage.
        assert [n["title"] for n in env.notes()] == ["Release plan", "Greeting"]
        assert env.calls("tracker", "add_note") == 1
        assert [(c.server, c.tool, c.answer.is_error) for c in tools.calls] == [("tracker", "add_note", False)]
        assert result.output.startswith("Done: ") and "Greeting" in result.output


async def test_a_denied_tool_is_neither_shown_nor_callable_and_the_tools_follow_a_new_task_mid_run(
        tmp_path, hashing_embedder):
    async with researcher_moving_on(tmp_path, hashing_embedder) as (env, tools, run):
        shown: list[list[ToolSpec]] = []
        result = await Agent(scripted(run.script, shown), toolsets=[JitToolset(tools)]).run(RESEARCHER[1])
        run.check(env, shown, result.output)
