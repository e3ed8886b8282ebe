"""The OpenAI Agents SDK with jit (jit/adapters/openai_agents.py) end to end: a ``Model`` of the SDK's
interface (the example's, examples/frameworks/openai_agents_agent.py) plays the model, the SDK's ``Runner`` lists and calls jit's MCP server, the calls reach the
example servers' real processes."""

from __future__ import annotations

import sys

import pytest
from conftest import REPO
from frameworks_scenario import CODER, NOTE, RESEARCHER, Script, environment, researcher_moving_on

pytest.importorskip("agents")

from agents import Agent, RunConfig, Runner  # noqa: E402

from jit.adapters.agent_tools import META_TOOLS, ToolSpec  # noqa: E402
from jit.adapters.openai_agents import JitMCPServer  # noqa: E402
from jit.selection.tiers import Tier  # noqa: E402

sys.path.insert(0, str(REPO / "examples" / "frameworks"))  # the example's own `from jit_agent import ...`
from openai_agents_agent import ScriptedModel  # noqa: E402

pytestmark = [pytest.mark.anyio, pytest.mark.frameworks, pytest.mark.slow]  # real server processes


#: No trace export: the tests need no key and no network.
OFFLINE = RunConfig(tracing_disabled=True)


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def scripted(script: Script) -> ScriptedModel:
    """The example's scripted model (examples/frameworks/openai_agents_agent.py) moving as ``script`` does;
    ``shown`` holds the tool definitions the SDK gave it on each turn."""
    model = ScriptedModel(lambda shown, results: script.move(shown, results[-1] if results else None))
    model.script = script
    return model


def shown(model: ScriptedModel) -> list[list[ToolSpec]]:
    return [[ToolSpec(t.name, t.description, t.params_json_schema) for t in tools] for tools in model.given]


def agent_for(tools, model) -> Agent:
    return Agent(name=tools.shard, instructions=f"You are the {tools.shard} agent.", model=model,
                 mcp_servers=[JitMCPServer(tools)])


async def test_an_agents_sdk_agent_reaches_a_tool_outside_full_through_jit(tmp_path, hashing_embedder):
    async with environment(tmp_path, hashing_embedder) as env:
        tools = await env.tools(CODER)
        assert tools.toolset.get("tracker__add_note").tier is not Tier.FULL
        model = scripted(Script("tracker__add_note", NOTE, query="add a note to the project tracker"))

        result = await Runner.run(agent_for(tools, model), CODER[1], run_config=OFFLINE)

        full = [s.name for s in tools.toolset.tier(Tier.FULL) if s.server != "harness"]
        assert full and all([s.name for s in specs] == full + list(META_TOOLS) for specs in shown(model))
        # The SDK passes the definitions on as jit gave them (its strict-schema conversion is off by default).
        assert [s.parameters for s in shown(model)[0]] == [s.parameters for s in tools.specs()]
        assert tools.tokens(shown(model)[0]) == tools.tokens() > 0
        assert len(shown(model)) == 3 and model.script.searched and model.script.called
        assert [n["title"] for n in env.notes()] == ["Release plan", "Greeting"]
        assert env.calls("tracker", "add_note") == 1
        assert result.final_output.startswith("Done: ") and "Greeting" in result.final_output


async def test_a_denied_tool_is_neither_shown_nor_callable_and_the_tools_follow_a_new_task_mid_run(
        tmp_path, hashing_embedder):
    async with researcher_moving_on(tmp_path, hashing_embedder) as (env, tools, run):
        model = scripted(run.script)
        result = await Runner.run(agent_for(tools, model), RESEARCHER[1], run_config=OFFLINE)
        run.check(env, shown(model), result.final_output)
