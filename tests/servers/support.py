"""Helpers for the client tests: configs for the test servers (processes or in-process), waiting.

Imported by ``tests/test_clients*.py`` as ``servers.support`` (pytest puts ``tests/``
on ``sys.path``) and by ``bench/bench_clients.py``.
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import anyio

from jit.client.transports import InProcessServerConfig
from jit.config import Config, ConnectionConfig
from jit.servers_config import HttpServerConfig, SseServerConfig, StdioServerConfig

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
PY = sys.executable
DEMO = str(HERE / "demo_server.py")
RAW = str(HERE / "raw_server.py")
LOOPBACK_PRELOAD = str(HERE / "loopback.cjs")
EVERYTHING_DIR = REPO / ".test-servers" / "node_modules" / "@modelcontextprotocol" / "server-everything"
EVERYTHING_BIN = REPO / ".test-servers" / "node_modules" / ".bin" / "mcp-server-everything"

#: Reconnection tuned for tests: quick retries, bounded, no background pings unless asked.
FAST = {"reconnect_initial_delay": 0.05, "reconnect_max_delay": 0.3, "reconnect_attempts": 3, "ping_interval": 0}


def demo_stdio(*args: str, timeout: float = 20, **kw: Any) -> StdioServerConfig:
    return StdioServerConfig(command=PY, args=[DEMO, "--transport", "stdio", *args], timeout=timeout, **kw)


def demo_memory(name: str = "demo", *, extra_tools: int = 0, timeout: float = 10, **kw: Any) -> InProcessServerConfig:
    """The demo server as an object in this process, on the SDK's in-memory transport.

    A new server object per call: its ``add_tool``/``remove_tool`` change that object's
    tools, so tests do not share them. No process, so it starts in milliseconds (the fast tier).
    """
    from servers.demo_server import build

    return InProcessServerConfig(build(name, extra_tools), timeout=timeout, **kw)


def raw_stdio(*args: str, timeout: float = 10, **kw: Any) -> StdioServerConfig:
    return StdioServerConfig(command=PY, args=[RAW, "--transport", "stdio", *args], timeout=timeout, **kw)


def make_config(base: Path, servers: dict[str, Any], **connection: Any) -> Config:
    """A real :class:`Config` rooted at ``base`` with these servers and fast reconnection."""
    return dataclasses.replace(
        Config.default(base), servers=servers, connection=ConnectionConfig(**{**FAST, **connection})
    )


def notes_config(base: Path, store: str, tools: Sequence[str] = ("send_message", "read_note")
                 ) -> tuple[Path, Callable[..., None]]:
    """``base/config.json`` whose one server ``notes`` is tests/servers/mutable_server.py (calls logged to
    ``base/calls.jsonl``) over the catalog ``store``, listing ``tools``; and a function setting the tools
    it lists (by name) from then on."""
    spec = base / "spec.json"

    def set_tools(*names: str) -> None:
        spec.write_text(json.dumps({"tools": [
            {"name": n, "description": f"{n.replace('_', ' ')} in the notes archive",
             "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}}} for n in names]}),
            encoding="utf-8")

    set_tools(*tools)
    path = base / "config.json"
    path.write_text(json.dumps({
        "servers": {"notes": {"command": PY, "args": [str(HERE / "mutable_server.py"), "--spec", str(spec),
                                                      "--calls", str(base / "calls.jsonl")]}},
        "store": store, "rules": str(REPO / "rules"), "analyzer": {"provider": "offline"},
        "connection": {"ping_interval": 0, "reconnect_attempts": 0},
    }), encoding="utf-8")
    return path, set_tools


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def port_open(port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(0.2)
        return s.connect_ex(("127.0.0.1", port)) == 0


class ServerProcess:
    """A test server process listening on 127.0.0.1:port; can be killed and started again.

    As a context manager it is started on entry (if not yet) and always killed on exit.
    """

    def __init__(self, argv: Sequence[str], port: int, *, path: str, env: dict[str, str] | None = None,
                 log: Path | None = None) -> None:
        self.argv = list(argv)
        self.port = port
        self.path = path
        self.env = env
        self.log = log
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}{self.path}"

    def start(self, wait: float = 30) -> ServerProcess:
        out = open(self.log, "ab") if self.log else subprocess.DEVNULL  # noqa: SIM115 - closed with the process
        self.proc = subprocess.Popen(self.argv, stdin=subprocess.DEVNULL, stdout=out, stderr=out,
                                     env={**os.environ, **(self.env or {})}, start_new_session=True)
        deadline = time.monotonic() + wait
        while not port_open(self.port):
            if self.proc.poll() is not None:
                raise RuntimeError(f"{self.argv} exited with {self.proc.returncode} before listening")
            if time.monotonic() > deadline:
                self.kill()
                raise RuntimeError(f"{self.argv} did not listen on port {self.port} within {wait}s")
            time.sleep(0.05)
        return self

    def __enter__(self) -> ServerProcess:
        return self.start() if self.proc is None else self

    def __exit__(self, *exc: object) -> None:
        self.kill()

    def kill(self) -> None:
        """SIGKILL the whole process group (no goodbye to clients) and reap it."""
        if self.proc is not None and self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            self.proc.wait(timeout=10)
        self.proc = None


def demo_http(transport: str = "http", **kw: Any) -> ServerProcess:
    port = free_port()
    return ServerProcess([PY, DEMO, "--transport", transport, "--port", str(port)], port,
                         path="/mcp" if transport == "http" else "/sse", **kw)


def gated_replacement(server: ServerProcess, gate: Path) -> ServerProcess:
    """A demo server for ``server``'s port and transport that loads at once, writes ``gate.waiting``,
    and listens only once ``gate`` exists: ready to take the port the moment a test lets it."""
    transport = "http" if server.path == "/mcp" else "sse"
    return ServerProcess([PY, DEMO, "--transport", transport, "--port", str(server.port), "--listen-after", str(gate)],
                         server.port, path=server.path)


def http_config(server: ServerProcess, **kw: Any) -> HttpServerConfig | SseServerConfig:
    cls = SseServerConfig if server.path == "/sse" else HttpServerConfig
    return cls(url=server.url, **{"timeout": 20, **kw})


def everything_http(mode: str) -> ServerProcess:
    """server-everything over ``streamableHttp`` or ``sse``, held to 127.0.0.1 by a preload."""
    port = free_port()
    node = shutil.which("node") or "node"
    argv = [node, "--require", LOOPBACK_PRELOAD, str(EVERYTHING_DIR / "dist" / "index.js"), mode]
    return ServerProcess(argv, port, path="/mcp" if mode == "streamableHttp" else "/sse", env={"PORT": str(port)})


async def wait_until(predicate: Callable[[], Any], *, within: float = 30, what: str = "condition") -> Any:
    """Poll ``predicate`` until truthy; a hang guard, not a timing assertion."""
    deadline = anyio.current_time() + within
    while True:
        value = predicate()
        if value:
            return value
        if anyio.current_time() > deadline:
            raise AssertionError(f"gave up waiting for {what} after {within}s")
        await anyio.sleep(0.02)


def stop(proc: subprocess.Popen[bytes]) -> None:
    """SIGTERM (jit serve closes its upstreams), then SIGKILL the group if it lingers."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=10)


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie still answers kill(0); it is dead for our purposes.
    try:
        state = Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0]
    except OSError:
        return False
    return state != "Z"


def listening_addresses(port: int) -> set[str]:
    """Addresses with a socket listening on ``port``, from /proc/net/tcp{,6} (Linux)."""
    found: set[str] = set()
    for table, width in (("/proc/net/tcp", 8), ("/proc/net/tcp6", 32)):
        try:
            rows = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for row in rows:
            local, state = row.split()[1], row.split()[3]
            addr, _, hexport = local.partition(":")
            if state != "0A" or int(hexport, 16) != port:  # 0A = LISTEN
                continue
            if width == 8:
                found.add(socket.inet_ntop(socket.AF_INET, bytes.fromhex(addr)[::-1]))
            else:
                raw = b"".join(bytes.fromhex(addr[i:i + 8])[::-1] for i in range(0, 32, 8))
                found.add(socket.inet_ntop(socket.AF_INET6, raw))
    return found


@contextmanager
def serving_http(base: Path, config: Path, *options: str, env: Mapping[str, str], host: str = "",
                 timeout: float = 180) -> Iterator[str]:
    """``jit serve --http HOST:PORT`` on ``config`` (plus ``options``) in its own process, its output in
    ``base/serve.log``, stopped by its PID; yields its URL once it listens."""
    port = free_port()
    log = open(base / "serve.log", "wb")  # noqa: SIM115 - closed below
    proc = subprocess.Popen([sys.executable, "-m", "jit", "serve", "--http", f"{host}:{port}", *options,
                             "--config", str(config)],
                            stdin=subprocess.DEVNULL, stdout=log, stderr=log, env=dict(env), start_new_session=True)
    try:
        deadline = time.monotonic() + timeout
        while not port_open(port):
            assert proc.poll() is None, (base / "serve.log").read_text()
            assert time.monotonic() < deadline, "jit serve did not listen in time"
            time.sleep(0.1)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        stop(proc)
        log.close()


def http_session(http: Any, url: str) -> dict[str, str]:
    """The headers of a new Streamable HTTP session with ``url`` (``initialize`` answered) on the
    ``httpx2.Client`` ``http``."""
    headers = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
    init = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}}
    first = http.post(url, json=init, headers=headers)
    assert first.status_code == 200, first.text
    return {**headers, "Mcp-Session-Id": first.headers["mcp-session-id"], "Mcp-Protocol-Version": "2025-11-25"}
