"""Bad peers: servers that crash, hang, flood or lie must not crash or hang jit."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import anyio
import pytest
from servers.support import (
    PY,
    RAW,
    ServerProcess,
    demo_http,
    free_port,
    http_config,
    make_config,
    raw_stdio,
    wait_until,
)

from jit.client.manager import ClientManager
from jit.client.transports import DEFAULT_STDERR_LIMIT
from jit.errors import ServerUnavailableError
from jit.models import ServerStatus
from jit.servers_config import HttpServerConfig, SseServerConfig, StdioServerConfig

pytestmark = [pytest.mark.anyio, pytest.mark.slow]  # real misbehaving processes


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def test_server_that_crashes_at_start_ends_in_error_with_its_stderr(tmp_path, store):
    config = make_config(tmp_path, {"crash": raw_stdio("--mode", "crash"), "good": raw_stdio()},
                         reconnect_attempts=0)
    async with ClientManager(config, store) as mgr:
        crash = mgr.statuses()["crash"]
        assert crash.status is ServerStatus.ERROR
        assert crash.last_error.startswith("connection closed during initialize; stderr: ")
        assert "simulated crash" in crash.last_error
        assert "simulated crash" in mgr.stderr_tail("crash")
        assert mgr.statuses()["good"].status is ServerStatus.CONNECTED


async def test_a_call_to_a_server_that_never_listed_its_tools_says_why_it_is_not_there(tmp_path, store):
    """A server that crashed at start, hung in initialize or whose URL is dead has no tools in the
    catalog: a call naming it gives its status and last connect error, not "has no tool"."""
    port = free_port()  # nothing listens there
    config = make_config(tmp_path, {
        "crash": raw_stdio("--mode", "crash"),
        "hang": raw_stdio("--mode", "hang", timeout=1),
        "dead": HttpServerConfig(url=f"http://127.0.0.1:{port}/mcp?token=s3cret", timeout=5),
    }, reconnect_attempts=0)
    async with ClientManager(config, store) as mgr:
        why = {}
        for name in ("crash", "hang", "dead"):
            with pytest.raises(ServerUnavailableError) as caught:
                await mgr.call_tool(name, "echo", {})
            assert caught.value.status == "error"
            assert caught.value.message.endswith("; it never listed its tools")
            why[name] = caught.value.message
    assert "connection closed during initialize; stderr: raw_server: fatal" in why["crash"]
    assert "timed out after 1s during initialize" in why["hang"]
    # The URL as `jit servers` shows it: a token in its query is not written to the catalog.
    assert f"cannot connect to http://127.0.0.1:{port}/mcp?token=***: Connection refused" in why["dead"]
    assert "s3cret" not in why["dead"] + (store.server("dead").last_error or "")


#: An HTTP server on 127.0.0.1 that refuses everything with 401 (its port is argv[1]).
DENY_ALL = """
import sys
from http.server import BaseHTTPRequestHandler, HTTPServer
class Deny(BaseHTTPRequestHandler):
    def refuse(self):
        self.send_response(401)
        self.send_header("Content-Length", "0")
        self.end_headers()
    do_GET = do_POST = refuse
    def log_message(self, *args):
        pass
HTTPServer(("127.0.0.1", int(sys.argv[1])), Deny).serve_forever()
"""


async def test_a_refused_sse_connection_names_the_status_and_masks_the_urls_secrets(tmp_path, store):
    port = free_port()
    with ServerProcess([PY, "-c", DENY_ALL, str(port)], port, path="/sse") as denying:
        config = make_config(tmp_path, {"denied": SseServerConfig(url=f"{denying.url}?key=s3cret", timeout=5)},
                             reconnect_attempts=0)
        async with ClientManager(config, store) as mgr:
            record = mgr.statuses()["denied"]
    assert record.status is ServerStatus.ERROR
    assert record.last_error == f"HTTP 401 from {denying.url}?key=*** (reconnect_attempts is 0)"


async def test_a_call_while_a_failed_server_is_retried_fails_at_once_with_the_first_error(tmp_path, store):
    """The first attempt crashed; the retry hangs (its timeout is two minutes). A call meanwhile is
    refused with the crash's reason at once: only a server's first attempt is waited for."""
    flag = tmp_path / "started-once"
    config = make_config(tmp_path, {"flaky": raw_stdio("--mode", "hang", "--crash-once", str(flag), timeout=120)},
                         reconnect_attempts=3, reconnect_initial_delay=0.01, reconnect_max_delay=0.02)
    mgr = ClientManager(config, store)
    try:
        up, = mgr.launch()
        await wait_until(up.settled.is_set, what="the first attempt to fail")
        with anyio.fail_after(60):  # a hang guard: waiting for the retry would take 120 s
            with pytest.raises(ServerUnavailableError) as caught:
                await mgr.call_tool("flaky", "tool_0", {})
    finally:
        await mgr.close()
    assert caught.value.last_error is not None and "simulated crash" in caught.value.last_error
    assert caught.value.message.endswith("; it never listed its tools")


async def test_a_call_to_a_server_slow_to_start_waits_for_its_first_attempt(tmp_path, store):
    """A call made while a server is still on its first connection attempt waits for it (bounded
    by its timeout), so a server that answers late is called rather than refused."""
    config = make_config(tmp_path, {"slow": raw_stdio("--init-delay", "1", timeout=30)})
    mgr = ClientManager(config, store)
    try:
        mgr.launch()
        assert mgr.statuses()["slow"].status is ServerStatus.CONNECTING
        result = await mgr.call_tool("slow", "tool_0", {"x": "late"})
    finally:
        await mgr.close()
    assert json.loads(result.text()) == {"tool": "tool_0", "arguments": {"x": "late"}}


async def test_missing_command_ends_in_error_naming_it(tmp_path, store):
    config = make_config(tmp_path, {"ghost": StdioServerConfig(command=str(tmp_path / "no-such-server"))},
                         reconnect_attempts=0)
    async with ClientManager(config, store) as mgr:
        record = mgr.statuses()["ghost"]
    assert record.status is ServerStatus.ERROR
    assert "no-such-server" in record.last_error and "No such file" in record.last_error


async def test_server_hanging_in_initialize_times_out_alone(tmp_path, store):
    config = make_config(tmp_path, {"hang": raw_stdio("--mode", "hang", timeout=1), "good": raw_stdio()},
                         reconnect_attempts=0)
    async with ClientManager(config, store) as mgr:
        states = mgr.statuses()
        assert states["hang"].status is ServerStatus.ERROR
        assert states["hang"].last_error == "timed out after 1s during initialize (reconnect_attempts is 0)"
        assert states["good"].status is ServerStatus.CONNECTED
        assert not (await mgr.call_tool("good", "tool_0", {})).is_error


async def test_refused_http_connection_ends_in_error(tmp_path, store):
    url = f"http://127.0.0.1:{free_port()}/mcp"  # nothing listens there
    config = make_config(tmp_path, {"nowhere": HttpServerConfig(url=url, timeout=5)}, reconnect_attempts=0)
    async with ClientManager(config, store) as mgr:
        record = mgr.statuses()["nowhere"]
    assert record.status is ServerStatus.ERROR and "connect" in record.last_error.lower()


async def test_stderr_flood_is_drained_and_kept_bounded(tmp_path, store):
    # 8 MiB is far beyond a pipe buffer: a client that did not drain stderr would hang here.
    config = make_config(tmp_path, {"loud": raw_stdio("--stderr-mb", "8")})
    async with ClientManager(config, store) as mgr:
        assert mgr.statuses()["loud"].status is ServerStatus.CONNECTED
        assert not (await mgr.call_tool("loud", "tool_0", {})).is_error
        tail = mgr.stderr_tail("loud", max_chars=10**9)
        assert len(tail.encode()) <= DEFAULT_STDERR_LIMIT and tail.endswith("done flooding stderr\n")


async def test_stdout_garbage_flood_drops_the_server_and_keeps_its_tools_offline(tmp_path, store):
    config = make_config(tmp_path, {"noisy": raw_stdio("--garbage-lines", "500"), "good": raw_stdio()},
                         reconnect_attempts=0)
    async with ClientManager(config, store) as mgr:
        await wait_until(lambda: mgr.statuses()["noisy"].status is ServerStatus.ERROR, what="noisy to be dropped")
        assert "not valid JSON-RPC" in mgr.statuses()["noisy"].last_error
        assert {t.tool.name for t in store.tools("noisy")} == {"fail", "rpc_error", "tool_0"}
        with pytest.raises(ServerUnavailableError):
            await mgr.call_tool("noisy", "tool_0", {})
        assert mgr.statuses()["good"].status is ServerStatus.CONNECTED


async def test_twenty_servers_with_three_broken_discover_the_seventeen_good(tmp_path: Path, store):
    with demo_http("http", log=tmp_path / "http0.log") as web0, demo_http("http", log=tmp_path / "http1.log") as web1:
        servers: dict = {f"good{i:02d}": raw_stdio("--tools", str(3 + i), "--page-size", "4") for i in range(15)}
        servers["web0"], servers["web1"] = http_config(web0), http_config(web1)
        servers["crash"] = raw_stdio("--mode", "crash")
        servers["hang"] = raw_stdio("--mode", "hang", timeout=1)
        servers["refused"] = HttpServerConfig(url=f"http://127.0.0.1:{free_port()}/mcp", timeout=5)
        assert len(servers) == 20
        config = make_config(tmp_path, servers, reconnect_attempts=0)
        async with ClientManager(config, store) as mgr:
            states = mgr.statuses()
            good = [n for n in servers if n not in {"crash", "hang", "refused"}]
            assert len(good) == 17
            assert all(states[n].status is ServerStatus.CONNECTED for n in good)
            for i in range(15):
                assert len(store.tools(f"good{i:02d}")) == 3 + i
            assert {"echo", "add"} <= {t.tool.name for t in store.tools("web1")}
            assert all(states[n].status is ServerStatus.ERROR and states[n].last_error
                       for n in ("crash", "hang", "refused"))
            assert "simulated crash" in states["crash"].last_error
            assert "during initialize" in states["hang"].last_error


@pytest.mark.slow
def test_a_banner_on_stdout_is_one_warning_line_not_a_traceback(tmp_path):
    """A server that prints a start-up banner on stdout (common) is synced; the SDK's parse failure,
    logged with a full traceback per line, reaches the user as one line per distinct line."""
    config = tmp_path / "config.json"
    config.write_text(json.dumps({"store": str(tmp_path / "catalog.db"), "servers": {
        "banner": {"command": PY, "args": [RAW, "--garbage-lines", "3"]}}}), encoding="utf-8")
    done = subprocess.run([str(Path(sys.executable).parent / "jit"), "-c", str(config), "sync"], capture_output=True,
                          text=True, timeout=300, env={**os.environ, "HF_HUB_OFFLINE": "1"}, check=False)
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr and "Failed to parse" not in done.stderr, done.stderr
    noise = [line for line in done.stderr.splitlines() if "not JSON-RPC (skipped)" in line]
    assert len(noise) == 3 and "this is not JSON-RPC, line 0" in noise[0], done.stderr


async def test_a_connection_stopped_by_its_own_process_does_not_make_the_server_offline(tmp_path, store):
    """Ctrl-C during a sync stops each upstream mid-connect. A server that answered before and had no
    error is left "idle" (its tools are not offline for it); one that never answered reads "unknown"
    (never connected, so not "disconnected")."""
    async with ClientManager(make_config(tmp_path, {"known": raw_stdio()}), store) as mgr:
        assert mgr.statuses()["known"].status is ServerStatus.CONNECTED
    assert store.server("known").status is ServerStatus.IDLE
    hanging = make_config(tmp_path, {"known": raw_stdio("--mode", "hang"), "new": raw_stdio("--mode", "hang")})
    mgr = ClientManager(hanging, store)
    try:
        mgr.launch()  # connecting in the background, as a sync or jit serve does
        await wait_until(lambda: {r.status for r in mgr.statuses().values()} == {ServerStatus.CONNECTING},
                         what="both to be connecting")
    finally:
        await mgr.close()  # as the process does when interrupted
    assert store.server("known").status is ServerStatus.IDLE
    new = store.server("new")
    assert new.status is ServerStatus.UNKNOWN and new.last_seen is None and new.last_error is None
    assert {t.tool.name for t in store.tools("known", online=True)} == {"fail", "rpc_error", "tool_0"}
