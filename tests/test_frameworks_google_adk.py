"""Google ADK with jit (jit/adapters/google_adk.py) end to end: a ``BaseLlm`` (the example's,
examples/frameworks/adk_agent.py) answering as the scripted model does plays the model, ADK's runner lists and runs jit's toolset, the calls reach the example
servers' real processes."""

from __future__ import annotations

import sys

import pytest
from conftest import REPO
from frameworks_scenario import CODER, NOTE, RESEARCHER, Script, environment, researcher_moving_on

pytest.importorskip("google.adk")

from google.adk.agents import LlmAgent  # noqa: E402

from jit.adapters.agent_tools import META_TOOLS, ToolSpec  # noqa: E402
from jit.adapters.google_adk import JitToolset  # noqa: E402
from jit.selection.tiers import Tier  # noqa: E402

sys.path.insert(0, str(REPO / "examples" / "frameworks"))  # the example's own `from jit_agent import ...`
from adk_agent import ScriptedLlm, run as run_agent  # noqa: E402

pytestmark = [pytest.mark.anyio, pytest.mark.frameworks, pytest.mark.slow]  # real server processes


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def scripted(script: Script) -> ScriptedLlm:
    """The example's scripted model (examples/frameworks/adk_agent.py) moving as ``script`` does."""
    model = ScriptedLlm(move=lambda shown, results: script.move(shown, results[-1] if results else None))
    return model


def shown(model: ScriptedLlm) -> list[list[ToolSpec]]:
    """The declarations the model was given on each call, as specs."""
    return [[ToolSpec(d.name, d.description, d.parameters_json_schema) for d in call] for call in model.given]


def agent(tools, model: ScriptedLlm) -> LlmAgent:
    return LlmAgent(name=tools.shard, model=model, tools=[JitToolset(tools)])


async def test_an_adk_agent_reaches_a_tool_outside_full_through_jit(tmp_path, hashing_embedder):
    async with environment(tmp_path, hashing_embedder) as env:
        tools = await env.tools(CODER)
        assert tools.toolset.get("tracker__add_note").tier is not Tier.FULL
        script = Script("tracker__add_note", NOTE, query="add a note to the project tracker")
        model = scripted(script)

        answer = await run_agent(agent(tools, model), CODER[1])

        full = [s.name for s in tools.toolset.tier(Tier.FULL) if s.server != "harness"]
        assert full and all([s.name for s in specs] == full + list(META_TOOLS) for specs in shown(model))
        assert shown(model)[0] == tools.specs() and tools.tokens(shown(model)[0]) == tools.tokens() > 0
        assert len(shown(model)) == 3 and script.searched and script.called
        assert [n["title"] for n in env.notes()] == ["Release plan", "Greeting"]
        assert env.calls("tracker", "add_note") == 1
        assert answer.startswith("Done: ") and "Greeting" in answer


async def test_a_denied_tool_is_neither_shown_nor_callable_and_the_tools_follow_a_new_task_mid_run(
        tmp_path, hashing_embedder):
    async with researcher_moving_on(tmp_path, hashing_embedder) as (env, tools, run):
        model = scripted(run.script)
        answer = await run_agent(agent(tools, model), RESEARCHER[1])
        run.check(env, shown(model), answer)
