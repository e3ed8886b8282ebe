"""Cancellation through ``jit serve`` both ways, and the HTTP relay of sampling.

* A client that abandons a proxied ``call_tool`` (the SDK sends ``notifications/cancelled``)
  has the upstream request cancelled: tests/servers/cancel_server.py records, in a file,
  that its handler's wait was cancelled.
* A server that abandons its ``sampling/createMessage`` has the relayed request cancelled at
  jit's client: the client's sampling callback is cancelled.
* Over Streamable HTTP (``jit serve --http``), server-everything's sampling request goes to the
  client whose call is running; a client that did not declare sampling gets it refused
  (``-32600``) at the server (docs/serve.md, "Passing through").

Real processes throughout: jit serve, the Python test server, server-everything under node.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx2
import mcp_types as types
import pytest
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from servers.support import EVERYTHING_BIN, EVERYTHING_DIR, HERE, serving_http
from test_clients_thirdparty import require
from test_serve_passthrough import ENV, TIMEOUT, Client

pytestmark = [pytest.mark.anyio, pytest.mark.slow]  # jit serve (and node) processes

CANCEL_SERVER = str(HERE / "cancel_server.py")


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def write_config(base: Path, servers: dict[str, Any]) -> Path:
    path = base / "config.json"
    path.write_text(json.dumps({"servers": servers, "store": "catalog.db",
                                "connection": {"reconnect_attempts": 0, "ping_interval": 0}}), encoding="utf-8")
    return path


def events(record: Path) -> list[str]:
    return record.read_text(encoding="utf-8").split() if record.exists() else []


async def until(check: Any, what: str) -> None:
    """Poll ``check()`` until true (bounded by TIMEOUT, a hang guard, not a timing assertion)."""
    with anyio.fail_after(TIMEOUT):
        while not check():
            await anyio.sleep(0.05)


async def connected(s: ClientSession, server: str) -> None:
    """Until jit's upstream ``server`` is connected (jit serve answers at once, connects in the background)."""
    with anyio.fail_after(TIMEOUT):
        while True:
            rows = {r["server"]: r["status"] for r in
                    json.loads((await s.read_resource("jit://servers")).contents[0].text)}
            if rows.get(server) == "connected":
                return
            await anyio.sleep(0.1)


@asynccontextmanager
async def over_stdio(config: Path, **callbacks: Any) -> AsyncIterator[ClientSession]:
    params = StdioServerParameters(command=sys.executable,
                                   args=["-m", "jit", "serve", "--stdio", "--config", str(config)], env=ENV)
    async with stdio_client(params) as (read, write), \
            ClientSession(read, write, read_timeout_seconds=TIMEOUT, **callbacks) as s:
        await s.initialize()
        await connected(s, "waiter")
        yield s


@asynccontextmanager
async def over_http(url: str, **callbacks: Any) -> AsyncIterator[ClientSession]:
    async with httpx2.AsyncClient(timeout=httpx2.Timeout(TIMEOUT)) as http, \
            streamable_http_client(url, http_client=http) as (read, write), \
            ClientSession(read, write, read_timeout_seconds=TIMEOUT, **callbacks) as s:
        await s.initialize()
        yield s


@asynccontextmanager
async def through_jit(transport: str, base: Path, config: Path, **callbacks: Any) -> AsyncIterator[ClientSession]:
    """A session with jit serve over ``transport``: on stdio the proxy lane answers ``call_tool``
    (jit/serve/proxylane.py); over HTTP the SDK's handler does (jit/serve/server.py)."""
    if transport == "stdio":
        async with over_stdio(config, **callbacks) as s:
            yield s
        return
    with serving_http(base, config, env={**os.environ, **ENV}, timeout=TIMEOUT) as url:
        async with over_http(url, **callbacks) as s:
            await connected(s, "waiter")
            yield s


def waiter(base: Path) -> tuple[Path, Path]:
    record = base / "record.txt"
    config = write_config(base, {"waiter": {"command": sys.executable, "args": [CANCEL_SERVER, "--record",
                                                                                  str(record)], "timeout": 60}})
    return config, record


@pytest.mark.parametrize("transport", ["stdio", "http"])
async def test_a_cancelled_call_is_cancelled_at_the_upstream(tmp_path, transport):
    config, record = waiter(tmp_path)
    async with through_jit(transport, tmp_path, config) as s:
        async with anyio.create_task_group() as tg:
            async def call() -> None:
                await s.call_tool("call_tool", {"server": "waiter", "tool": "wait", "arguments": {"seconds": 30}})

            tg.start_soon(call)
            await until(lambda: "started" in events(record), "the upstream call started")
            tg.cancel_scope.cancel()  # the SDK abandons the request: notifications/cancelled to jit
        await until(lambda: "cancelled" in events(record), "the upstream handler was cancelled")
        # The connection to the server is still good: the next call runs to its end.
        after = await s.call_tool("call_tool", {"server": "waiter", "tool": "wait", "arguments": {"seconds": 0}})
    assert not after.is_error and "waited 0" in after.content[0].text
    assert events(record) == ["started", "cancelled", "started", "finished"]


@pytest.mark.parametrize("transport", ["stdio", "http"])
async def test_a_request_the_server_cancels_is_cancelled_at_the_client(tmp_path, transport):
    config, _ = waiter(tmp_path)
    seen: list[str] = []

    async def sampling(ctx: Any, params: types.CreateMessageRequestParams) -> types.CreateMessageResult:
        seen.append("asked")
        try:
            await anyio.sleep(TIMEOUT)
        except anyio.get_cancelled_exc_class():
            seen.append("cancelled")
            raise
        return types.CreateMessageResult(role="assistant", model="m", content=types.TextContent(type="text",
                                                                                               text="too late"))

    async with through_jit(transport, tmp_path, config, sampling_callback=sampling) as s:
        # The server waits 5 s for the answer, then gives up and cancels its request.
        result = await s.call_tool("call_tool", {"server": "waiter", "tool": "ask_then_give_up",
                                                 "arguments": {"seconds": 5}})
        await until(lambda: "cancelled" in seen, "the client's sampling was cancelled")
    assert not result.is_error and "gave up" in result.content[0].text
    assert seen == ["asked", "cancelled"]


# --------------------------------------------------------------------------- over Streamable HTTP


@pytest.fixture
def served_http(tmp_path) -> Iterator[str]:
    """``jit serve --http`` over server-everything (as tests/test_serve_passthrough.py finds it)."""
    found = EVERYTHING_BIN.exists() and (EVERYTHING_DIR / "dist" / "index.js").exists() and shutil.which("node")
    everything = require("@modelcontextprotocol/server-everything (and node)", str(EVERYTHING_BIN) if found else None)
    config = write_config(tmp_path, {"everything": {"command": everything, "args": ["stdio"], "timeout": 60}})
    with serving_http(tmp_path, config, env={**os.environ, **ENV}, timeout=TIMEOUT) as url:
        yield url


SAMPLE = {"server": "everything", "tool": "trigger-sampling-request", "arguments": {"prompt": "say hi", "maxTokens": 20}}


async def test_over_http_sampling_goes_to_the_calling_client_or_is_refused(served_http):
    capable, plain = Client(), Client()
    async with over_http(served_http, **capable.callbacks(True)) as a, \
            over_http(served_http, **plain.callbacks(False)) as b:
        await connected(a, "everything")
        # Each call is made right after the *other* client was heard from: the request goes by the
        # running call, not to the client heard from last.
        await b.read_resource("jit://servers")
        sampled = await a.call_tool("call_tool", SAMPLE)
        await a.read_resource("jit://servers")
        refused = await b.call_tool("call_tool", SAMPLE)
    assert not sampled.is_error and "sampled through jit" in sampled.content[0].text
    assert len(capable.sampled) == 1 and "say hi" in capable.sampled[0].messages[0].content.text
    # The client without sampling was not asked; server-everything got jit's -32600 and reports it.
    assert plain.sampled == []
    text = json.dumps([c.model_dump() for c in refused.content])
    assert "does not support sampling/createMessage" in text, text
