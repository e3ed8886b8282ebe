"""``jit serve`` as a full proxy: what a plain MCP proxy passes through, jit passes too.

Against @modelcontextprotocol/server-everything (a server jit's authors did not write, installed
by scripts/install-test-servers.sh), seen directly and through ``jit serve --stdio``, both by the
SDK's own ``ClientSession``: its resources, resource templates and prompts (listed, read, got),
its sampling, elicitation and roots requests relayed to jit's client, progress of a long call,
logs, and the capabilities each upstream connection is offered (those of jit's client).
"""

from __future__ import annotations

import json
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.shared.exceptions import MCPDeprecationWarning, MCPError
from servers.support import EVERYTHING_BIN, EVERYTHING_DIR
from test_clients_thirdparty import require

pytestmark = [pytest.mark.anyio, pytest.mark.slow]  # node and jit serve processes

TIMEOUT = 120
ENV = {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def everything() -> str:
    import shutil

    found = EVERYTHING_BIN.exists() and (EVERYTHING_DIR / "dist" / "index.js").exists() and shutil.which("node")
    return require("@modelcontextprotocol/server-everything (and node)", str(EVERYTHING_BIN) if found else None)


class Client:
    """What the test's client was asked by the servers behind jit (its callbacks' log)."""

    def __init__(self) -> None:
        self.sampled: list[types.CreateMessageRequestParams] = []
        self.elicited: list[Any] = []
        self.roots_asked = 0
        self.logs: list[types.LoggingMessageNotificationParams] = []
        self.messages: list[Any] = []

    async def sampling(self, ctx: Any, params: types.CreateMessageRequestParams) -> types.CreateMessageResult:
        self.sampled.append(params)
        return types.CreateMessageResult(role="assistant", model="test-model",
                                         content=types.TextContent(type="text", text="sampled through jit"))

    async def elicitation(self, ctx: Any, params: Any) -> types.ElicitResult:
        self.elicited.append(params)
        return types.ElicitResult(action="decline")

    async def roots(self, ctx: Any) -> types.ListRootsResult:
        self.roots_asked += 1
        return types.ListRootsResult(roots=[types.Root(uri="file:///tmp/jit-root", name="jit-root")])

    async def logging(self, params: types.LoggingMessageNotificationParams) -> None:
        self.logs.append(params)

    async def on_message(self, message: Any) -> None:
        self.messages.append(message)

    def callbacks(self, capable: bool) -> dict[str, Any]:
        kw: dict[str, Any] = {"logging_callback": self.logging, "message_handler": self.on_message}
        if capable:
            kw |= {"sampling_callback": self.sampling, "elicitation_callback": self.elicitation,
                   "list_roots_callback": self.roots}
        return kw


def write_config(base: Path, everything: str) -> Path:
    path = base / "config.json"
    path.write_text(json.dumps({
        "servers": {"everything": {"command": everything, "args": ["stdio"], "timeout": 60}},
        "store": "catalog.db",
        "connection": {"reconnect_attempts": 0, "ping_interval": 0},
    }), encoding="utf-8")
    return path


@asynccontextmanager
async def through_jit(config: Path, client: Client, *, capable: bool = True) -> AsyncIterator[ClientSession]:
    """A session with ``jit serve --stdio`` (the SDK's stdio client ends the process on exit)."""
    params = StdioServerParameters(command=sys.executable, args=["-m", "jit", "serve", "--stdio", "--config",
                                                                 str(config)], env=ENV)
    async with stdio_client(params) as (read, write), \
            ClientSession(read, write, read_timeout_seconds=TIMEOUT, **client.callbacks(capable)) as s:
        await s.initialize()
        with anyio.fail_after(TIMEOUT):  # jit serve answers at once and connects in the background
            while not any(p.name.startswith("everything__") for p in (await s.list_prompts()).prompts):
                await anyio.sleep(0.1)
        yield s


@asynccontextmanager
async def direct(everything: str, client: Client) -> AsyncIterator[ClientSession]:
    params = StdioServerParameters(command=everything, args=["stdio"])
    async with stdio_client(params) as (read, write), \
            ClientSession(read, write, read_timeout_seconds=TIMEOUT, **client.callbacks(True)) as s:
        await s.initialize()
        yield s


async def upstream_tools(s: ClientSession) -> set[str]:
    """The upstream tools jit's client can call: every catalog tool whose call is not refused as unknown."""
    listed = json.loads((await s.read_resource("jit://servers")).contents[0].text)
    assert {r["server"]: r["status"] for r in listed}["everything"] == "connected"
    found = set()
    for name in KNOWN_TOOLS:
        result = await s.call_tool("describe_tool", {"server": "everything", "tool": name})
        if not result.is_error:
            found.add(name)
    return found


KNOWN_TOOLS = ["echo", "get-roots-list", "trigger-sampling-request", "trigger-elicitation-request"]


async def test_resources_templates_and_prompts_are_listed_and_served_as_the_server_serves_them(tmp_path,
                                                                                              everything):
    config = write_config(tmp_path, everything)
    async with direct(everything, Client()) as d:
        want_resources = (await d.list_resources()).resources
        want_templates = (await d.list_resource_templates()).resource_templates
        want_prompts = (await d.list_prompts()).prompts
        uri = str(want_resources[0].uri)
        want_read = await d.read_resource(uri)
        want_dynamic = await d.read_resource("demo://resource/dynamic/text/7")
        want_prompt = await d.get_prompt("args-prompt", {"city": "Lyon", "state": "Rhône"})
    async with through_jit(config, Client()) as s:
        resources = (await s.list_resources()).resources
        templates = (await s.list_resource_templates()).resource_templates
        prompts = (await s.list_prompts()).prompts
        read = await s.read_resource(uri)
        dynamic = await s.read_resource("demo://resource/dynamic/text/7")
        prompt = await s.get_prompt("everything__args-prompt", {"city": "Lyon", "state": "Rhône"})
        with pytest.raises(MCPError) as unknown:
            await s.read_resource("demo://no/such/resource")
        with pytest.raises(MCPError) as no_prompt:
            await s.get_prompt("everything__no-such-prompt")
        own = (await s.read_resource("jit://servers")).contents[0]

    upstream = [r for r in resources if not str(r.uri).startswith("jit://")]
    assert {str(r.uri) for r in upstream} == {str(r.uri) for r in want_resources}
    assert sorted(r.name for r in upstream) == sorted(f"everything__{r.name}" for r in want_resources)
    assert {t.uri_template: t.name for t in templates if not t.uri_template.startswith("jit://")} == {
        t.uri_template: f"everything__{t.name}" for t in want_templates}
    assert sorted(p.name for p in prompts) == sorted(f"everything__{p.name}" for p in want_prompts)
    assert {p.name: p.arguments for p in prompts} == {f"everything__{p.name}": p.arguments for p in want_prompts}
    assert read == want_read
    # A templated resource the server makes on each read (its text names the time it was made).
    assert [(c.uri, c.mime_type, c.text.split(" created at ")[0]) for c in dynamic.contents] == [
        (c.uri, c.mime_type, c.text.split(" created at ")[0]) for c in want_dynamic.contents]
    assert prompt == want_prompt
    assert unknown.value.code == types.INVALID_PARAMS
    assert no_prompt.value.code == types.INVALID_PARAMS
    assert json.loads(own.text)[0]["server"] == "everything"


async def test_sampling_elicitation_roots_progress_and_logs_reach_the_client_behind_jit(tmp_path, everything):
    config = write_config(tmp_path, everything)
    client = Client()
    progress: list[tuple[float, float | None, str | None]] = []

    async def on_progress(value: float, total: float | None, message: str | None) -> None:
        progress.append((value, total, message))

    async with through_jit(config, client) as s:
        assert await upstream_tools(s) == set(KNOWN_TOOLS)  # offered sampling, elicitation, roots: as its client
        sampled = await s.call_tool("call_tool", {"server": "everything", "tool": "trigger-sampling-request",
                                                  "arguments": {"prompt": "say hi", "maxTokens": 20}})
        elicited = await s.call_tool("call_tool", {"server": "everything", "tool": "trigger-elicitation-request",
                                                   "arguments": {}})
        roots = await s.call_tool("call_tool", {"server": "everything", "tool": "get-roots-list", "arguments": {}})
        long = await s.call_tool("call_tool", {"server": "everything", "tool": "trigger-long-running-operation",
                                               "arguments": {"duration": 1, "steps": 3}},
                                 progress_callback=on_progress)
        with pytest.warns(MCPDeprecationWarning):  # the SDK marks logging deprecated from 2026-07-28 on
            await s.set_logging_level("debug")
        await s.call_tool("call_tool", {"server": "everything", "tool": "toggle-simulated-logging", "arguments": {}})
        with anyio.fail_after(TIMEOUT):
            while not client.logs:
                await anyio.sleep(0.1)

    assert not sampled.is_error and "sampled through jit" in sampled.content[0].text
    assert "say hi" in client.sampled[0].messages[0].content.text
    assert not elicited.is_error and len(client.elicited) == 1 and "decline" in elicited.content[0].text
    assert not roots.is_error and "file:///tmp/jit-root" in json.dumps([c.model_dump() for c in roots.content])
    assert client.roots_asked >= 1
    assert not long.is_error
    assert [p[0] for p in progress] == [1, 2, 3] and progress[-1][1] == 3
    assert client.logs[0].logger is not None


async def test_upstreams_are_offered_only_what_the_client_declared(tmp_path, everything):
    config = write_config(tmp_path, everything)
    client = Client()
    async with through_jit(config, client, capable=False) as s:
        # server-everything registers its sampling, elicitation and roots tools only for a client that
        # declares them; jit's connection declared what its client did: nothing.
        assert await upstream_tools(s) == {"echo"}
    assert client.sampled == client.elicited == [] and client.roots_asked == 0


async def test_a_servers_list_changes_reach_the_client(tmp_path, everything):
    """server-everything re-lists its resources when subscriptions toggle (toggle-subscriber-updates
    sends updates, not list changes), so the list change checked is the one jit makes itself: the
    upstream's listings appear (once connected), announced with resources/prompts list_changed."""
    config = write_config(tmp_path, everything)
    client = Client()
    async with through_jit(config, client):
        pass
    kinds = {type(m) for m in client.messages}
    assert types.ResourceListChangedNotification in kinds
    assert types.PromptListChangedNotification in kinds
