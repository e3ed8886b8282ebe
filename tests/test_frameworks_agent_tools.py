"""AgentTools (jit/adapters/agent_tools.py), what every framework adapter shares: the model's wrong
moves answered with one clear error each, and nothing of them sent upstream."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest
from frameworks_scenario import CODER, NOTE, environment

from jit.adapters.agent_tools import CALL_TOOL, DESCRIBE_TOOL, SEARCH_TOOL

pytestmark = [pytest.mark.anyio, pytest.mark.frameworks, pytest.mark.slow]  # real server processes


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def test_wrong_moves_get_one_clear_error_each_and_describe_gives_what_call_needs(tmp_path, hashing_embedder):
    async with environment(tmp_path, hashing_embedder) as env:
        tools = await env.tools(CODER)

        async def error(name: str, arguments: dict) -> dict:
            answer = await tools.run(name, arguments)
            assert answer.is_error, answer
            return json.loads(answer.text)

        assert (await error(SEARCH_TOOL, {"query": "notes", "limit": 0}))["path"] == "arguments.limit"
        assert (await error(SEARCH_TOOL, {}))["path"] == "arguments.query"
        assert (await error(CALL_TOOL, {"name": "tracker__add_note", "arguments": "title"}))["path"] == \
            "arguments.arguments"
        assert (await error(CALL_TOOL, {"name": "nowhere__nothing"}))["error"] == "tool_not_found"
        # A harness tool (available_tools.json's own) is the framework's to run, never jit's to send.
        harness = next(s.name for s in tools.toolset.selected() if s.server == "harness")
        assert harness not in [s.name for s in tools.specs()]
        assert "harness tool" in (await error(harness, {}))["message"]
        # An upstream tool's own failure comes back as its isError answer.
        failed = await tools.run("tracker__read_note", {"note_id": 99})
        assert failed.is_error and "99" in failed.text

        described = json.loads((await tools.run(DESCRIBE_TOOL, {"name": "tracker__add_note"})).text)
        assert described["definition"]["input_schema"]["required"] == ["title", "text"]
        assert [(c.server, c.tool, c.answer.is_error) for c in tools.calls] == \
            [(None, None, True), (None, None, True), ("tracker", "read_note", True)]
        assert env.calls("tracker", "read_note") == 1 and env.calls("tracker", "add_note") == 0


async def test_a_changed_definition_under_pinned_definitions_is_neither_described_nor_called(tmp_path,
                                                                                           hashing_embedder):
    async with environment(tmp_path, hashing_embedder, security={"pin_definitions": True}) as env:
        store = env.manager.store
        listed = [st.tool for st in store.tools("tracker")]
        changed = [replace(t, description=t.description + " Also mails the note to the whole company.")
                   if t.name == "add_note" else t for t in listed]
        assert store.sync_tools("tracker", changed).awaiting_approval == ["add_note"]
        tools = await env.tools(CODER)

        for answer in (await tools.run(DESCRIBE_TOOL, {"name": "tracker__add_note"}),
                       await tools.run(CALL_TOOL, {"name": "tracker__add_note", "arguments": NOTE})):
            assert answer.is_error and json.loads(answer.text)["error"] == "tool_not_approved"
        search = json.loads((await tools.run(SEARCH_TOOL, {"query": "add a note to the project tracker"})).text)
        assert all("input_schema" not in h for h in search["tools"] if h["name"] == "tracker__add_note")
        assert [n["title"] for n in env.notes()] == ["Release plan"]  # nothing reached the tracker
