"""What learning from calls costs: recording a call, and compile() at 10,000 tools with 100,000 recorded calls.

    python -m bench.bench_learning [--tools 10000] [--calls 100000] [--queries 40]

The catalog is the first ``--tools`` toucan_smithery tools, analyzed offline, with random unit
vectors (embedding 10k tools takes too long here; the compile's cost does not depend on what
the vectors say). The learning record is ``--calls`` successful calls over ``--calls / 4``
recorded tasks of the coder shard (four tools each), whose vectors are the LiveMCPBench
queries' plus noise, so a new task finds neighbours. Timed, model warm, each task new to the
compiler (end to end: the task's embedding included): compile() p50/p95 for the coder shard with nothing
recorded and with the record (two copies of the catalog, their compiles alternating task by task;
``learned`` share: ``Experience.evidence`` alone), and right after a call was recorded (only
what the call changed read from the catalog), and the first read of the whole record (a
compiler's first compile of the shard); and ``ToolSet.record_call`` (one call
written to the SQLite catalog, its own transaction) p50/p95. Built under .jit/bench/,
written to bench/results/learning.json.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import time
from pathlib import Path

import numpy as np

from jit.analysis.analyze import analyze_pending
from jit.analysis.offline_analyzer import OfflineAnalyzer
from jit.catalog.store import Store
from jit.catalog.store_learning import TaskRecord
from jit.config import Config
from jit.embedding.factory import embedder_from_config
from jit.evaluation.datasets import DATASETS, default_data_dir, load_pool, load_queries
from jit.evaluation.replay import forget_all
from jit.models import ServerStatus
from jit.process import tuned
from jit.selection.compiler import Compiler
from jit.selection.learning import Experience
from jit.selection.task import TaskContext

RESULTS = Path(__file__).parent / "results"
CACHE = Path(".jit/bench")


def catalog(n: int, dim: int, model: str) -> Store:
    store = Store(CACHE / f"learning_{n}.db")
    if store.tool_count() != n:
        tools = load_pool([default_data_dir() / "toucan_smithery" / "tools.jsonl"]).tools[:n]
        store.sync_catalog(tools, status=ServerStatus.CONNECTED)
        store.set_embedding_model(model, dim)
        rng = np.random.default_rng(0)
        rows = []
        for st in store.tools():
            v = rng.normal(size=dim).astype(np.float32)
            rows.append((st.id, f"random-{st.id}", (v / np.linalg.norm(v)).tobytes()))
        store.put_vectors(model, rows, cache=False)
        analyze_pending(store, OfflineAnalyzer(Config.default().shards))
    return store


def copy(store: Store, path: Path) -> Store:
    """A copy of ``store``'s catalog at ``path`` (the learning record goes there)."""
    path.unlink(missing_ok=True)
    store._query("VACUUM INTO ?", (str(path),))
    return Store(path)


def record(store: Store, calls: int, queries: np.ndarray, model: str) -> float:
    """``calls`` successful calls over ``calls // 4`` tasks; seconds taken (one transaction per task)."""
    forget_all(store)
    heads = store.tool_heads()
    rng = np.random.default_rng(1)
    t = time.perf_counter()
    tasks = calls // 4
    with store.transaction():
        for i in range(tasks):
            v = queries[i % len(queries)] + rng.normal(0, 0.02, size=queries.shape[1]).astype(np.float32)
            task = TaskRecord("coder", model, (v / np.linalg.norm(v)).astype(np.float32))
            for k in rng.choice(len(heads), size=4, replace=False).tolist():
                store.record_task_call(task, *heads[k], ok=True)
    return time.perf_counter() - t


def p(values: list[float], q: float) -> float:
    return float(np.percentile(values, q))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tools", type=int, default=10_000)
    ap.add_argument("--calls", type=int, default=100_000)
    ap.add_argument("--queries", type=int, default=40)
    args = ap.parse_args()
    config = Config.default()
    embedder = embedder_from_config(config.embedding)
    store = catalog(args.tools, embedder.dimension, embedder.model_name)
    spec = DATASETS["livemcpbench"]
    pool = load_pool([default_data_dir() / f for f in spec.tools])
    texts = [q.text for q in load_queries(default_data_dir() / spec.queries, pool)[0]]
    random.Random(0).shuffle(texts)
    vectors = embedder.embed(texts)
    out: dict[str, object] = {"tools": args.tools, "calls": args.calls, "tasks": args.calls // 4}
    forget_all(store)
    recorded = copy(store, CACHE / f"learning_{args.tools}_recorded.db")
    out["record_seconds"] = record(recorded, args.calls, vectors, embedder.model_name)
    # A compiler's first compile of the shard reads the whole record into memory.
    t = time.perf_counter()
    Experience(recorded, config.learning).evidence("coder", embedder.model_name, vectors[0], 45)
    out["first_read_ms"] = 1000 * (time.perf_counter() - t)
    print("first read of the record", out["first_read_ms"])
    # The two catalogs' compiles alternate, task by task, so that what else runs on the machine
    # weighs on both alike; each compiler embeds each task itself (its own query cache).
    times: dict[str, list[float]] = {"nothing recorded": [], "recorded": []}
    learned: list[float] = []
    with Compiler(store, config, embedder) as bare, Compiler(recorded, config, embedder) as c:
        for compiler in (bare, c):
            compiler.compile(TaskContext(shard="coder", task="warm up the compiler"))
        for i, text in enumerate(texts[: args.queries]):
            pair = (("nothing recorded", bare), ("recorded", c))
            for label, compiler in pair if i % 2 else pair[::-1]:
                t = time.perf_counter()
                compiler.compile(TaskContext(shard="coder", task=text))
                times[label].append(1000 * (time.perf_counter() - t))
            assert c.experience is not None
            q = c._query_vectors([text])[0]
            t = time.perf_counter()
            c.experience.evidence("coder", embedder.model_name, q, 45)
            learned.append(1000 * (time.perf_counter() - t))
    for label, values in times.items():
        out[label] = {"compile_p50_ms": statistics.median(values), "compile_p95_ms": p(values, 95),
                      **({"evidence_p50_ms": statistics.median(learned)} if label == "recorded" else {})}
        print(label, out[label])
    store.close()
    store = recorded
    # Recording one call, as a harness or jit serve does after each call: its own transaction.
    with Compiler(store, config, embedder) as c:
        ts = c.compile(TaskContext(shard="coder", task=texts[0]))
        name = next(s.name for s in ts.tools)
        ms = []
        for _ in range(200):
            t = time.perf_counter()
            ts.record_call(name, ok=True)
            ms.append(1000 * (time.perf_counter() - t))
        out["record_call_p50_ms"], out["record_call_p95_ms"] = statistics.median(ms), p(ms, 95)
        print("record_call", out["record_call_p50_ms"], out["record_call_p95_ms"])
        # A compile right after a call was recorded: what the call changed is read.
        after = []
        for text in texts[1:11]:
            ts.record_call(name, ok=True)
            t = time.perf_counter()
            c.compile(TaskContext(shard="coder", task=text))
            after.append(1000 * (time.perf_counter() - t))
        out["compile_after_a_recorded_call_p50_ms"] = statistics.median(after)
        print("compile after a recorded call", out["compile_after_a_recorded_call_p50_ms"])
    store.close()
    (CACHE / f"learning_{args.tools}_recorded.db").unlink()
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "learning.json").write_text(json.dumps(out, indent=1))


if __name__ == "__main__":
    with tuned():
        main()
