"""ClientManager against third-party servers that scripts/install-test-servers.sh installs.

mcp-server-time (PyPI, stdio) and @modelcontextprotocol/server-everything (npm; stdio,
Streamable HTTP, SSE). Missing servers fail the run under CI=true and skip otherwise.
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import pytest
from servers.support import (
    EVERYTHING_BIN,
    EVERYTHING_DIR,
    everything_http,
    http_config,
    listening_addresses,
    make_config,
    wait_until,
)

from jit.client.manager import ClientManager
from jit.errors import ServerUnavailableError
from jit.models import ServerStatus
from jit.servers_config import StdioServerConfig

pytestmark = [pytest.mark.anyio, pytest.mark.slow]  # third-party server processes

INSTALL_HINT = "run scripts/install-test-servers.sh"


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def require(what: str, found: str | None) -> str:
    """The path of an installed server; a missing one fails under CI=true, skips otherwise."""
    if found:
        return found
    message = f"{what} is not installed ({INSTALL_HINT})"
    if os.environ.get("CI") == "true":
        pytest.fail(message)
    pytest.skip(message)


@pytest.fixture
def time_server() -> str:
    beside = Path(sys.executable).parent / "mcp-server-time"
    return require("mcp-server-time", str(beside) if beside.exists() else shutil.which("mcp-server-time"))


@pytest.fixture
def everything() -> str:
    found = EVERYTHING_BIN.exists() and (EVERYTHING_DIR / "dist" / "index.js").exists() and shutil.which("node")
    return require("@modelcontextprotocol/server-everything (and node)", str(EVERYTHING_BIN) if found else None)


@pytest.fixture
def everything_streamable(everything):
    with everything_http("streamableHttp") as server:
        yield server


async def test_mcp_server_time_over_stdio(tmp_path, store, time_server):
    config = make_config(tmp_path, {"time": StdioServerConfig(command=time_server, args=["--local-timezone", "UTC"])})
    async with ClientManager(config, store) as mgr:
        record = mgr.statuses()["time"]
        assert record.status is ServerStatus.CONNECTED and record.server_name == "mcp-time"
        tools = {t.tool.name: t.tool for t in store.tools("time")}
        assert set(tools) == {"get_current_time", "convert_time"}
        assert tools["get_current_time"].input_schema["required"] == ["timezone"]
        assert tools["get_current_time"].annotations["readOnlyHint"] is True
        result = await mgr.call_tool("time", "get_current_time", {"timezone": "UTC"})
        assert not result.is_error and result.structured_content["timezone"] == "UTC"
        bad = await mgr.call_tool("time", "get_current_time", {"timezone": "Mars/Olympus_Mons"})
        assert bad.is_error and "Invalid timezone" in bad.text()
        usage = store.usage("time", "get_current_time")
        assert (usage["calls"], usage["errors"]) == (2, 1)


async def test_server_everything_over_stdio(tmp_path, store, everything):
    config = make_config(tmp_path, {"every": StdioServerConfig(command=everything)})
    async with ClientManager(config, store) as mgr:
        # It sends tools/list_changed right after initialize; the re-listing changes nothing.
        record = mgr.statuses()["every"]
        assert record.status is ServerStatus.CONNECTED and record.last_error is None
        assert record.capabilities["tools"] == {"listChanged": True}
        names = {t.tool.name for t in store.tools("every")}
        assert len(names) >= 13 and {"echo", "get-sum", "get-structured-content"} <= names
        assert (await mgr.call_tool("every", "echo", {"message": "hi"})).text() == "Echo: hi"
        summed = await mgr.call_tool("every", "get-sum", {"a": 2, "b": 3})
        assert "5" in summed.text() and not summed.is_error
        assert len(store.resources("every")) > 0 and len(store.prompts("every")) > 0


async def test_server_everything_over_streamable_http_survives_a_restart(tmp_path, store, everything_streamable):
    server = everything_streamable
    config = make_config(tmp_path, {"every": http_config(server)}, ping_interval=0.2, reconnect_attempts=100)
    async with ClientManager(config, store) as mgr:
        assert (await mgr.call_tool("every", "echo", {"message": "one"})).text() == "Echo: one"
        server.kill()
        await wait_until(lambda: mgr.statuses()["every"].status is not ServerStatus.CONNECTED, what="going offline")
        with pytest.raises(ServerUnavailableError) as info:
            await mgr.call_tool("every", "echo", {"message": "two"})
        assert info.value.to_dict()["server"] == "every"
        assert "echo" in {t.tool.name for t in store.tools(online=False)}
        # A TypeScript server rejects the old session id with 400: reconnecting opens a fresh session.
        server.start()
        await wait_until(lambda: mgr.statuses()["every"].status is ServerStatus.CONNECTED, what="reconnecting")
        assert (await mgr.call_tool("every", "echo", {"message": "three"})).text() == "Echo: three"


async def test_server_everything_over_sse(tmp_path, store, everything):
    with everything_http("sse") as server:
        config = make_config(tmp_path, {"every": http_config(server)})
        async with ClientManager(config, store) as mgr:
            assert mgr.statuses()["every"].status is ServerStatus.CONNECTED
            assert (await mgr.call_tool("every", "echo", {"message": "sse"})).text() == "Echo: sse"


def test_node_test_servers_listen_on_loopback_only(everything_streamable):
    # Read from the kernel's socket table: no connection to any non-loopback address is made.
    assert listening_addresses(everything_streamable.port) == {"127.0.0.1"}
