"""LangGraph with jit (jit/adapters/langchain.py) end to end: a LangChain chat model emitting tool calls
plays the model inside LangGraph's prebuilt ReAct agent, which runs jit's tools; the calls reach the
example servers' real processes."""

from __future__ import annotations

import itertools
import json
from typing import Any

import pytest
from frameworks_scenario import CODER, NOTE, RESEARCHER, Script, environment

pytest.importorskip("langgraph")

from langchain_core.language_models.chat_models import BaseChatModel  # noqa: E402
from langchain_core.messages import AIMessage, ToolMessage  # noqa: E402
from langchain_core.outputs import ChatGeneration, ChatResult  # noqa: E402
from langchain_core.utils.function_calling import convert_to_openai_tool  # noqa: E402
from langgraph.prebuilt import create_react_agent  # noqa: E402

from jit.adapters.agent_tools import META_TOOLS, ToolSpec  # noqa: E402
from jit.adapters.langchain import langchain_tools  # noqa: E402
from jit.selection.tiers import Tier  # noqa: E402

pytestmark = [pytest.mark.anyio, pytest.mark.frameworks, pytest.mark.slow,  # real server processes
              # langgraph 1.x points to `langchain.agents.create_agent`, a package jit does not install.
              pytest.mark.filterwarnings("ignore:create_react_agent has been moved")]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


class ScriptedChatModel(BaseChatModel):
    """A chat model answering as a :class:`Script` does, with the tools ``bind_tools`` gave it (in the
    Chat Completions shape a provider would be sent)."""

    script: Any
    shown: list = []
    ids: Any = None

    @property
    def _llm_type(self) -> str:
        return "scripted"

    def bind_tools(self, tools, **kwargs):
        return self.bind(tools=[convert_to_openai_tool(t) for t in tools], **kwargs)

    def _generate(self, messages, stop=None, run_manager=None, **kwargs) -> ChatResult:
        tools = kwargs.get("tools", [])
        self.shown.append([ToolSpec(t["function"]["name"], t["function"]["description"],
                                    t["function"]["parameters"]) for t in tools])
        last = messages[-1]
        move = self.script.move([t["function"]["name"] for t in tools],
                                last.content if isinstance(last, ToolMessage) else None)
        if isinstance(move, str):
            message = AIMessage(content=move)
        else:
            message = AIMessage(content="", tool_calls=[{"name": move[0], "args": move[1], "id": f"call_{next(self.ids)}",
                                                         "type": "tool_call"}])
        return ChatResult(generations=[ChatGeneration(message=message)])


def scripted(script: Script) -> ScriptedChatModel:
    return ScriptedChatModel(script=script, shown=[], ids=itertools.count(1))


async def test_a_langgraph_agent_reaches_a_tool_outside_full_through_jit(tmp_path, hashing_embedder):
    async with environment(tmp_path, hashing_embedder) as env:
        tools = await env.tools(CODER)
        assert tools.toolset.get("tracker__add_note").tier is not Tier.FULL
        model = scripted(Script("tracker__add_note", NOTE, query="add a note to the project tracker"))

        state = await create_react_agent(model, langchain_tools(tools)).ainvoke({"messages": [("user", CODER[1])]})

        full = [s.name for s in tools.toolset.tier(Tier.FULL) if s.server != "harness"]
        assert full and all([s.name for s in specs] == full + list(META_TOOLS) for specs in model.shown)
        # LangChain sends jit's definitions with the schemas' "title" keys dropped: the same tools and
        # arguments, a few tokens fewer.
        assert [(s.name, s.description, sorted(s.parameters["properties"])) for s in model.shown[0]] == \
            [(s.name, s.description, sorted(s.parameters["properties"])) for s in tools.specs()]
        assert 0 < tools.tokens(model.shown[0]) <= tools.tokens()
        assert len(model.shown) == 3 and model.script.searched and model.script.called
        assert [n["title"] for n in env.notes()] == ["Release plan", "Greeting"]
        assert env.calls("tracker", "add_note") == 1
        answer = state["messages"][-1].content
        assert answer.startswith("Done: ") and "Greeting" in answer


async def test_a_denied_tool_is_neither_shown_nor_callable(tmp_path, hashing_embedder):
    async with environment(tmp_path, hashing_embedder) as env:
        tools = await env.tools(RESEARCHER)
        script = Script("tracker__search_notes", {"query": "release"}, probes=["workspace__write_file"])
        model = scripted(script)

        state = await create_react_agent(model, langchain_tools(tools)).ainvoke(
            {"messages": [("user", RESEARCHER[1])]})

        everything = json.dumps([s.openai() for specs in model.shown for s in specs])
        assert "workspace__write_file" not in everything
        denied = json.loads(script.results[0])
        assert denied["error"] == "tool_denied" and env.calls("workspace", "write_file") == 0
        assert "Release plan" in state["messages"][-1].content and env.calls("tracker", "search_notes") == 1
