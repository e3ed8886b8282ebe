"""``jit serve`` proxy overhead, and the cold start of ``jit compile`` from the shell.

Proxy: the same tool (the example workspace server's ``file_info``) is called N times
by the SDK's ``ClientSession``

* directly on the upstream server, and
* through ``jit serve`` (client → jit serve → upstream) with the ``call_tool`` meta-tool,
  and with an exposed tool's namespaced name (``--expose-shard``),
* through a bare relay (stdio only): an ``MCPServer`` whose one tool forwards to the
  upstream through a ``ClientSession``, the least any MCP proxy built on the SDK costs;
  the difference between it and jit is what jit itself adds,

over stdio (every hop stdio) and over Streamable HTTP (every hop HTTP). Reported:
p50 / p95 / mean per path and the overhead jit adds (p50 and p95 differences). Direct
and proxied calls alternate in blocks, so machine load drifts over both alike; the
whole measurement is repeated in fresh processes (``--repeat``), samples pooled, and
each run's overheads listed.

Cold start: the wall time of ``jit compile --json`` as a shell runs it (a new process:
imports, model load, catalog read, compile), median of 3; ``jit servers`` (no model)
for comparison.

Start-up (``startup`` in serve.json): from spawning ``jit serve --stdio`` (the console
script, as an MCP client spawns it) to its ``initialize`` answer (written by the process
entry before the MCP SDK loads: jit/serve/early.py), its ``tools/list`` answer (the
server up: the SDK and jit's command line imported) and its first ``search_tools``
answer (which waits for the compiler and the model over the cached catalog), median of
``--runs``. The config holds an upstream
that hangs on connect (tests/servers/slow_server.py, timeout 120 s) besides the
workspace server; measured on the bench's small catalog and on copies of the
1k / 10k-tool catalogs in .jit/bench/ (real_N.db) when they exist. Their servers'
names are not valid config names, so they stay out of the config's scope: those runs
measure what ``initialize`` and ``tools/list`` do with a catalog of that size (open,
migrate, scope), not a search over it (bench_compile.py measures the compiler there).

    python -m bench.bench_serve [--calls 300] [--repeat 3] [--transports stdio,http] [--runs 3]
        [--startup-only]

Writes bench/results/serve.json and bench/results/cli.json.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

import httpx2  # noqa: E402
from mcp.client.session import ClientSession  # noqa: E402
from mcp.client.stdio import StdioServerParameters, stdio_client  # noqa: E402
from mcp.client.streamable_http import streamable_http_client  # noqa: E402
from mcp.server.mcpserver import MCPServer  # noqa: E402
from mcp_types import CallToolResult  # noqa: E402

from jit.catalog.store import Store  # noqa: E402
from jit.config_files import load_config  # noqa: E402
from jit.embedding.factory import embedder_from_config  # noqa: E402
from jit.embedding.protocol import Embedder  # noqa: E402
from jit.pipeline import sync  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
RESULTS = REPO / "bench" / "results"
WORKSPACE = REPO / "examples" / "servers" / "workspace.py"
JIT = str(Path(sys.executable).parent / "jit")
ENV = {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}
TASK = "look up file sizes and line counts in the workspace"
BLOCK = 25  # calls per block; direct and proxied blocks alternate


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def write_config(base: Path, upstream: dict[str, Any]) -> Path:
    (base / "ws").mkdir(exist_ok=True)
    (base / "ws" / "README.md").write_text("# bench\n" * 40)
    path = base / "config.json"
    path.write_text(json.dumps({
        "servers": {"workspace": upstream},
        "store": "catalog.db",
        "rules": str(REPO / "rules"),
        "available_tools": str(REPO / "available_tools.json"),
    }))
    return path


def stats(samples: list[float]) -> dict[str, float]:
    ordered = sorted(samples)
    return {
        "n": len(ordered),
        "p50_ms": round(statistics.median(ordered), 3),
        "p95_ms": round(ordered[int(0.95 * (len(ordered) - 1))], 3),
        "mean_ms": round(statistics.fmean(ordered), 3),
    }


@asynccontextmanager
async def stdio_session(command: str, args: list[str]) -> AsyncIterator[ClientSession]:
    params = StdioServerParameters(command=command, args=args, env=ENV, cwd=str(REPO))
    async with stdio_client(params) as (read, write), ClientSession(read, write, read_timeout_seconds=300) as s:
        await s.initialize()
        yield s


@asynccontextmanager
async def http_session(url: str) -> AsyncIterator[ClientSession]:
    async with httpx2.AsyncClient(timeout=300) as http, streamable_http_client(url, http_client=http) as (r, w), \
            ClientSession(r, w, read_timeout_seconds=300) as s:
        await s.initialize()
        yield s


class Listening:
    """A server process on 127.0.0.1:port, stopped with SIGTERM (then SIGKILL)."""

    def __init__(self, argv: list[str], port: int) -> None:
        self.argv, self.port = argv, port

    def __enter__(self) -> Listening:
        self.proc = subprocess.Popen(self.argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.DEVNULL, env={**os.environ, **ENV})
        deadline = time.monotonic() + 300
        while True:
            with socket.socket() as s:
                if s.connect_ex(("127.0.0.1", self.port)) == 0:
                    return self
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.__exit__()
                raise RuntimeError(f"{self.argv[:4]} did not start listening")
            time.sleep(0.1)

    def __exit__(self, *exc: object) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


async def timed(call: Callable[[], Awaitable[Any]], n: int, out: list[float]) -> None:
    for _ in range(n):
        t = time.perf_counter()
        result = await call()
        out.append((time.perf_counter() - t) * 1000)
        if result.is_error:
            raise RuntimeError(f"call failed: {result.content}")


async def measure(paths: dict[str, Callable[[], Awaitable[Any]]], calls: int) -> dict[str, list[float]]:
    samples: dict[str, list[float]] = {name: [] for name in paths}
    for call in paths.values():  # warm up every path (caches, output-schema lookups)
        for _ in range(20):
            await call()
    for _ in range(max(1, calls // BLOCK)):
        for name, call in paths.items():
            await timed(call, BLOCK, samples[name])
    return samples


def relay(upstream: list[str]) -> None:
    """``--relay``: serve one tool over stdio that forwards every call to the upstream."""
    stack = AsyncExitStack()
    session: dict[str, ClientSession] = {}

    @asynccontextmanager
    async def lifespan(_server: MCPServer) -> AsyncIterator[None]:
        async with stack:
            session["s"] = await stack.enter_async_context(stdio_session(sys.executable, upstream))
            yield

    server = MCPServer("relay", lifespan=lifespan, log_level="WARNING")

    @server.tool()
    async def forward(tool: str, arguments: dict[str, Any]) -> CallToolResult:
        return await session["s"].call_tool(tool, arguments)

    server.run("stdio")


async def bench_stdio(base: Path, calls: int) -> dict[str, list[float]]:
    upstream = [str(WORKSPACE), "--root", str(base / "ws")]
    config = write_config(base, {"command": sys.executable, "args": upstream})
    await presync(config)
    serve = ["-m", "jit", "serve", "--stdio", "--config", str(config)]
    expose = [*serve, "--expose-shard", "coder", "--task", TASK]
    bare = ["-m", "bench.bench_serve", "--relay", *upstream]
    async with stdio_session(sys.executable, upstream) as direct, stdio_session(sys.executable, bare) as relayed, \
            stdio_session(sys.executable, serve) as meta, stdio_session(sys.executable, expose) as exposed:
        deadline = time.monotonic() + 300  # jit serve compiles its exposed tools in the background
        while "workspace__file_info" not in (names := [t.name for t in (await exposed.list_tools()).tools]):
            if time.monotonic() > deadline:
                raise RuntimeError(f"workspace__file_info is not exposed for the bench task: {names}")
            await asyncio.sleep(0.1)
        return await measure({
            "direct": lambda: direct.call_tool("file_info", {"path": "README.md"}),
            "sdk_relay": lambda: relayed.call_tool("forward", {"tool": "file_info",
                                                               "arguments": {"path": "README.md"}}),
            "jit_call_tool": lambda: meta.call_tool("call_tool", {"server": "workspace", "tool": "file_info",
                                                                  "arguments": {"path": "README.md"}}),
            "jit_exposed": lambda: exposed.call_tool("workspace__file_info", {"path": "README.md"}),
        }, calls)


async def bench_http(base: Path, calls: int) -> dict[str, list[float]]:
    up_port, jit_port = free_port(), free_port()
    config = write_config(base, {"transport": "http", "url": f"http://127.0.0.1:{up_port}/mcp"})
    upstream = [sys.executable, str(WORKSPACE), "--root", str(base / "ws"), "--http", f"127.0.0.1:{up_port}"]
    with Listening(upstream, up_port):
        await presync(config)
        with Listening([JIT, "serve", "--http", f"127.0.0.1:{jit_port}", "--config", str(config)], jit_port):
            async with http_session(f"http://127.0.0.1:{up_port}/mcp") as direct, \
                    http_session(f"http://127.0.0.1:{jit_port}/mcp") as meta:
                return await measure({
                    "direct": lambda: direct.call_tool("file_info", {"path": "README.md"}),
                    "jit_call_tool": lambda: meta.call_tool("call_tool", {"server": "workspace", "tool": "file_info",
                                                                          "arguments": {"path": "README.md"}}),
                }, calls)


_EMBEDDER: Embedder | None = None


async def presync(config_path: Path) -> None:
    """Fill the catalog in process so jit serve starts without embedding anything."""
    global _EMBEDDER
    config = load_config(config_path)
    _EMBEDDER = _EMBEDDER or embedder_from_config(config.embedding)
    with Store(config.store_path) as store:
        await sync(config, store, _EMBEDDER)


def proxy_report(runs: list[dict[str, list[float]]]) -> dict[str, Any]:
    """Stats over the samples of every run pooled, and each run's own overhead p50s.

    One run's p50 moves with the machine's state (on this 2-core VM the direct call
    alone ranged 1.8 to 2.5 ms between runs), so several runs in fresh processes
    are pooled and each run is shown."""
    samples = {name: [x for run in runs for x in run[name]] for name in runs[0]}
    out: dict[str, Any] = {name: stats(s) for name, s in samples.items()}
    for name in samples:
        if name != "direct":
            out[f"{name}_overhead"] = {
                "p50_ms": round(out[name]["p50_ms"] - out["direct"]["p50_ms"], 3),
                "p95_ms": round(out[name]["p95_ms"] - out["direct"]["p95_ms"], 3),
            }
    if "sdk_relay" in samples:
        out["jit_over_sdk_relay_p50_ms"] = round(out["jit_call_tool"]["p50_ms"] - out["sdk_relay"]["p50_ms"], 3)
    if len(runs) > 1:
        direct = [statistics.median(run["direct"]) for run in runs]
        out["runs"] = [{f"{name}_overhead_p50_ms": round(statistics.median(run[name]) - d, 3)
                        for name in run if name != "direct"} | {"direct_p50_ms": round(d, 3)}
                       for run, d in zip(runs, direct, strict=True)]
    return out


def cold_start(base: Path, runs: int) -> dict[str, Any]:
    """Wall time of ``jit compile`` and ``jit servers`` as new processes, as a shell would run them."""
    config = base / "config.json"
    commands = {
        "jit_compile": [JIT, "compile", "--shard", "coder", "--task", TASK, "--config", str(config), "--json"],
        "jit_servers": [JIT, "servers", "--config", str(config), "--json"],
    }
    out: dict[str, Any] = {}
    for name, argv in commands.items():
        times = []
        for _ in range(runs):
            t = time.perf_counter()
            subprocess.run(argv, check=True, capture_output=True, env={**os.environ, **ENV})
            times.append(time.perf_counter() - t)
        out[name] = {"runs": [round(x, 3) for x in times], "median_s": round(statistics.median(times), 3)}
    return out


SLOW_SERVER = REPO / "tests" / "servers" / "slow_server.py"
STARTUP_CATALOGS = {"real_1000": REPO / ".jit" / "bench" / "real_1000.db",
                    "real_10000": REPO / ".jit" / "bench" / "real_10000.db"}


def _copy_catalog(source: Path, target: Path) -> None:
    """A consistent copy of a catalog another process may be writing (SQLite's backup API)."""
    import pysqlite3.dbapi2 as sqlite3

    src, dst = sqlite3.connect(f"file:{source}?mode=ro", uri=True), sqlite3.connect(target)
    try:
        src.backup(dst)
    finally:
        src.close()
        dst.close()


def _rpc(proc: subprocess.Popen[bytes], rid: int, method: str, params: dict[str, Any] | None = None) -> Any:
    """Send one request on jit serve's stdin and read lines until its answer (notifications skipped)."""
    assert proc.stdin is not None and proc.stdout is not None
    message: dict[str, Any] = {"jsonrpc": "2.0", "id": rid, "method": method}
    if params is not None:
        message["params"] = params
    proc.stdin.write((json.dumps(message) + "\n").encode())
    proc.stdin.flush()
    while True:
        line = proc.stdout.readline()
        if not line:
            raise RuntimeError(f"jit serve exited (code {proc.wait()}) before answering {method}")
        answer = json.loads(line)
        if answer.get("id") == rid and "method" not in answer:
            if "error" in answer or answer["result"].get("isError"):
                raise RuntimeError(f"{method} failed: {answer}")
            return answer["result"]


def _startup_once(config: Path, *, search: bool = True) -> dict[str, float]:
    """Seconds from spawning ``jit serve --stdio`` to its initialize, tools/list and first search answers."""
    began = time.perf_counter()
    proc = subprocess.Popen([JIT, "serve", "--stdio", "--config", str(config)], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env={**os.environ, **ENV},
                            start_new_session=True)
    try:
        _rpc(proc, 1, "initialize", {"protocolVersion": "2025-11-25", "capabilities": {},
                                     "clientInfo": {"name": "bench", "version": "0"}})
        initialized = time.perf_counter() - began
        assert proc.stdin is not None
        proc.stdin.write(b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n')
        _rpc(proc, 2, "tools/list")
        listed = time.perf_counter() - began
        if not search:
            return {"initialize_s": initialized, "tools_list_s": listed}
        _rpc(proc, 3, "tools/call", {"name": "search_tools", "arguments": {"query": TASK, "limit": 5}})
        searched = time.perf_counter() - began
    finally:
        assert proc.stdin is not None
        with contextlib.suppress(OSError):
            proc.stdin.close()  # as a client ends it: jit serve closes its upstreams (the hanging one too)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    return {"initialize_s": initialized, "tools_list_s": listed, "search_tools_s": searched}


def startup(base: Path, runs: int) -> dict[str, Any]:
    """``jit serve --stdio`` start-up with an upstream that hangs, per catalog (median of ``runs``)."""
    base.mkdir(parents=True, exist_ok=True)
    config = write_config(base, {"command": sys.executable, "args": [str(WORKSPACE), "--root", str(base / "ws")]})
    asyncio.run(presync(config))
    body = json.loads(config.read_text())
    body["servers"]["hang"] = {"command": sys.executable, "args": [str(SLOW_SERVER), "--delay", "3600"],
                               "timeout": 120}
    catalogs: dict[str, Path | None] = {"bench_small": None}
    catalogs |= {name: path for name, path in STARTUP_CATALOGS.items() if path.exists()}
    out: dict[str, Any] = {"upstreams": ["workspace", "hang (never answers initialize; timeout 120 s)"]}
    for name, source in catalogs.items():
        if source is not None:
            _copy_catalog(source, base / f"{name}.db")
            body["store"] = f"{name}.db"
        config.write_text(json.dumps(body))
        samples = [_startup_once(config, search=source is None) for _ in range(runs)]
        out[name] = {key: {"runs": [round(s[key], 3) for s in samples],
                           "median_s": round(statistics.median(s[key] for s in samples), 3)}
                     for key in samples[0]}
        print(f"startup {name}: " + json.dumps({k: v["median_s"] for k, v in out[name].items()}), flush=True)
    out["initialize_s"] = max(out[name]["initialize_s"]["median_s"] for name in catalogs)
    return out


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=300, help="calls per path")
    parser.add_argument("--transports", default="stdio,http", help="comma-separated: stdio, http")
    parser.add_argument("--repeat", type=int, default=3, help="proxy runs per transport, each in fresh processes")
    parser.add_argument("--runs", type=int, default=3, help="cold-start runs of each command")
    parser.add_argument("--startup-only", action="store_true",
                        help="measure only the start-up (updates the startup key of serve.json)")
    parser.add_argument("--relay", nargs=argparse.REMAINDER, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.relay:
        relay(args.relay)
        return
    RESULTS.mkdir(parents=True, exist_ok=True)
    machine = {"cpus": os.cpu_count(), "load_avg_1m_at_start": round(os.getloadavg()[0], 2),
               "python": sys.version.split()[0]}
    serve: dict[str, Any] = {"machine": machine, "calls_per_path": args.calls, "tool": "workspace/file_info"}
    base = Path(tempfile.mkdtemp(prefix="jit-bench-serve-"))
    try:
        if args.startup_only:
            previous = json.loads((RESULTS / "serve.json").read_text()) if (RESULTS / "serve.json").exists() else {}
            previous["startup"] = startup(base / "startup", args.runs) | {"machine": machine}
            (RESULTS / "serve.json").write_text(json.dumps(previous, indent=2))
            return
        serve["startup"] = startup(base / "startup", args.runs)
        for transport in args.transports.split(","):
            run = {"stdio": bench_stdio, "http": bench_http}[transport.strip()]
            where = base / transport
            where.mkdir()
            runs = []
            for i in range(args.repeat):
                (where / str(i)).mkdir()
                runs.append(asyncio.run(run(where / str(i), args.calls)))
            serve[transport] = proxy_report(runs)
            print(f"{transport}: " + json.dumps(serve[transport]), flush=True)
        (RESULTS / "serve.json").write_text(json.dumps(serve, indent=2))
        cli = {"machine": machine, "task": TASK, **cold_start(base / args.transports.split(",")[0].strip() / "0",
                                                              args.runs)}
        (RESULTS / "cli.json").write_text(json.dumps(cli, indent=2))
        print("cold start: " + json.dumps(cli))
    finally:
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
