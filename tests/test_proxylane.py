"""ProxyLane: which lines it answers itself, which it leaves to the SDK, and what it writes.

(What it refuses, line by line, is in tests/test_faults_wire.py.)

The lane is driven with the lines a client would send and the SDK's answer to
``initialize``; the proxy behind it is a stand-in, so every decision is visible.
(tests/test_serve.py runs the lane in a real ``jit serve --stdio`` process.)
"""

from __future__ import annotations

import json
from typing import Any

import anyio
import pytest
from mcp_types import INTERNAL_ERROR, JSONRPCResponse

from jit.serve.proxylane import ProxyLane

pytestmark = pytest.mark.anyio

RESULT = {"content": [{"type": "text", "text": "ok"}], "isError": False, "structuredContent": {"n": 1}}


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


class Proxy:
    """Proxies ``ws__read`` only; ``gate`` holds calls, ``fail`` makes them raise."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, str, dict[str, Any]]] = []
        self.recorded: list[str] = []
        self.gate: anyio.Event | None = None
        self.fail = False

    def proxy_target(self, name: Any, arguments: Any) -> tuple[str, str, dict[str, Any]] | None:
        if name == "ws__read" and (arguments is None or isinstance(arguments, dict)):
            return "ws", "read", arguments or {}
        return None

    async def proxy_call(self, server: str, tool: str, arguments: dict[str, Any], on_progress: Any = None) -> tuple[dict[str, Any], Any]:
        self.calls.append((server, tool, arguments))
        if self.gate is not None:
            await self.gate.wait()
        if self.fail:
            raise ValueError("boom")
        return dict(RESULT), lambda: self.recorded.append(tool)


class Out:
    def __init__(self) -> None:
        self.lines: list[str] = []

    async def write(self, text: str) -> None:
        self.lines.append(text)

    async def flush(self) -> None:
        pass

    def messages(self) -> list[dict[str, Any]]:
        return [json.loads(line) for line in self.lines]


def line(**msg: Any) -> str:
    return json.dumps({"jsonrpc": "2.0", **msg}) + "\n"


def call(rid: Any, name: str = "ws__read", arguments: Any = None, **params: Any) -> str:
    return line(id=rid, method="tools/call", params={"name": name, "arguments": arguments or {"path": "a"}, **params})


async def run(lane: ProxyLane, *lines: str) -> list[str]:
    """Feed ``lines``; return those passed on to the SDK (as the lines they were)."""

    async def source():
        for text in lines:
            yield text

    passed = [m.message.model_dump(by_alias=True, exclude_unset=True) async for m in lane.messages(source())]
    originals = {json.dumps(json.loads(text), sort_keys=True): text for text in lines}
    return [originals.get(json.dumps(m, sort_keys=True), json.dumps(m)) for m in passed]


async def handshake(lane: ProxyLane, version: str = "2025-11-25") -> None:
    assert await run(lane, line(id=0, method="initialize", params={"protocolVersion": version})) != []
    await lane.write_message(JSONRPCResponse(jsonrpc="2.0", id=0,
                                             result={"protocolVersion": version, "capabilities": {}}))


async def test_calls_are_answered_by_the_lane_after_the_handshake_and_usage_recorded_after_the_answer():
    proxy, out = Proxy(), Out()
    async with anyio.create_task_group() as tg:
        lane = ProxyLane(proxy, out, tg.start_soon)
        early = call(1)
        assert await run(lane, early) == [early]  # no handshake yet: the SDK answers (and refuses)
        await handshake(lane)
        assert lane.version == "2025-11-25"
        assert await run(lane, call(2), call("s-3")) == []
    assert proxy.calls == [("ws", "read", {"path": "a"})] * 2
    answers = out.messages()[1:]  # the first line is the SDK's initialize answer
    assert [a["id"] for a in answers] == [2, "s-3"]
    assert all(a["result"] == RESULT for a in answers)
    assert proxy.recorded == ["read", "read"] and lane.handled == 2


@pytest.mark.parametrize("text", [
    call(4, name="other__tool"),  # not a proxied tool
    call(6, _meta={"io.modelcontextprotocol/protocolVersion": "2026-07-28"}),  # a stateless-era request
    line(method="tools/call", params={"name": "ws__read"}),  # a notification, not a request
    line(id=7, method="tools/list"),
])
async def test_anything_else_is_passed_to_the_sdk_untouched(text):
    proxy, out = Proxy(), Out()
    async with anyio.create_task_group() as tg:
        lane = ProxyLane(proxy, out, tg.start_soon)
        await handshake(lane)
        assert await run(lane, text) == [text]
    assert proxy.calls == [] and len(out.lines) == 1


async def test_arguments_of_the_wrong_shape_are_answered_with_the_field_named_and_never_proxied():
    """The SDK refused ``arguments: [...]`` with a bare "Invalid request parameters"; jit's reader
    answers it first, naming the field, and nothing reaches the upstream."""
    proxy, out = Proxy(), Out()
    async with anyio.create_task_group() as tg:
        lane = ProxyLane(proxy, out, tg.start_soon)
        await handshake(lane)
        assert await run(lane, call(5, arguments=["a"])) == []
    answer = out.messages()[-1]
    assert answer["id"] == 5 and answer["error"]["code"] == -32602
    assert answer["error"]["data"] == {"path": "params.arguments"} and "must be an object" in answer["error"]["message"]
    assert proxy.calls == []


async def test_a_progress_token_alone_does_not_leave_the_lane():
    proxy, out = Proxy(), Out()
    async with anyio.create_task_group() as tg:
        lane = ProxyLane(proxy, out, tg.start_soon)
        await handshake(lane)
        assert await run(lane, call(9, _meta={"progressToken": 9})) == []
    assert out.messages()[-1]["id"] == 9


async def test_a_revision_the_handshake_cannot_settle_keeps_every_call_with_the_sdk():
    proxy, out = Proxy(), Out()
    async with anyio.create_task_group() as tg:
        lane = ProxyLane(proxy, out, tg.start_soon)
        await handshake(lane, version="2099-01-01")
        assert lane.version is None
        assert await run(lane, call(1)) == [call(1)]


async def test_cancelled_call_gets_no_answer_and_a_duplicate_id_goes_to_the_sdk():
    proxy, out = Proxy(), Out()
    proxy.gate = anyio.Event()
    async with anyio.create_task_group() as tg:
        lane = ProxyLane(proxy, out, tg.start_soon)
        await handshake(lane)
        assert await run(lane, call(1)) == []
        await anyio.wait_all_tasks_blocked()
        duplicate = call(1)
        assert await run(lane, duplicate) == [duplicate]  # id 1 is in flight with the lane
        other = line(method="notifications/cancelled", params={"requestId": 99})
        cancel = line(method="notifications/cancelled", params={"requestId": 1, "reason": "user"})
        assert await run(lane, other, cancel) == [other]  # not the lane's: the SDK's to handle
    assert len(out.lines) == 1 and proxy.recorded == [] and lane.handled == 0


@pytest.mark.parametrize("fault", ["raises", "invalid result"])
async def test_a_failing_proxy_answers_internal_error(fault):
    proxy, out = Proxy(), Out()
    if fault == "raises":
        proxy.fail = True
    else:
        async def invalid(*_args):  # the protocol's surface refuses it, as the SDK's runner does
            return {"content": "not a list of blocks"}, None

        proxy.proxy_call = invalid
    async with anyio.create_task_group() as tg:
        lane = ProxyLane(proxy, out, tg.start_soon)
        await handshake(lane)
        await run(lane, call(3))
    answer = out.messages()[-1]
    assert answer == {"jsonrpc": "2.0", "id": 3, "error": {"code": INTERNAL_ERROR, "message": "Internal error"}}


async def test_a_fault_while_reading_a_line_passes_it_to_the_sdk():
    proxy, out = Proxy(), Out()

    def broken(name, arguments):
        raise KeyError(name)

    proxy.proxy_target = broken
    async with anyio.create_task_group() as tg:
        lane = ProxyLane(proxy, out, tg.start_soon)
        await handshake(lane)
        assert await run(lane, call(4)) == [call(4)]


@pytest.mark.parametrize(("name", "arguments", "target"), [
    ("call_tool", {"server": "ws", "tool": "read"}, ("ws", "read", {})),
    ("call_tool", {"server": "ws", "tool": "read", "arguments": {"path": "a"}}, ("ws", "read", {"path": "a"})),
    ("call_tool", {"server": "ws", "tool": "read", "arguments": None}, ("ws", "read", {})),
    # What the meta-tool's input schema refuses is left to the SDK, which says so.
    ("call_tool", {"server": "", "tool": "read"}, None),
    ("call_tool", {"server": "ws"}, None),
    ("call_tool", {"server": "ws", "tool": "read", "extra": 1}, None),
    ("call_tool", {"server": "ws", "tool": "read", "arguments": [1]}, None),
    ("call_tool", None, None),
    ("search_tools", {"query": "x"}, None),
    (7, {}, None),
])
def test_jit_serve_proxies_well_formed_call_tool_requests_only(name, arguments, target):
    from types import SimpleNamespace

    from jit.serve.server import create_server
    from jit.serve.state import ServeOptions

    server = create_server(ServeOptions())
    assert server.proxy_target("call_tool", {"server": "ws", "tool": "read"}) is None  # not serving yet
    server.state = SimpleNamespace(exposed=None)
    assert server.proxy_target(name, arguments) == target
