"""End-to-end `jit sync`: 10,000 real tools on stdio MCP servers, from a new process to its exit.

The first ``--tools`` tools of toucan_smithery/tools.jsonl are spread over ``--servers`` stdio
MCP servers (tests/servers/mutable_server.py, each listing its share from a spec file), and a
config names them. ``jit sync --config`` then runs as a user runs it, in a new process: imports,
the model's load, connecting to every server, listing, storing, the offline analysis,
embedding (``embedding.bulk_runtime`` as ``--bulk-runtime`` says) and the compiled view for the
next process. Each setting runs a first sync into an empty catalog (every tool new) and then
a re-sync (nothing new). The wall time is the console script's, from start to exit; the peak
RSS is the largest process's (jit's: the servers are ~20 MB each).

    python -m bench.bench_sync [--tools 10000] [--servers 40] [--bulk-runtime auto off] [--repeat 2]

Writes bench/results/sync.json.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.bench_store import DEFAULT_DATA, RESULTS, load_tools

REPO = Path(__file__).resolve().parent.parent
SERVER = REPO / "tests" / "servers" / "mutable_server.py"

#: Runs ``jit sync`` and prints its wall time and the largest waited-for process's peak RSS (KiB).
_TIMED = """
import resource, subprocess, sys, time
t0 = time.perf_counter()
done = subprocess.run(sys.argv[1:], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
wall = time.perf_counter() - t0
print(done.returncode, wall, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
sys.stdout.write(done.stdout[-4000:])
sys.stderr.write(done.stderr[-4000:])
"""


def write_servers(work: Path, tools: int, servers: int) -> dict[str, dict]:
    """Spec files for ``servers`` stdio servers sharing the first ``tools`` real tools; their config entries."""
    defs = load_tools(DEFAULT_DATA, tools)
    shares: list[list[dict]] = [[] for _ in range(servers)]
    for i, tool in enumerate(defs):
        # Names unique on their server, within MCP's tool-name alphabet: the original server's and its own.
        name = re.sub(r"[^A-Za-z0-9_.-]+", "_", f"{tool.server}_{tool.name}")[:100] + f"_{i}"
        shares[i % servers].append({"name": name, "description": tool.description,
                                    "inputSchema": tool.input_schema})
    entries = {}
    for s, share in enumerate(shares):
        spec = work / f"server{s:03d}.json"
        spec.write_text(json.dumps({"tools": share}), encoding="utf-8")
        entries[f"server{s:03d}"] = {"command": sys.executable, "timeout": 120,
                                     "args": [str(SERVER), "--spec", str(spec), "--calls",
                                              str(work / f"server{s:03d}.calls.jsonl"), "--name", f"server{s:03d}"]}
    return entries


def run_sync(config: Path, env: dict[str, str]) -> dict:
    jit = Path(sys.executable).with_name("jit")
    out = subprocess.run([sys.executable, "-c", _TIMED, str(jit), "sync", "--json", "-q", "--config", str(config)],
                         capture_output=True, text=True, env=env, timeout=3600)
    first, _, rest = out.stdout.partition("\n")
    code, wall, rss_kib = first.split()
    if int(code) != 0:
        raise SystemExit(f"jit sync exited {code}:\n{rest}\n{out.stderr}")
    return {"wall_s": round(float(wall), 2), "peak_rss_mb": round(int(rss_kib) / 1024, 1)}


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tools", type=int, default=10_000)
    ap.add_argument("--servers", type=int, default=40)
    ap.add_argument("--bulk-runtime", nargs="+", choices=["auto", "off"], default=["auto", "off"])
    ap.add_argument("--repeat", type=int, default=2, help="first syncs per setting (each into a new catalog)")
    args = ap.parse_args(argv)
    env = {k: v for k, v in os.environ.items() if k not in ("ANTHROPIC_API_KEY", "JIT_CONFIG")}
    env.setdefault("HF_HUB_OFFLINE", "1")
    result: dict = {"tools": args.tools, "servers": args.servers, "load_before": os.getloadavg(), "settings": {}}
    with tempfile.TemporaryDirectory(prefix="jit-bench-sync-") as tmp:
        work = Path(tmp)
        entries = write_servers(work, args.tools, args.servers)
        runs: dict[str, list[dict]] = {mode: [] for mode in args.bulk_runtime}
        for r in range(args.repeat):
            for mode in args.bulk_runtime:  # settings alternate, so the machine's load weighs on both alike
                catalog = work / f"catalog-{mode}-{r}.db"
                config = work / f"config-{mode}-{r}.json"
                config.write_text(json.dumps({"servers": entries, "store": str(catalog),
                                              "embedding": {"bulk_runtime": mode}}), encoding="utf-8")
                first = run_sync(config, env)
                again = run_sync(config, env)
                runs[mode].append({"first_sync": first, "resync": again})
                print(f"{mode}: first sync {first['wall_s']} s, re-sync {again['wall_s']} s", file=sys.stderr)
        for mode, done in runs.items():
            walls = [d["first_sync"]["wall_s"] for d in done]
            wall = statistics.median(walls)
            result["settings"][mode] = {
                "first_sync_s": wall,
                "first_sync_tools_per_s": round(args.tools / wall, 1),
                "runs_first_sync_s": walls,
                "first_sync_peak_rss_mb": max(d["first_sync"]["peak_rss_mb"] for d in done),
                "resync_s": statistics.median(d["resync"]["wall_s"] for d in done),
            }
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "sync.json").write_text(json.dumps(result, indent=2))
    print(json.dumps(result, indent=2))
    return result


if __name__ == "__main__":
    main()
