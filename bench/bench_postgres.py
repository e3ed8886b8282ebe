"""A host attached to a PostgreSQL catalog beside one on SQLite: compile latency and sync throughput.

    JIT_DATA_DIR=... python bench/bench_postgres.py [--sizes 10000 100000] [--queries 40] [--hosts 1 3]
        [--source-dir .jit/bench]

Needs PostgreSQL's server binaries (Debian: ``postgresql``); a throwaway cluster is
started from them (tests/pgcluster.py: unix socket, fsync off as in the tests, so the
sync numbers are an upper bound for a durable server) and removed at the end.

Catalogs: bench/bench_compile.py's (``real_10000.db``: 10k real tools embedded with
MiniLM and analyzed; ``synthetic_100000.db``: those plus noisy copies), read from
``--source-dir`` (copied first, never modified) and copied through the Store API into
a fresh PostgreSQL database: the same tools, analyses and vectors on both engines.

Timed per size and engine, with the model warm (its load is the same on both):

* **first compile on a host**: a new ``Store`` and ``Compiler`` with no local file of
  the catalog (no compiled view, no retrieval index: a host that just attached), one
  compile: reading every tool, analysis and vector out of the catalog dominates it;
* **steady compile p50** over ``--queries`` LiveMCPBench tasks, one compiler (the
  versions are read per compile, one round trip to the server on PostgreSQL).

Sync throughput: ``--hosts`` processes (1, then 3) at once, each syncing servers of its
own config (20 servers x 50 tools, every definition changed each round, 3 rounds), as
tool definitions written per second over all of them. Writers take turns on both
engines (SQLite's file lock, PostgreSQL's advisory lock), so this is the catalog's
write capacity; a real sync spends most of its time listing servers, analyzing and
embedding, which run outside the lock in each host.

Prints and writes bench/results/postgres.json.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests"))

from pgcluster import Cluster, find_bindir

from jit.catalog.store import Store
from jit.config import Config
from jit.embedding.factory import embedder_from_config
from jit.evaluation.datasets import default_data_dir
from jit.models import ServerStatus, ToolDef
from jit.process import tuned
from jit.selection.compiler import Compiler
from jit.selection.task import TaskContext
from jit.selection.tokens import EstimateCounter

RESULTS = Path(__file__).parent / "results"
SOURCES = {10_000: "real_10000.db", 100_000: "synthetic_100000.db"}
SHARDS = ("coder", "researcher", "tester", "reviewer")


def copy_catalog(src: Store, dst: Store) -> float:
    """Tools (all connected), analyses and vectors of ``src`` into the empty ``dst``; seconds taken."""
    t = time.perf_counter()
    tools = src.tools()
    dst.sync_catalog([st.tool for st in tools], status=ServerStatus.CONNECTED)
    dst.put_analyses((st.definition_hash, st.analysis) for st in tools if st.analysis is not None)
    model = src.embedding_model()
    assert model is not None
    dst.set_embedding_model(*model)
    ids, matrix = src.vector_matrix()
    key_of = {st.id: (st.tool.server, st.tool.name) for st in tools}
    new_id = {(st.tool.server, st.tool.name): st.id for st in dst.tools()}
    dst.put_vectors(model[0], ((new_id[key_of[i]], f"bench-{i}", matrix[k].tobytes())
                               for k, i in enumerate(ids.tolist())), cache=False)
    return time.perf_counter() - t


def compile_times(location: str, local: Path, embedder, tasks: list[str]) -> dict[str, float]:
    config = Config.default(local.parent)
    t = time.perf_counter()
    with Store(location, local_path=local, migrate=False) as store, \
            Compiler(store, config, embedder, token_counter=EstimateCounter()) as compiler:
        compiler.compile(TaskContext(shard="coder", task=tasks[0]))
        first = time.perf_counter() - t
        for shard in SHARDS[1:]:
            compiler.compile(TaskContext(shard=shard, task=tasks[0]))
        ms = []
        for i, task in enumerate(tasks[1:]):
            t = time.perf_counter()
            compiler.compile(TaskContext(shard=SHARDS[i % len(SHARDS)], task=task))
            ms.append(1000 * (time.perf_counter() - t))
    return {"first_compile_s": round(first, 2), "steady_p50_ms": round(statistics.median(ms), 1),
            "steady_p90_ms": round(sorted(ms)[int(0.9 * (len(ms) - 1))], 1)}


def _sync_host(location: str, host: int, servers: int, tools: int, rounds: int, start: float, out: object) -> None:
    with Store(location) as store:
        while time.time() < start:
            time.sleep(0.001)
        t = time.perf_counter()
        for r in range(rounds):
            for s in range(servers):
                name = f"h{host}-s{s}"
                store.ensure_server(name, "stdio", owner=f"/host{host}/config.json")
                store.sync_tools(name, [ToolDef(server=name, name=f"tool_{i}", description=f"round {r} of tool {i}",
                                                input_schema={"type": "object"}) for i in range(tools)])
            store.reconcile_owner(f"/host{host}/config.json", [f"h{host}-s{s}" for s in range(servers)])
        out.put((host, time.perf_counter() - t))  # type: ignore[attr-defined]


def sync_throughput(location: str, hosts: int, servers: int = 20, tools: int = 50, rounds: int = 3) -> dict:
    ctx = multiprocessing.get_context("spawn")
    queue = ctx.Queue()
    start = time.time() + 3.0  # every process imported and connected before the clock starts
    procs = [ctx.Process(target=_sync_host, args=(location, h, servers, tools, rounds, start, queue))
             for h in range(hosts)]
    for p in procs:
        p.start()
    took = [queue.get(timeout=1800)[1] for _ in procs]
    for p in procs:
        p.join()
    written = hosts * servers * tools * rounds
    wall = max(took)
    return {"hosts": hosts, "definitions_written": written, "wall_s": round(wall, 2),
            "definitions_per_s": round(written / wall)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    ap.add_argument("--queries", type=int, default=40)
    ap.add_argument("--hosts", type=int, nargs="*", default=[1, 3])
    ap.add_argument("--source-dir", type=Path, default=Path(".jit/bench"))
    args = ap.parse_args()
    bindir = find_bindir()
    if bindir is None:
        raise SystemExit("PostgreSQL's server binaries are absent (Debian: apt-get install postgresql)")
    rows = [json.loads(line) for line in (default_data_dir() / "livemcpbench/queries.jsonl").open()]
    tasks = [r["query"] for r in rows][: args.queries + 1]
    cluster = Cluster(bindir).start()
    work = Path(tempfile.mkdtemp(prefix="jit-bench-pg-"))
    results: dict = {"load_average": os.getloadavg(), "postgres_bin": str(bindir), "sizes": {}, "sync": []}
    try:
        with tuned():
            embedder = embedder_from_config(Config.default(work).embedding)
            embedder.embed(["warm up"])
            for n in args.sizes:
                source = args.source_dir / SOURCES[n]
                if not source.exists():
                    print(f"{n}: {source} is absent (bench/bench_compile.py builds it); skipped")
                    continue
                sqlite_copy = work / f"{n}.db"
                shutil.copy(source, sqlite_copy)
                url = cluster.new_database(f"bench{n}")
                with Store(sqlite_copy) as src, Store(url) as dst:
                    copied = copy_catalog(src, dst)
                row: dict = {"copy_into_postgres_s": round(copied, 1)}
                for engine, location in (("sqlite", str(sqlite_copy)), ("postgresql", url)):
                    local = work / f"host-{engine}-{n}" / "catalog"  # no view or index file: a new host
                    local.parent.mkdir()
                    # SQLite's files live beside the copy, which has none yet: a new host too.
                    row[engine] = compile_times(location, local, embedder, tasks)
                    print(f"{n} {engine}: {row[engine]}", flush=True)
                results["sizes"][n] = row
        for hosts in args.hosts:
            for engine in ("sqlite", "postgresql"):
                location = str(work / f"sync-{hosts}.db") if engine == "sqlite" else cluster.new_database("sync")
                Store(location).close()  # migrated before the hosts race to it
                r = {"engine": engine, **sync_throughput(location, hosts)}
                print(r, flush=True)
                results["sync"].append(r)
    finally:
        cluster.stop()
        shutil.rmtree(work, ignore_errors=True)
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "postgres.json").write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
