"""``jit serve`` learns from its session: a tool the agent found through ``search_tools`` and called
is in Full for the next similar task. A real MCP client over stdio to a ``jit serve`` process, the
repo's example servers (examples/servers/) as its real upstreams, the real model."""

from __future__ import annotations

import sys

import anyio
import pytest
from conftest import example_servers_in_process, write_example_config
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from jit.catalog.store import Store
from jit.config_files import load_config
from jit.pipeline import sync

pytestmark = pytest.mark.anyio

TIMEOUT = 180
ENV = {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}

#: Decisions the agent keeps as tracker notes: no word of them names a note.
DONE = ["we agreed to drop python 3.9 support, keep that somewhere",
        "we agreed to drop support for macos 12, keep that somewhere",
        "we agreed to drop the v1 API, keep that somewhere"]
NEXT = "we agreed to drop windows support, keep that somewhere"


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def _tier(compiled, name: str) -> str | None:
    return next((t["tier"] for t in compiled.structured_content["tools"] if t["name"] == name), None)


async def test_a_tool_found_by_search_and_called_is_in_full_for_the_next_similar_task(tmp_path, embedder):
    path = write_example_config(tmp_path, connection={"reconnect_attempts": 0, "ping_interval": 0})
    config = load_config(path)
    with Store(config.store_path) as store:
        await sync(example_servers_in_process(config), store, embedder)
    params = StdioServerParameters(command=sys.executable, args=["-m", "jit", "serve", "--stdio", "--config", str(path)],
                                   env=ENV)
    async with stdio_client(params) as (read, write), ClientSession(read, write, read_timeout_seconds=TIMEOUT) as s:
        with anyio.fail_after(TIMEOUT):
            await s.initialize()
            first = await s.call_tool("compile_tools", {"shard": "coder", "task": NEXT})
            assert _tier(first, "tracker__add_note") != "full"
            for task in DONE:
                await s.call_tool("compile_tools", {"shard": "coder", "task": task})
                found = await s.call_tool("search_tools", {"query": "write a project note", "limit": 3})
                hit = next(t for t in found.structured_content["tools"] if t["name"] == "tracker__add_note")
                called = await s.call_tool("call_tool", {"server": hit["server"], "tool": hit["tool"],
                                                         "arguments": {"title": "decision", "text": task}})
                assert not called.is_error
            again = await s.call_tool("compile_tools", {"shard": "coder", "task": NEXT})
    assert _tier(again, "tracker__add_note") == "full"
    with Store(config.store_path) as store:
        [row] = [r for r in store.learned_summary("coder") if r["tool"] == "add_note"]
    assert row["ok_tasks"] == 3 and row["server"] == "tracker"
