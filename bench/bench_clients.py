"""Benchmark the ClientManager: connect+discover for N servers, and call_tool overhead.

    python bench/bench_clients.py [--calls 300] [--sizes 1,5,20] [--repeat 3]

1. ``start()`` wall time (connect + initialize + tools/resources/prompts discovery)
   for N stdio servers at once: the MCPServer demo server (tests/servers/demo_server.py,
   dominated by Python + SDK start-up, ~1 s CPU each) and the stdlib raw server
   (tests/servers/raw_server.py, ~50 ms), which shows the manager's own cost.
2. ``ClientManager.call_tool`` against a direct SDK ``ClientSession.call_tool`` on the
   same live session (demo ``echo`` over stdio, ``ClientManager.session()``): p50/p95
   latency over ``--calls`` calls after a warm-up, the two interleaved call by call.
   The difference is jit's overhead (lookup, result conversion, the usage row
   written to SQLite per call); the SQLite write is also timed alone.

Prints a table and writes bench/results/clients.json.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests"))

from servers.support import demo_stdio, make_config, raw_stdio  # noqa: E402

from jit.catalog.store import Store  # noqa: E402
from jit.client.manager import ClientManager  # noqa: E402

RESULTS = REPO / "bench" / "results" / "clients.json"


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q / 100 * (len(ordered) - 1))))]


async def connect_discover(kind: str, n: int, workdir: Path) -> dict[str, Any]:
    make = demo_stdio if kind == "demo" else raw_stdio
    servers = {f"{kind}{i:02d}": make(timeout=120) for i in range(n)}
    config = make_config(workdir, servers, reconnect_attempts=0)
    with Store(workdir / f"{kind}-{n}-{time.monotonic_ns()}.db") as store:
        manager = ClientManager(config, store)
        started = time.perf_counter()
        await manager.start()
        seconds = time.perf_counter() - started
        connected = sum(r.status.value == "connected" for r in manager.statuses().values())
        tools = store.tool_count()
        await manager.close()
    return {"seconds": seconds, "connected": connected, "tools": tools}


async def paired_calls(calls: int, warmup: int, workdir: Path) -> tuple[list[float], list[float]]:
    """Alternate ``ClientSession.call_tool`` and ``ClientManager.call_tool`` on one connection.

    The same session and server process serve both, and the order flips every
    round, so the difference is jit's own work, not two processes' luck on a
    loaded machine.
    """
    config = make_config(workdir, {"demo": demo_stdio()})
    direct: list[float] = []
    managed: list[float] = []
    with Store(workdir / "calls.db") as store:
        async with ClientManager(config, store) as manager:
            session = manager.session("demo")
            assert session is not None, manager.statuses()["demo"].last_error

            async def sdk(i: int) -> float:
                t = time.perf_counter()
                await session.call_tool("echo", {"text": f"call {i}"}, read_timeout_seconds=60)
                return (time.perf_counter() - t) * 1000

            async def jit(i: int) -> float:
                t = time.perf_counter()
                await manager.call_tool("demo", "echo", {"text": f"call {i}"})
                return (time.perf_counter() - t) * 1000

            for i in range(warmup + calls):
                if i % 2:
                    d, m = await sdk(i), await jit(i)
                else:
                    m, d = await jit(i), await sdk(i)
                if i >= warmup:
                    direct.append(d)
                    managed.append(m)
    return direct, managed


def record_call_cost(calls: int, workdir: Path) -> list[float]:
    with Store(workdir / "usage.db") as store:
        store.ensure_server("s", "stdio")
        out = []
        for _ in range(calls):
            t = time.perf_counter()
            store.record_call("s", "t", ok=True, latency_ms=1.0)
            out.append((time.perf_counter() - t) * 1000)
        return out


def summary(values: list[float]) -> dict[str, float]:
    return {"p50_ms": round(pct(values, 50), 3), "p95_ms": round(pct(values, 95), 3),
            "mean_ms": round(statistics.fmean(values), 3)}


async def main_async(args: argparse.Namespace) -> dict[str, Any]:
    sizes = [int(x) for x in args.sizes.split(",")]
    out: dict[str, Any] = {
        "machine": {"python": platform.python_version(), "cpus": os.cpu_count(), "platform": platform.platform()},
        "connect_discover": {},
    }
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        for kind in ("demo", "raw"):
            for n in sizes:
                runs = [await connect_discover(kind, n, work) for _ in range(args.repeat)]
                seconds = [r["seconds"] for r in runs]
                row = {"n": n, "median_s": round(statistics.median(seconds), 3), "min_s": round(min(seconds), 3),
                       "connected": runs[-1]["connected"], "tools": runs[-1]["tools"]}
                out["connect_discover"].setdefault(kind, []).append(row)
                print(f"connect+discover {kind:>4} N={n:>2}: median {row['median_s']:.3f}s "
                      f"(min {row['min_s']:.3f}s) connected {row['connected']}/{n}, {row['tools']} tools")
        direct, managed = await paired_calls(args.calls, args.warmup, work)
        usage = record_call_cost(args.calls, work)
    out["call_tool"] = {
        "calls": args.calls,
        "direct_sdk": summary(direct),
        "client_manager": summary(managed),
        "overhead_p50_ms": round(pct(managed, 50) - pct(direct, 50), 3),
        "paired_difference_p50_ms": round(pct([m - d for m, d in zip(managed, direct)], 50), 3),
        "overhead_p95_ms": round(pct(managed, 95) - pct(direct, 95), 3),
        "store_record_call": summary(usage),
    }
    c = out["call_tool"]
    print(f"call_tool direct SDK      p50 {c['direct_sdk']['p50_ms']:.3f} ms  p95 {c['direct_sdk']['p95_ms']:.3f} ms")
    print(f"call_tool ClientManager   p50 {c['client_manager']['p50_ms']:.3f} ms  "
          f"p95 {c['client_manager']['p95_ms']:.3f} ms")
    print(f"overhead                  p50 {c['overhead_p50_ms']:+.3f} ms  p95 {c['overhead_p95_ms']:+.3f} ms, "
          f"median paired difference {c['paired_difference_p50_ms']:+.3f} ms "
          f"(of which the SQLite usage row p50 {c['store_record_call']['p50_ms']:.3f} ms)")
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--warmup", type=int, default=30)
    parser.add_argument("--sizes", default="1,5,20")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    results = anyio.run(main_async, args)
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(results, indent=2) + "\n")
    print(f"wrote {RESULTS.relative_to(REPO)}")


if __name__ == "__main__":
    main()
