"""ClientManager against real MCP servers (tests/servers/): in process and over stdio, Streamable HTTP, SSE.

The fast tier runs the demo server in this process on the SDK's in-memory
transport (:func:`servers.support.demo_memory`): the same session, supervisor,
discovery and call path as every other transport. What only a real peer can
show (a process killed or stopped, its stderr, HTTP and SSE wires, child
processes reaped) is in the ``slow`` tier.
"""

from __future__ import annotations

import contextlib
import os
import signal
from pathlib import Path
from typing import Any

import anyio
import pytest
from servers.support import (
    ServerProcess,
    demo_http,
    demo_memory,
    demo_stdio,
    gated_replacement,
    http_config,
    make_config,
    pid_alive,
    raw_stdio,
    wait_until,
)

from jit.client.calls import CallResult
from jit.client.manager import ClientManager
from jit.client.tooldefs import convert_tools
from jit.client.upstream import backoff_delay
from jit.errors import (
    ServerConnectError,
    ServerError,
    ServerDisconnectedError,
    ServerTimeoutError,
    ServerUnavailableError,
    ToolCallError,
    ToolNotFoundError,
)
from jit.models import ServerStatus, ToolDef
from jit.servers_config import StdioServerConfig

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def http_server(tmp_path: Path):
    with demo_http("http", log=tmp_path / "http.log") as server:
        yield server


@pytest.fixture
def sse_server(tmp_path: Path):
    with demo_http("sse", log=tmp_path / "sse.log") as server:
        yield server


def status(mgr: ClientManager, name: str) -> ServerStatus:
    return mgr.statuses()[name].status


# --------------------------------------------------------------------------- discovery


async def discovered_with_what_it_reports(tmp_path, store, demo) -> None:
    config = make_config(tmp_path, {"demo": demo})
    async with ClientManager(config, store) as mgr:
        record = mgr.statuses()["demo"]
        assert record.status is ServerStatus.CONNECTED
        assert (record.server_name, record.server_version) == ("demo", "1.2.3")
        assert record.instructions == "A demo server for jit tests."
        assert record.protocol_version and record.status_changed_at and record.last_seen
        assert "tools" in record.capabilities and "resources" in record.capabilities
        names = {t.tool.name for t in store.tools("demo")}
        assert {"echo", "add", "fail", "sleep", "pid", "add_tool", "remove_tool"} <= names
        add = store.tool("demo", "add").tool
        assert add.input_schema["type"] == "object" and set(add.input_schema["properties"]) == {"a", "b"}
        assert add.output_schema is not None and add.output_schema["type"] == "object"
        assert [r["uri"] for r in store.resources("demo")] == ["demo://readme"]
        assert [p["name"] for p in store.prompts("demo")] == ["greet"]
        session = mgr.session("demo")  # the live SDK session, for requests jit does not wrap
        assert (await session.read_resource("demo://readme")).contents[0].text == "demo server"
    assert status(mgr, "demo") is ServerStatus.IDLE  # closed by jit after it answered
    assert mgr.session("demo") is None


async def test_server_is_discovered_with_what_it_reports(tmp_path, store):
    await discovered_with_what_it_reports(tmp_path, store, demo_memory())


@pytest.mark.slow
async def test_stdio_server_is_discovered_with_what_it_reports(tmp_path, store):
    await discovered_with_what_it_reports(tmp_path, store, demo_stdio())


@pytest.mark.slow
async def test_streamable_http_server_is_discovered_and_called(tmp_path, store, http_server):
    config = make_config(tmp_path, {"web": http_config(http_server)})
    async with ClientManager(config, store) as mgr:
        assert status(mgr, "web") is ServerStatus.CONNECTED
        assert store.tool("web", "echo") is not None
        result = await mgr.call_tool("web", "echo", {"text": "over http"})
        assert result.text() == "over http" and not result.is_error


@pytest.mark.slow
async def test_sse_server_is_discovered_and_called(tmp_path, store, sse_server):
    config = make_config(tmp_path, {"legacy": http_config(sse_server)})
    async with ClientManager(config, store) as mgr:
        assert mgr.statuses()["legacy"].transport == "sse"
        assert status(mgr, "legacy") is ServerStatus.CONNECTED
        result = await mgr.call_tool("legacy", "add", {"a": 2, "b": 40})
        assert result.structured_content == {"total": 42}


async def test_paginated_tool_list_is_followed_to_the_end(tmp_path, store):
    config = make_config(tmp_path, {"paged": raw_stdio("--tools", "25", "--page-size", "10")})
    async with ClientManager(config, store):
        names = {t.tool.name for t in store.tools("paged")}
    assert len(names) == 25 and {"fail", "rpc_error", "tool_0", "tool_22"} <= names


async def test_malformed_tools_are_dropped_with_reasons_and_the_rest_kept(tmp_path, store):
    config = make_config(tmp_path, {"bad": raw_stdio("--mode", "malformed")})
    async with ClientManager(config, store) as mgr:
        record = mgr.statuses()["bad"]
        assert record.status is ServerStatus.CONNECTED
        assert [t.tool.name for t in store.tools("bad")] == ["good_a", "good_b"]
        assert store.tool("bad", "good_a").tool.description == "A good tool."  # the first of the duplicates
        warnings = mgr.warnings("bad")
        assert len(warnings) == 6
        assert any("'bad_schema'" in w and "type" in w for w in warnings)
        assert sum("missing or empty name" in w for w in warnings) == 2
        assert any("duplicate name, kept the first" in w for w in warnings)
        assert "discovery warnings" in record.last_error and "'list_schema'" in record.last_error
        assert "dropped tool #4 'list_schema': inputSchema must be a JSON Schema object, got an array" in warnings
        assert "dropped tool #5 'no_schema': inputSchema is missing" in warnings
        # The SDK rejects this server's whole listing, yet its good tools stay callable.
        result = await mgr.call_tool("bad", "good_b", {"x": "still works"})
        assert "still works" in result.text()


def test_convert_tools_keeps_wire_fields_as_plain_dicts():
    raw = [{"name": "t", "title": "T", "description": "d", "inputSchema": {"type": "object"},
            "outputSchema": {"type": "object", "properties": {}}, "annotations": {"readOnlyHint": True}},
           {"name": "u", "inputSchema": {"type": "object"}, "outputSchema": {"type": "array"}},
           {"name": "v", "inputSchema": {"type": "object"}, "description": 7}]
    tools, problems = convert_tools("s", raw)
    assert [t.name for t in tools] == ["t"]
    assert tools[0].annotations == {"readOnlyHint": True} and tools[0].title == "T"
    assert "outputSchema" in problems[0] and "description must be a str" in problems[1]


def test_what_a_server_sent_wrong_is_named_in_json_terms():
    """The reasons speak JSON, not Python: ``missing``, ``null``, ``an array``, never ``NoneType``/``list``."""
    schema = {"type": "object"}
    raw = [{"name": "missing"}, {"name": "null", "inputSchema": None}, {"name": "flag", "inputSchema": True},
           {"name": "text", "inputSchema": "object"}, {"name": "n", "inputSchema": 3.5},
           {"name": "ann", "inputSchema": schema, "annotations": [True]}, {"name": 5, "inputSchema": schema},
           {"name": "t", "inputSchema": schema, "title": False}, ["not", "a", "tool"]]
    tools, problems = convert_tools("s", raw)
    assert tools == []
    assert problems == [
        "dropped tool #0 'missing': inputSchema is missing",
        "dropped tool #1 'null': inputSchema must be a JSON Schema object, got null",
        "dropped tool #2 'flag': inputSchema must be a JSON Schema object, got a boolean",
        "dropped tool #3 'text': inputSchema must be a JSON Schema object, got a string",
        "dropped tool #4 'n': inputSchema must be a JSON Schema object, got a number",
        "dropped tool #5 'ann': annotations must be a JSON object, got an array",
        "dropped tool #6: name must be a string, got a number",
        "dropped tool #7 't': title must be a string, got a boolean",
        "dropped tool #8: a tool must be a JSON object, got an array",
    ]


def test_annotations_of_the_wrong_type_cost_the_field_not_the_tool():
    """A hint is only a hint: ``"readOnlyHint": "maybe"`` or a numeric title is dropped with a
    note, the tool and its other annotations kept. Sent on, one such tool made ``jit serve``'s
    whole tools/list fail for an ``--expose-shard`` client (the SDK validates annotations)."""
    from jit.serve.server import _annotations

    raw = [{"name": "t", "inputSchema": {"type": "object"},
            "annotations": {"readOnlyHint": "maybe", "title": 5, "destructiveHint": True, "openWorldHint": None,
                            "x-vendor": {"any": 1}}}]
    tools, problems = convert_tools("s", raw)
    assert [t.name for t in tools] == ["t"]
    assert tools[0].annotations == {"destructiveHint": True}  # null is the hint left out; x-vendor is not MCP's
    assert problems == ["tool #0 't': annotations.readOnlyHint dropped: must be a boolean, got a string",
                        "tool #0 't': annotations.title dropped: must be a string, got a number"]
    # A catalog synced before this check: the listing still validates.
    model = _annotations({"readOnlyHint": "maybe", "idempotentHint": 1, "destructiveHint": False})
    assert model is not None and model.destructive_hint is False and model.read_only_hint is None


# --------------------------------------------------------------------------- calls


async def test_call_tool_returns_content_and_records_usage(tmp_path, store):
    config = make_config(tmp_path, {"demo": demo_memory()})
    async with ClientManager(config, store) as mgr:
        result = await mgr.call_tool("demo", "add", {"a": 1, "b": 2})
        assert (result.server, result.tool, result.is_error) == ("demo", "add", False)
        assert result.structured_content == {"total": 3}
        assert result.content[0]["type"] == "text" and result.latency_ms > 0
        usage = store.usage("demo", "add")
        assert (usage["calls"], usage["errors"]) == (1, 0) and usage["total_latency_ms"] > 0


async def test_tool_error_result_is_reported_as_error_not_success(tmp_path, store):
    config = make_config(tmp_path, {"demo": demo_memory()})
    async with ClientManager(config, store) as mgr:
        result = await mgr.call_tool("demo", "fail", {"message": "it broke"})
        assert result.is_error and "it broke" in result.text()
        usage = store.usage("demo", "fail")
        assert (usage["calls"], usage["errors"]) == (1, 1) and "it broke" in usage["last_error"]


async def test_slow_call_raises_timeout_and_counts_as_failure(tmp_path, store):
    config = make_config(tmp_path, {"demo": demo_memory()})
    async with ClientManager(config, store) as mgr:
        with pytest.raises(ServerTimeoutError) as info:
            await mgr.call_tool("demo", "sleep", {"seconds": 30}, timeout=0.3)
        assert info.value.details["tool"] == "sleep"
        assert store.usage("demo", "sleep")["errors"] == 1
        # The connection survives a timed-out call.
        assert (await mgr.call_tool("demo", "echo", {"text": "after"})).text() == "after"


async def test_call_timeout_comes_from_server_config(tmp_path, store):
    config = make_config(tmp_path, {"demo": demo_memory(call_timeout=0.3)})
    async with ClientManager(config, store) as mgr:
        with pytest.raises(ServerTimeoutError):
            await mgr.call_tool("demo", "sleep", {"seconds": 30})


async def test_json_rpc_error_raises_tool_call_error(tmp_path, store):
    config = make_config(tmp_path, {"raw": raw_stdio()})
    async with ClientManager(config, store) as mgr:
        with pytest.raises(ToolCallError) as info:
            await mgr.call_tool("raw", "rpc_error", {})
        assert info.value.details["rpc_code"] == -32603
        assert store.usage("raw", "rpc_error")["errors"] == 1


async def test_unknown_server_or_tool_raises_tool_not_found(tmp_path, store):
    config = make_config(tmp_path, {"demo": demo_memory()})
    async with ClientManager(config, store) as mgr:
        with pytest.raises(ToolNotFoundError):
            await mgr.call_tool("nope", "echo", {})
        with pytest.raises(ToolNotFoundError) as info:
            await mgr.call_tool("demo", "nope", {})
        assert info.value.to_dict()["tool"] == "nope"


# --------------------------------------------------------------------------- list_changed


async def test_list_changed_makes_the_catalog_follow_the_server(tmp_path, store):
    changes = []
    config = make_config(tmp_path, {"demo": demo_memory()})
    async with ClientManager(config, store, on_tools_changed=lambda s, r: changes.append((s, r))) as mgr:
        assert changes and changes[0][1].added  # the first discovery is a change too
        await mgr.call_tool("demo", "add_tool", {"tool_name": "dynamic"})
        await wait_until(lambda: store.tool("demo", "dynamic"), what="the added tool in the catalog")
        assert changes[-1][0] == "demo" and changes[-1][1].added == ["dynamic"]
        assert (await mgr.call_tool("demo", "dynamic", {"value": "v"})).text() == "dynamic:v"
        await mgr.call_tool("demo", "remove_tool", {"tool_name": "dynamic"})
        await wait_until(lambda: store.tool("demo", "dynamic") is None, what="the removed tool to leave")
        assert changes[-1][1].removed == ["dynamic"]
        with pytest.raises(ToolNotFoundError):
            await mgr.call_tool("demo", "dynamic", {})


# --------------------------------------------------------------------------- offline fallback


@pytest.mark.slow
async def test_killed_http_server_goes_offline_and_comes_back(tmp_path, store, http_server):
    # An idle Streamable HTTP connection has no open request to fail: the ping finds the death.
    config = make_config(tmp_path, {"web": http_config(http_server), "local": raw_stdio()},
                         reconnect_attempts=100, ping_interval=0.2)
    async with ClientManager(config, store) as mgr:
        assert (await mgr.call_tool("web", "echo", {"text": "before"})).text() == "before"
        http_server.kill()
        await wait_until(lambda: status(mgr, "web") is not ServerStatus.CONNECTED, what="web to go offline")
        # Its tools stay in the catalog, marked offline; selection can still see them.
        assert mgr.session("web") is None
        offline = {t.tool.name: t for t in store.tools("web")}
        assert "echo" in offline and not offline["echo"].online
        assert "echo" in {t.tool.name for t in store.tools(online=False)}
        with pytest.raises(ServerUnavailableError) as info:
            await mgr.call_tool("web", "echo", {"text": "while down"})
        payload = info.value.to_dict()
        assert payload["server"] == "web" and payload["tool"] == "echo"
        assert payload["status"] in {"disconnected", "connecting", "error"} and payload["last_error"]
        assert store.usage("web", "echo")["calls"] == 1  # the refused call was never sent
        # Nothing else broke.
        assert status(mgr, "local") is ServerStatus.CONNECTED
        assert not (await mgr.call_tool("local", "tool_0", {"x": "1"})).is_error
        http_server.start()  # same port; the old session id is gone with the old process
        await wait_until(lambda: status(mgr, "web") is ServerStatus.CONNECTED, what="web to reconnect")
        assert (await mgr.call_tool("web", "echo", {"text": "after"})).text() == "after"


@pytest.mark.slow
async def test_server_dying_mid_call_raises_disconnected_and_goes_offline(tmp_path, store, http_server):
    # No pings: the failed call itself must make jit look at the connection.
    config = make_config(tmp_path, {"web": http_config(http_server)}, reconnect_attempts=0, ping_interval=0)
    async with ClientManager(config, store) as mgr, anyio.create_task_group() as tg:
        async def kill_soon() -> None:
            await anyio.sleep(0.3)
            http_server.kill()

        tg.start_soon(kill_soon)
        with pytest.raises(ServerDisconnectedError) as info:
            await mgr.call_tool("web", "sleep", {"seconds": 30})
        assert "may or may not have run" in info.value.message
        await wait_until(lambda: status(mgr, "web") is ServerStatus.ERROR, what="web to be marked down")
        assert mgr.statuses()["web"].last_error.startswith("connection lost: ")
        assert store.usage("web", "sleep")["errors"] == 1
        with pytest.raises(ServerUnavailableError):
            await mgr.call_tool("web", "echo", {"text": "x"})


async def _replaced(mgr: ClientManager, server: ServerProcess, gate: Path, tool: str, arguments: dict[str, Any],
                    *, kill_after: float | None) -> tuple[CallResult | ServerError, ServerProcess]:
    """Call ``tool`` on ``server`` (the manager's ``web``) and kill it: before the call when
    ``kill_after`` is None (while idle), else that many seconds into it; a replacement on the same
    port, loaded beforehand, listens once jit has seen the death. The call's outcome and the replacement."""
    replacement = gated_replacement(server, gate)
    answers: list[CallResult | ServerError] = []

    async def call() -> None:
        try:
            answers.append(await mgr.call_tool("web", tool, arguments))
        except ServerError as exc:
            answers.append(exc)

    async with anyio.create_task_group() as tg:
        tg.start_soon(anyio.to_thread.run_sync, replacement.start)
        await wait_until(lambda: Path(f"{gate}.waiting").exists(), what="the replacement to load")
        if kill_after is None:
            server.kill()  # nothing tells jit: an idle Streamable HTTP connection holds no open request
        tg.start_soon(call)
        if kill_after is not None:
            await anyio.sleep(kill_after)  # the call has reached the server
            server.kill()
        await wait_until(lambda: status(mgr, "web") is not ServerStatus.CONNECTED, what="jit to see the death")
        gate.touch()
        await wait_until(lambda: answers, what="the call to end")
    return answers[0], replacement


@pytest.mark.slow
async def test_a_call_that_finds_an_idle_http_server_killed_runs_on_its_replacement(tmp_path, store, http_server):
    """A Streamable HTTP server killed between calls is found by the next call, whose POST cannot
    connect: nothing of the call left jit, yet it was reported as "may or may not have run". It is
    sent once more on the connection that replaces the dead one, and runs there."""
    config = make_config(tmp_path, {"web": http_config(http_server)}, reconnect_attempts=3,
                         reconnect_initial_delay=1.0, reconnect_max_delay=1.0)
    async with ClientManager(config, store) as mgr:
        first = int((await mgr.call_tool("web", "pid", {})).text())
        outcome, replacement = await _replaced(mgr, http_server, tmp_path / "gate", "pid", {}, kill_after=None)
        try:
            assert isinstance(outcome, CallResult), outcome
            assert int(outcome.text()) == replacement.proc.pid != first  # run by the new process
        finally:
            replacement.kill()
    assert store.usage("web", "pid")["calls"] == 2 and store.usage("web", "pid")["errors"] == 0


@pytest.mark.slow
async def test_a_call_the_server_received_before_dying_is_not_sent_again(tmp_path, store, http_server):
    """The other side of the retry: a call already sent when its server died may have run, so it
    is reported as such and not sent to the replacement that is ready (the sleep would have answered
    after 30 s instead); the next call goes there."""
    config = make_config(tmp_path, {"web": http_config(http_server)}, reconnect_attempts=3,
                         reconnect_initial_delay=1.0, reconnect_max_delay=1.0)
    async with ClientManager(config, store) as mgr:
        outcome, replacement = await _replaced(mgr, http_server, tmp_path / "gate", "sleep", {"seconds": 30},
                                               kill_after=0.5)
        try:
            assert isinstance(outcome, ServerDisconnectedError), outcome
            assert "may or may not have run" in outcome.message
            await wait_until(lambda: status(mgr, "web") is ServerStatus.CONNECTED, what="the reconnection")
            assert int((await mgr.call_tool("web", "pid", {})).text()) == replacement.proc.pid
        finally:
            replacement.kill()


@pytest.mark.slow
async def test_a_call_that_finds_an_idle_http_server_gone_for_good_says_it_was_not_sent(tmp_path, store, http_server):
    """With no server to reconnect to, the call that found the death is refused as never sent
    (server_unavailable), not "may or may not have run", and counts no failed call."""
    config = make_config(tmp_path, {"web": http_config(http_server)}, reconnect_attempts=1)
    async with ClientManager(config, store) as mgr:
        assert (await mgr.call_tool("web", "echo", {"text": "before"})).text() == "before"
        http_server.kill()
        with pytest.raises(ServerUnavailableError) as info:
            await mgr.call_tool("web", "echo", {"text": "after"})
        assert "may or may not" not in info.value.message and info.value.to_dict()["last_error"]
    assert store.usage("web", "echo")["calls"] == 1 and store.usage("web", "echo")["errors"] == 0


@pytest.mark.slow
async def test_killed_stdio_server_is_offline_until_it_can_start_again(tmp_path, store):
    pid_file, down = tmp_path / "pid", tmp_path / "down"
    config = make_config(tmp_path, {"raw": raw_stdio("--pid-file", str(pid_file), "--fail-if-exists", str(down))},
                         reconnect_attempts=200)
    async with ClientManager(config, store) as mgr:
        first_pid = int(pid_file.read_text())
        down.touch()  # restarts fail while this exists
        os.kill(first_pid, signal.SIGKILL)
        await wait_until(lambda: "refusing to start" in (mgr.statuses()["raw"].last_error or ""),
                         what="a failed restart to be recorded")
        with pytest.raises(ServerUnavailableError) as info:
            await mgr.call_tool("raw", "tool_0", {"x": "1"})
        assert info.value.status != "connected" and "refusing to start" in info.value.last_error
        assert {t.tool.name for t in store.tools("raw", online=False)} == {"fail", "rpc_error", "tool_0"}
        down.unlink()
        await wait_until(lambda: status(mgr, "raw") is ServerStatus.CONNECTED, what="raw to come back")
        assert not (await mgr.call_tool("raw", "tool_0", {"x": "back"})).is_error
        assert int(pid_file.read_text()) != first_pid


@pytest.mark.slow
async def test_reconnect_gives_up_after_the_configured_attempts(tmp_path, store):
    config = make_config(tmp_path, {"crash": raw_stdio("--mode", "crash")}, reconnect_attempts=2)
    async with ClientManager(config, store) as mgr:
        await wait_until(lambda: "gave up" in (mgr.statuses()["crash"].last_error or ""), what="giving up")
        record = mgr.statuses()["crash"]
        assert record.status is ServerStatus.ERROR
        assert "gave up after 2 reconnect attempts" in record.last_error
        assert "simulated crash" in record.last_error  # the child's stderr explains it


def test_backoff_grows_exponentially_with_jitter_and_is_capped():
    for attempt, step in [(0, 0.5), (1, 1.0), (2, 2.0), (3, 4.0), (6, 30.0), (60, 30.0)]:
        delays = [backoff_delay(attempt, 0.5, 30.0) for _ in range(200)]
        assert all(step / 2 <= d <= step for d in delays)
        assert len(set(delays)) > 1


async def test_ping_health_check_marks_the_server_seen(tmp_path, store):
    config = make_config(tmp_path, {"demo": demo_memory()}, ping_interval=0.05)
    async with ClientManager(config, store) as mgr:
        seen = mgr.statuses()["demo"].last_seen
        await wait_until(lambda: mgr.statuses()["demo"].last_seen > seen, what="a ping to touch the server")
        assert status(mgr, "demo") is ServerStatus.CONNECTED


@pytest.mark.slow
async def test_ping_timeout_disconnects_a_server_that_stopped_answering(tmp_path, store):
    # The raw server starts in ~50 ms, so a short timeout bounds both connecting and pings.
    config = make_config(tmp_path, {"raw": raw_stdio("--pid-file", str(tmp_path / "pid"), timeout=1)},
                         ping_interval=0.1, reconnect_attempts=0)
    async with ClientManager(config, store) as mgr:
        pid = int((tmp_path / "pid").read_text())
        os.kill(pid, signal.SIGSTOP)  # alive, but silent
        try:
            await wait_until(lambda: status(mgr, "raw") is ServerStatus.ERROR, what="the ping to time out")
        finally:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGCONT)
        assert "ping timed out after 1s" in mgr.statuses()["raw"].last_error
        assert not pid_alive(pid)  # the silent child was killed, not leaked


# --------------------------------------------------------------------------- lifecycle and config


@pytest.mark.slow
async def test_close_stops_every_child_process(tmp_path, store):
    pids = [tmp_path / "a.pid", tmp_path / "b.pid"]
    config = make_config(tmp_path, {"a": demo_stdio("--pid-file", str(pids[0])),
                                    "b": raw_stdio("--pid-file", str(pids[1]))})
    async with ClientManager(config, store):
        alive = [int(p.read_text()) for p in pids]
        assert all(pid_alive(p) for p in alive)
    assert not any(pid_alive(p) for p in alive)


async def test_closing_the_manager_leaves_reached_servers_idle_not_offline(tmp_path, store):
    # "down" cannot even start: no such program (fails at once, no process to wait for).
    down = StdioServerConfig(command=str(tmp_path / "no-such-server"))
    config = make_config(tmp_path, {"up": demo_memory(), "down": down})
    async with ClientManager(config, store):
        pass
    assert store.server("up").status is ServerStatus.IDLE
    assert store.server("down").status is ServerStatus.ERROR
    assert store.tools("up") and all(t.online for t in store.tools("up"))
    assert {t.tool.server for t in store.tools(online=True)} == {"up"}


async def test_disabled_server_is_shown_disabled_and_never_connected(tmp_path, store):
    pid_file = tmp_path / "pid"
    store.ensure_server("off", "stdio")  # known from an earlier run
    store.sync_tools("off", [ToolDef(server="off", name="echo")])
    config = make_config(tmp_path, {"off": demo_stdio("--pid-file", str(pid_file), enabled=False)})
    async with ClientManager(config, store) as mgr:
        assert status(mgr, "off") is ServerStatus.DISABLED
        # "disabled" is this config's view: the catalog's shared row, which other configs read, is untouched
        assert store.server("off").status is ServerStatus.UNKNOWN
        assert not pid_file.exists()
        with pytest.raises(ServerUnavailableError) as info:
            await mgr.call_tool("off", "echo", {})
        assert info.value.status == "disabled"
        with pytest.raises(ServerUnavailableError) as info:  # what stands in the way is the server, whatever the tool
            await mgr.call_tool("off", "nope", {})
        assert info.value.message.endswith("; its last tool listing has no tool 'nope'")


async def test_refresh_rediscovers_and_reconnects(tmp_path, store):
    down = tmp_path / "down"
    down.touch()
    config = make_config(tmp_path, {"raw": raw_stdio("--tools", "4"),
                                    "late": raw_stdio("--fail-if-exists", str(down))}, reconnect_attempts=0)
    async with ClientManager(config, store) as mgr:
        assert status(mgr, "late") is ServerStatus.ERROR
        with pytest.raises(ServerConnectError) as info:
            await mgr.refresh("late")
        assert "refusing to start" in info.value.message
        down.unlink()
        results = await mgr.refresh()
        assert status(mgr, "late") is ServerStatus.CONNECTED
        assert results["late"].added == ["fail", "rpc_error", "tool_0"]
        assert results["raw"].unchanged == 4 and not results["raw"].touched
        with pytest.raises(ToolNotFoundError):
            await mgr.refresh("nope")


async def test_apply_config_adds_removes_and_restarts_servers(tmp_path, store):
    keep = demo_memory(extra_tools=1)  # the demo's 7 tools and extra_0
    config = make_config(tmp_path, {"keep": keep, "drop": demo_memory(), "change": demo_memory(extra_tools=1)})
    async with ClientManager(config, store) as mgr:
        kept_session = mgr.session("keep")
        new = make_config(tmp_path, {"keep": keep, "change": demo_memory(extra_tools=3),
                                     "add": demo_memory(extra_tools=2), "off": demo_memory(enabled=False)})
        await mgr.apply_config(new)
        states = mgr.statuses()
        assert set(states) == {"keep", "change", "add", "off"}
        assert mgr.session("keep") is kept_session  # an unchanged server is not reconnected
        assert states["add"].status is ServerStatus.CONNECTED and len(store.tools("add")) == 9
        assert len(store.tools("change")) == 10
        assert states["off"].status is ServerStatus.DISABLED
        assert store.server("drop").status is ServerStatus.IDLE  # kept for the sync pipeline to prune
        assert len(store.tools("drop")) == 7
        with pytest.raises(ToolNotFoundError):
            await mgr.call_tool("drop", "echo", {"text": "x"})


async def test_connection_settings_are_read_live(tmp_path, store):
    demo = demo_memory()
    config = make_config(tmp_path, {"demo": demo})
    async with ClientManager(config, store) as mgr:
        seen = mgr.statuses()["demo"].last_seen
        await mgr.apply_config(make_config(tmp_path, {"demo": demo}, ping_interval=0.05))
        await wait_until(lambda: mgr.statuses()["demo"].last_seen > seen, what="pings after the reload")



async def test_settled_listings_wait_for_a_first_connection_attempt(tmp_path, store):
    """A proxy's first listing (a one-shot client right after start-up) waits for the upstreams
    still connecting, so it holds their resources and prompts rather than nothing."""
    config = make_config(tmp_path, {"demo": demo_memory()})
    mgr = ClientManager(config, store)
    try:
        mgr.launch()  # as jit serve starts its upstreams: connecting in the background
        assert mgr.listings() == []  # still connecting: nothing listed yet
        (server, listing), = await mgr.settled_listings()
        assert server == "demo"
        assert [r["name"] for r in listing["resources"]] == ["readme"]
        assert [p["name"] for p in listing["prompts"]] == ["greet"]
        assert await mgr.settled_listings() == mgr.listings()  # settled: answered at once
    finally:
        await mgr.close()
