"""``jit serve`` against the SDK's own client session: in process, over Streamable HTTP and stdio.

Upstreams are the repo's example servers (examples/servers/: workspace, tracker),
real processes. The catalog is synced first (the example servers as objects in
the test's process for that sync: ``conftest.example_servers_in_process``), then
the tracker's data file is broken so that, in ``jit serve``, the tracker is down
while its cached tools stay in the catalog: the offline case.

The meta-tool tests run twice. In the fast tier, against ``create_server()`` in
this process: its lifespan entered once for the module, each test a new
ClientSession on the SDK's in-memory streams, the model replaced by the tests'
deterministic :class:`~conftest.HashingEmbedder`. In the slow tier, against a
real ``jit serve --http`` process with the model.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path

import anyio
import httpx2
import pytest
from conftest import REPO, example_servers_in_process, write_example_config
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.server.runner import serve_dual_era_loop
from mcp.shared.exceptions import MCPError
from mcp.shared.memory import create_client_server_memory_streams
from mcp_types import INVALID_PARAMS, ToolListChangedNotification
from servers.support import listening_addresses, serving_http

from jit.catalog.store import Store
from jit.config_files import load_config
from jit.embedding import factory
from jit.pipeline import sync
from jit.serve.server import JitServer, create_server
from jit.serve.state import ServeOptions, ServeState

pytestmark = pytest.mark.anyio

#: Hang guard for one request (the first ones wait for jit serve's start-up: model, connections).
TIMEOUT = 180
ENV = {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"  # module scope: the in-process server's lifespan outlives one test


async def prepare(base: Path, embedder, **keys) -> Path:
    """Example config in ``base``, synced in process (its servers too); then the tracker is broken
    (offline in jit serve)."""
    # No reconnect attempts: the broken tracker settles in status "error" at once.
    path = write_example_config(base, connection={"reconnect_attempts": 0, "ping_interval": 0}, **keys)
    config = load_config(path)
    with Store(config.store_path) as store:
        await sync(example_servers_in_process(config), store, embedder)
    (base / "tracker.json").write_text("{this is not json", encoding="utf-8")
    return path


@dataclass
class Served:
    """``jit serve --http`` in its own process."""

    base: Path
    config: Path
    port: int

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/mcp"

    def session(self) -> AsyncIterator[ClientSession]:
        return session_over_http(self.url)


@dataclass
class InProcess:
    """``create_server()`` in this process, its lifespan (catalog, model, upstreams) already entered."""

    base: Path
    config: Path
    server: JitServer
    state: ServeState
    #: The embedding configs the server asked an embedder for.
    embedding_asked: list

    @asynccontextmanager
    async def session(self) -> AsyncIterator[ClientSession]:
        """A new client connection on the SDK's in-memory streams, served as the HTTP transport
        serves each of its sessions: the server loop with the shared lifespan state."""
        low = self.server._lowlevel_server
        async with create_client_server_memory_streams() as ((read, write), (server_read, server_write)), \
                anyio.create_task_group() as tg:
            tg.start_soon(lambda: serve_dual_era_loop(low, server_read, server_write, lifespan_state=self.state,
                                                      init_options=low.create_initialization_options()))
            async with ClientSession(read, write, read_timeout_seconds=TIMEOUT) as session:
                await session.initialize()
                yield session
            await write.aclose()  # end of stream: the server loop returns


@pytest.fixture(scope="module")
async def served_in_process(tmp_path_factory, hashing_embedder) -> AsyncIterator[InProcess]:
    base = tmp_path_factory.mktemp("serve-memory")
    path = await prepare(base, hashing_embedder)
    server = create_server(ServeOptions(config_path=path))
    low = server._lowlevel_server
    with pytest.MonkeyPatch.context() as patch:
        # The start-up loads the configured model; the fast tier hands it the stand-in instead.
        asked: list = []
        patch.setattr(factory, "embedder_from_config", lambda cfg, **how: asked.append((cfg, how)) or hashing_embedder)
        async with low.lifespan(low) as state:
            # The lifespan serves at once and connects in the background; these tests read the
            # upstreams' statuses, so they start once it is done (tests/test_serve_start.py
            # covers what is answered before).
            with anyio.fail_after(TIMEOUT):
                await state.wait_started()
            yield InProcess(base, path, server, state, asked)


@pytest.fixture(scope="module", params=["in-process", pytest.param("http", marks=pytest.mark.slow)])
def served(request) -> InProcess | Served:
    """The jit server each meta-tool test talks to (both kinds share the assertions)."""
    return request.getfixturevalue("served_in_process" if request.param == "in-process" else "served_over_http")


@pytest.fixture(scope="module")
def served_over_http(tmp_path_factory, embedder):
    """One ``jit serve --http :PORT`` for the HTTP tests (each test opens its own session)."""
    base = tmp_path_factory.mktemp("serve-http")
    path = asyncio.run(prepare(base, embedder))
    with serving_http(base, path, env={**os.environ, **ENV}, timeout=TIMEOUT) as url:
        served = Served(base, path, int(url.rsplit(":", 1)[1].split("/", 1)[0]))
        asyncio.run(_connected(served))
        yield served


async def _connected(served: Served) -> None:
    """Until no upstream of ``served`` is still on its first connection attempt: jit serve answers
    at once and connects in the background, and these tests read the upstreams' statuses."""
    with anyio.fail_after(TIMEOUT):
        async with served.session() as s:
            while True:
                rows = json.loads((await s.read_resource("jit://servers")).contents[0].text)
                if all(r["status"] != "connecting" for r in rows):
                    return
                await anyio.sleep(0.1)


@asynccontextmanager
async def session_over_http(url: str) -> AsyncIterator[ClientSession]:
    """An initialized ClientSession on ``url`` through the SDK's Streamable HTTP client."""
    async with httpx2.AsyncClient(timeout=httpx2.Timeout(TIMEOUT)) as http, \
            streamable_http_client(url, http_client=http) as (read, write), \
            ClientSession(read, write, read_timeout_seconds=TIMEOUT) as session:
        await session.initialize()
        yield session


# --------------------------------------------------------------------------- Streamable HTTP


def test_http_listens_on_loopback_when_no_host_is_given(served_over_http):
    assert listening_addresses(served_over_http.port) == {"127.0.0.1"}


@pytest.mark.slow  # the example servers as processes
async def test_the_preparing_sync_in_process_stores_what_the_server_processes_give(tmp_path, hashing_embedder):
    """``prepare`` syncs with the example servers as objects in this process
    (``conftest.example_servers_in_process``): the catalog that gives is the one their processes give."""
    catalogs = {}
    for how, servers in (("processes", lambda config: config), ("objects", example_servers_in_process)):
        path = write_example_config(tmp_path / how)
        config = load_config(path)
        with Store(config.store_path) as store:
            await sync(servers(config), store, hashing_embedder)
            servers = {r.name: (r.transport, r.status, r.server_name, r.instructions, r.capabilities)
                       for r in store.servers()}
            catalogs[how] = servers, sorted((t.tool.server, t.tool.name, t.definition_hash) for t in store.tools())
    assert catalogs["objects"] == catalogs["processes"]
    assert {"workspace", "tracker"} <= catalogs["processes"][0].keys()


async def test_the_server_runs_the_bulk_model_of_its_syncs_in_a_child_process(served_in_process):
    """A bulk pass leaves OpenVINO's libraries and pools in the process (jit/embedding/bulk_process.py):
    jit serve lives as long as its client, so it asks for its configured model with the bulk model
    in a child process."""
    configured = load_config(served_in_process.config).embedding
    asked = served_in_process.embedding_asked
    assert asked and all(cfg == configured and how == {"bulk_in_child": True} for cfg, how in asked)


async def test_meta_tools_are_listed_with_schemas(served):
    async with served.session() as s:
        tools = {t.name: t for t in (await s.list_tools()).tools}
    assert set(tools) == {"search_tools", "describe_tool", "call_tool", "compile_tools", "reload"}
    assert tools["search_tools"].input_schema["required"] == ["query"]
    assert set(tools["call_tool"].input_schema["properties"]) == {"server", "tool", "arguments"}


async def test_search_tools_ranks_every_server_with_scores_between_0_and_1(served):
    async with served.session() as s:
        res = await s.call_tool("search_tools", {"query": "open a new bug report in the issue tracker", "limit": 5})
    assert not res.is_error
    hits = res.structured_content["tools"]
    assert len(hits) == 5
    assert hits[0]["server"] == "tracker" and hits[0]["tool"] == "create_issue"
    assert hits[0]["name"] == "tracker__create_issue"  # as a tool set names it (jit.selection.render.rendered_names)
    scores = [h["score"] for h in hits]
    assert all(0 <= x <= 1 for x in scores) and scores == sorted(scores, reverse=True)
    # The tracker is down, yet its cached tools are still found, marked offline.
    assert hits[0]["online"] is False


async def test_describe_tool_returns_definition_and_analysis(served):
    async with served.session() as s:
        res = await s.call_tool("describe_tool", {"server": "workspace", "tool": "read_file"})
        missing = await s.call_tool("describe_tool", {"server": "workspace", "tool": "no_such_tool"})
    data = res.structured_content
    assert data["definition"]["input_schema"]["required"] == ["path"]
    assert data["analysis"]["categories"] and data["online"] is True
    assert missing.is_error
    assert missing.structured_content == {"error": "tool_not_found", "message": "server 'workspace' has no tool "
                                          "'no_such_tool'", "server": "workspace", "tool": "no_such_tool"}


async def test_call_tool_is_proxied_to_the_real_server(served):
    async with served.session() as s:
        res = await s.call_tool("call_tool", {"server": "workspace", "tool": "read_file",
                                              "arguments": {"path": "src/app.py"}})
        failed = await s.call_tool("call_tool", {"server": "workspace", "tool": "read_file",
                                                 "arguments": {"path": "../outside.txt"}})
    assert not res.is_error
    assert res.content[0].text == (served.base / "workspace" / "src" / "app.py").read_text()
    # The upstream's own isError result comes back as it was sent.
    assert failed.is_error and "outside the workspace" in failed.content[0].text


async def test_call_to_an_offline_server_fails_at_once_with_its_status(served):
    async with served.session() as s:
        res = await s.call_tool("call_tool", {"server": "tracker", "tool": "list_issues", "arguments": {}})
    assert res.is_error
    err = res.structured_content
    assert err["error"] == "server_unavailable"
    assert (err["server"], err["tool"], err["status"]) == ("tracker", "list_issues", "error")
    assert "not valid JSON" in err["last_error"]  # the server's own stderr, so a person can fix it


async def test_compile_tools_returns_tiers_within_the_budget(served):
    async with served.session() as s:
        res = await s.call_tool("compile_tools", {"shard": "coder", "task": "edit src/app.py to return a greeting",
                                                  "budget": 1500})
        bad = await s.call_tool("compile_tools", {"shard": "astronaut", "task": "fly"})
    data = res.structured_content
    assert data["budget"] == 1500 and 0 < data["tokens_used"] <= 1500
    tiers = {t["tier"] for t in data["tools"]}
    assert "full" in tiers and tiers <= {"full", "condensed", "minimal"}
    assert any(t["name"] == "workspace__edit_file" for t in data["tools"])
    assert res.content[0].text.startswith("# Tools for shard `coder`")
    assert bad.is_error and bad.structured_content["error"] == "selection_error"


async def test_compile_tools_text_ends_with_the_warnings(served):
    """A skeleton slot no tool fills (no web search among the example servers) is in the
    structured warnings and at the end of the text a model reads."""
    async with served.session() as s:
        res = await s.call_tool("compile_tools", {"shard": "researcher", "task": "what does the README say"})
    assert not res.is_error
    warnings = res.structured_content["warnings"]
    assert "researcher: no tool fills the skeleton slot 'web_search'" in warnings
    text = res.content[0].text
    assert text.startswith("# Tools for shard `researcher`")
    assert text.endswith("## Warnings\n\n" + "\n".join(f"- {w}" for w in warnings) + "\n")


async def test_meta_tool_argument_errors_name_the_tool_and_field_in_plain_words(served):
    async with served.session() as s:
        missing = await s.call_tool("call_tool", {"server": "workspace"})
        wrong = await s.call_tool("search_tools", {"query": "files", "limit": 0})
        blank = await s.call_tool("compile_tools", {"shard": "coder", "task": "  \n"})
        # JSON says integer: true, "5" and 1.0 are refused, not read as 1, 5 and 1.
        loose = [await s.call_tool("search_tools", {"query": "files", "limit": v}) for v in (True, "5", 1.0)]
        loose.append(await s.call_tool("compile_tools", {"shard": "coder", "task": "x", "budget": "900"}))
    for r in loose:
        assert r.is_error and "input should be a valid integer" in r.content[0].text.lower(), r.content[0].text
    text = missing.content[0].text
    assert missing.is_error and text.startswith("invalid arguments for call_tool: 'tool' is required")
    assert wrong.is_error and "invalid arguments for search_tools: 'limit': input should be" in wrong.content[0].text
    for leaked in ("Arguments", "pydantic", "https://", "[type="):
        assert leaked not in text + wrong.content[0].text
    # A blank task passes the schema (one character) and is refused as compile() refuses it.
    assert blank.is_error and blank.structured_content["error"] == "selection_error"
    assert "the task is empty" in blank.content[0].text


async def test_resources_describe_tools_servers_and_selection(served):
    async with served.session() as s:
        templates = (await s.list_resource_templates()).resource_templates
        uris = {str(r.uri) for r in (await s.list_resources()).resources}
        tool = json.loads((await s.read_resource("jit://tools/workspace/write_file")).contents[0].text)
        servers = json.loads((await s.read_resource("jit://servers")).contents[0].text)
        with pytest.raises(MCPError) as missing:
            await s.read_resource("jit://tools/workspace/no_such_tool")
    assert [t.uri_template for t in templates] == ["jit://tools/{server}/{tool}"]
    assert uris == {"jit://servers", "jit://selection"}
    assert tool["definition"]["name"] == "write_file"
    assert {r["server"]: r["status"] for r in servers}["tracker"] == "error"
    seen = {r["server"]: r["last_seen"] for r in servers}
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", seen["workspace"]), seen  # ISO-8601 UTC
    assert missing.value.code == INVALID_PARAMS
    assert "no_such_tool" in missing.value.message


async def test_reload_rereads_the_config_and_syncs_new_servers(served):
    path = served.config
    config = json.loads(path.read_text())
    notes = served.base / "notes"
    notes.mkdir(exist_ok=True)
    (notes / "todo.md").write_text("- ship jit\n")
    config["servers"]["notes"] = {"command": sys.executable,
                                  "args": [config["servers"]["workspace"]["args"][0], "--root", str(notes)]}
    path.write_text(json.dumps(config))
    async with served.session() as s:
        res = await s.call_tool("reload", {})
        found = await s.call_tool("call_tool", {"server": "notes", "tool": "read_file",
                                                "arguments": {"path": "todo.md"}})
    report = res.structured_content
    assert not res.is_error
    assert sorted(report["changes"]["notes"]["added"])[:2] == ["delete_path", "edit_file"]
    assert {r["server"]: r["status"] for r in report["servers"]}["notes"] == "connected"
    assert found.content[0].text == "- ship jit\n"


# --------------------------------------------------------------------------- stdio, --expose-shard


async def test_exposed_shard_is_listed_proxied_and_announced_when_it_changes(tmp_path, embedder):
    # The test server of the client tests, whose remove_tool changes its tools mid-session; an override
    # makes its echo tool skeleton for coders, so it is in the exposed Full tier until removed.
    available = json.loads((REPO / "available_tools.json").read_text())
    available["overrides"] = {"demo/echo": {"skeleton": ["coder"]}}
    (tmp_path / "available_tools.json").write_text(json.dumps(available))
    demo = {"command": sys.executable, "args": [str(REPO / "tests" / "servers" / "demo_server.py")]}
    path = await prepare(tmp_path, embedder, servers={"demo": demo},
                         available_tools=str(tmp_path / "available_tools.json"))
    changes: list[object] = []

    async def on_message(message: object) -> None:
        if isinstance(message, ToolListChangedNotification):
            changes.append(message)

    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "jit", "serve", "--stdio", "--config", str(path), "--expose-shard", "coder",
              "--task", "read and edit the python files in src/"],
        env=ENV,
    )
    async with stdio_client(params) as (read, write), \
            ClientSession(read, write, read_timeout_seconds=TIMEOUT, message_handler=on_message) as s:
        init = await s.initialize()
        assert init.capabilities.tools.list_changed is True
        # jit serve answers at once and compiles the exposed tools in the background, announcing
        # each change (from the cache, then online once the upstreams are connected): wait for that.
        with anyio.fail_after(TIMEOUT):
            while True:
                tools = (await s.list_tools()).tools
                if {"workspace", "demo"} <= {t.name.split("__")[0] for t in tools if "__" in t.name
                                             and not (t.description or "").startswith("[offline")}:
                    break
                await anyio.sleep(0.05)
            while not changes:  # what appeared was announced
                await anyio.sleep(0.05)
        changes.clear()
        names = [t.name for t in tools]
        assert {"search_tools", "describe_tool", "call_tool", "compile_tools", "reload"} <= set(names)
        exposed = [n for n in names if "__" in n]
        assert "workspace__edit_file" in exposed and len(exposed) <= 10  # max_full_tools
        assert all(not n.startswith("harness") for n in names)

        res = await s.call_tool("workspace__read_file", {"path": "README.md"})
        assert res.content[0].text.startswith("# demo project")
        searched = await s.call_tool("search_tools", {"query": "rename a file", "shard": "coder", "limit": 3})
        assert "workspace__move_path" in [t["name"] for t in searched.structured_content["tools"]]
        offline = await s.call_tool("call_tool", {"server": "tracker", "tool": "get_issue", "arguments": {"number": 1}})
        assert offline.is_error and offline.structured_content["error"] == "server_unavailable"

        # An upstream drops an exposed tool: jit re-syncs in the background and announces the change.
        assert "demo__echo" in exposed
        await s.call_tool("call_tool", {"server": "demo", "tool": "remove_tool", "arguments": {"tool_name": "echo"}})
        # Wait for the change that drops it: a recompile for another reason (a server's status
        # moving after the calls above) may be announced first.
        with anyio.fail_after(TIMEOUT):
            while "demo__echo" in [t.name for t in (await s.list_tools()).tools]:
                await anyio.sleep(0.05)
        assert changes  # and it was announced
        changes.clear()

        # Drop the workspace server from the config: its tools leave the selection.
        config = json.loads(path.read_text())
        del config["servers"]["workspace"]
        path.write_text(json.dumps(config))
        report = (await s.call_tool("reload", {})).structured_content
        assert report["removed_servers"] == ["workspace"] and report["selection_changed"] is True
        after = [t.name for t in (await s.list_tools()).tools]
        gone = await s.call_tool("workspace__read_file", {"path": "README.md"})
    assert changes  # the reload's change was announced too
    assert not any(n.startswith("workspace__") for n in after)
    assert gone.is_error  # no longer exposed: an unknown tool now


async def test_a_read_only_role_is_offered_and_may_call_nothing_that_changes_things(tmp_path, embedder):
    """jit serve --expose-shard reviewer: the workspace server marks edit/delete tools as writing
    or destructive; none is exposed, and call_tool refuses them (tool_denied) before sending."""
    path = await prepare(tmp_path, embedder)
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "jit", "serve", "--stdio", "--config", str(path), "--expose-shard", "reviewer",
              "--task", "review the edits to README.md, then delete the stale notes file"],
        env=ENV,
    )
    doomed = tmp_path / "workspace" / "README.md"
    assert doomed.exists()
    async with stdio_client(params) as (read, write), \
            ClientSession(read, write, read_timeout_seconds=TIMEOUT) as s:
        await s.initialize()
        with anyio.fail_after(TIMEOUT):
            while not any(t.name.startswith("workspace__") for t in (await s.list_tools()).tools):
                await anyio.sleep(0.05)
        exposed = {t.name for t in (await s.list_tools()).tools if "__" in t.name}
        assert "workspace__read_file" in exposed
        assert not exposed & {"workspace__delete_path", "workspace__edit_file", "workspace__write_file",
                              "workspace__move_path"}
        refused = await s.call_tool("call_tool", {"server": "workspace", "tool": "delete_path",
                                                  "arguments": {"path": "README.md"}})
        assert refused.is_error and refused.structured_content["error"] == "tool_denied", refused
        assert refused.structured_content["shard"] == "reviewer" and refused.structured_content["reasons"]
        assert doomed.exists()  # nothing was sent
        compiled = await s.call_tool("compile_tools", {"shard": "reviewer", "task": "delete the stale notes file"})
        assert not {t["name"] for t in compiled.structured_content["tools"]} & {"workspace__delete_path"}
        read = await s.call_tool("call_tool", {"server": "workspace", "tool": "read_file",
                                               "arguments": {"path": "README.md"}})
        assert not read.is_error
