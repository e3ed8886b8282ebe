"""The OpenAI Agents SDK with jit (jit/adapters/openai_agents.py) end to end: a ``Model`` of the SDK's
interface plays the model, the SDK's ``Runner`` lists and calls jit's MCP server, the calls reach the
example servers' real processes."""

from __future__ import annotations

import itertools
import json

import pytest
from frameworks_scenario import CODER, NOTE, RESEARCHER, Script, environment

pytest.importorskip("agents")

from agents import Agent, ModelResponse, RunConfig, Runner, Usage  # noqa: E402
from agents.models.interface import Model  # noqa: E402
from openai.types.responses import ResponseFunctionToolCall, ResponseOutputMessage, ResponseOutputText  # noqa: E402

from jit.adapters.agent_tools import META_TOOLS, ToolSpec  # noqa: E402
from jit.adapters.openai_agents import JitMCPServer  # noqa: E402
from jit.selection.tiers import Tier  # noqa: E402

pytestmark = [pytest.mark.anyio, pytest.mark.frameworks, pytest.mark.slow]  # real server processes


#: No trace export: the tests need no key and no network.
OFFLINE = RunConfig(tracing_disabled=True)


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def output_text(output) -> str:
    """A function call's output as the SDK hands it back: a string, or a list of content items."""
    return output if isinstance(output, str) else "".join(i.get("text", "") for i in output)


class ScriptedModel(Model):
    """The SDK's model interface answering as a :class:`Script` does; keeps the tools it was given."""

    def __init__(self, script: Script) -> None:
        self.script = script
        self.shown: list[list[ToolSpec]] = []
        self._ids = itertools.count(1)

    async def get_response(self, system_instructions, input, model_settings, tools, output_schema, handoffs,
                           tracing, **_kw) -> ModelResponse:
        self.shown.append([ToolSpec(t.name, t.description, t.params_json_schema) for t in tools])
        outputs = [i for i in input if isinstance(i, dict) and i.get("type") == "function_call_output"] \
            if isinstance(input, list) else []
        move = self.script.move([t.name for t in tools], output_text(outputs[-1]["output"]) if outputs else None)
        n = next(self._ids)
        if isinstance(move, str):
            item = ResponseOutputMessage(id=f"msg_{n}", type="message", role="assistant", status="completed",
                                         content=[ResponseOutputText(type="output_text", text=move, annotations=[])])
        else:
            item = ResponseFunctionToolCall(id=f"fc_{n}", call_id=f"call_{n}", type="function_call", name=move[0],
                                            arguments=json.dumps(move[1]))
        return ModelResponse(output=[item], usage=Usage(), response_id=None)

    def stream_response(self, *args, **kwargs):
        raise AssertionError("the test runs the agent without streaming")


def agent_for(tools, model: ScriptedModel) -> Agent:
    return Agent(name=tools.shard, instructions=f"You are the {tools.shard} agent.", model=model,
                 mcp_servers=[JitMCPServer(tools)])


async def test_an_agents_sdk_agent_reaches_a_tool_outside_full_through_jit(tmp_path, hashing_embedder):
    async with environment(tmp_path, hashing_embedder) as env:
        tools = await env.tools(CODER)
        assert tools.toolset.get("tracker__add_note").tier is not Tier.FULL
        model = ScriptedModel(Script("tracker__add_note", NOTE, query="add a note to the project tracker"))

        result = await Runner.run(agent_for(tools, model), CODER[1], run_config=OFFLINE)

        full = [s.name for s in tools.toolset.tier(Tier.FULL) if s.server != "harness"]
        assert full and all([s.name for s in specs] == full + list(META_TOOLS) for specs in model.shown)
        # The SDK passes the definitions on as jit gave them (its strict-schema conversion is off by default).
        assert [s.parameters for s in model.shown[0]] == [s.parameters for s in tools.specs()]
        assert tools.tokens(model.shown[0]) == tools.tokens() > 0
        assert len(model.shown) == 3 and model.script.searched and model.script.called
        assert [n["title"] for n in env.notes()] == ["Release plan", "Greeting"]
        assert env.calls("tracker", "add_note") == 1
        assert result.final_output.startswith("Done: ") and "Greeting" in result.final_output


async def test_a_denied_tool_is_neither_shown_nor_callable_and_the_tools_follow_a_new_task_mid_run(
        tmp_path, hashing_embedder):
    async with environment(tmp_path, hashing_embedder) as env:
        tools = await env.tools(RESEARCHER)
        before = [s.name for s in tools.full()]
        script = Script("tracker__search_notes", {"query": "release"}, probes=["workspace__write_file"])
        model = ScriptedModel(script)
        moved = False

        original = script.move

        def move(shown, result):  # the harness gives the agent a new task after its first call
            nonlocal moved
            if result is not None and not moved:
                moved = True
                tools.set_task("Look through the project notes and issues about the release and summarise them.")
            return original(shown, result)

        script.move = move
        result = await Runner.run(agent_for(tools, model), RESEARCHER[1], run_config=OFFLINE)

        everything = json.dumps([s.openai() for specs in model.shown for s in specs])
        assert "workspace__write_file" not in everything
        denied = json.loads(script.results[0])
        assert denied["error"] == "tool_denied" and env.calls("workspace", "write_file") == 0
        assert "Release plan" in result.final_output and env.calls("tracker", "search_notes") == 1
        # The turn after the new task was given the new compile's tools.
        after = [s.name for s in tools.full()]
        assert after != before
        assert [s.name for s in model.shown[0]] == before + list(META_TOOLS)
        assert [s.name for s in model.shown[-1]] == after + list(META_TOOLS)
