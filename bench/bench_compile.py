"""compile() latency at 1,000 / 10,000 / 100,000 tools, model warm.

    python -m bench.bench_compile [--sizes 1000 10000 100000] [--queries 40] [--repeat 3]

Catalogs are built once under .jit/bench/ and reused. 1k and 10k are real tools
from toucan_smithery (embedded with MiniLM and analyzed offline). Embedding 100k
tools takes too long here, so the 100k catalog is the 10k real tools plus
synthetic copies: each copy gets a new server and name, its source's analysis,
and its source's vector plus Gaussian noise (sigma 0.05 per dimension, then
normalised), which keeps the score distributions realistic. Tasks are
LiveMCPBench queries (multi-step, ~30 words). Timed: compile() end to end,
including the query embedding (the whole task, as the default config embeds it; at 10k
also with ``tool_selection.task_vectors: both``, task + clauses in one batch), for each shard in
turn, after one warm-up compile per shard (which builds the catalog view and
the per-shard tables, or loads them from a view file: ``first_compiles_view_file``
says whether one of this code's rules and config was there); also jit's own share (the time outside the embedder),
which is what the catalog size changes, also as the compiling thread's CPU time
(``p50_cpu_ms_without_embedding``: other processes' load moves it far less than wall
time, so it is the figure to compare two versions by on a busy machine). Every timed
task is new to the compiler;
separately, the same task compiled for the other shards (the harness pattern:
coder, tester, reviewer spawned for one task), which reuses the task's vectors;
and at 10k, the same compile right after a tool call (only usage changed) against
one with nothing changed, on a copy of the catalog.

A fresh process, as ``jit compile`` and a harness's first spawn see it: a new
Python process imports jit, opens the catalog and compiles one task (the
embedder of the default config: its runtime loads, in parallel with the catalog
view); timed inside it, from before ``import jit`` to the compiled tool set, and
split into imports, the first compile (catalog view + model + scoring), with the
process's peak RSS (a process holding the catalog view and the model), median of
``--repeat`` runs. Measured twice: with the retrieval index file another process
left next to the catalog (the usual case after the first compile), and without it
(the first process after a sync).
Each size is measured ``--repeat`` times with a fresh compiler (the 2-core VM's
speed drifts between runs by ±20 %); samples are pooled and each run's p50 kept.
Prints and writes bench/results/compile.json.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import tempfile
import time
from dataclasses import replace
from pathlib import Path

import numpy as np

from jit.analysis.analyze import analyze_pending
from jit.analysis.offline_analyzer import OfflineAnalyzer
from jit.catalog.embedding_pass import embed_pending
from jit.embedding.factory import embedder_from_config
from jit.catalog.store import Store
from jit.config import Config
from jit.evaluation.datasets import default_data_dir, load_pool
from jit.models import ServerStatus, ToolDef
from jit.process import tuned
from jit.selection.compiler import Compiler
from jit.selection.task import TaskContext
from jit.selection.tokens import EstimateCounter

RESULTS = Path(__file__).parent / "results"
CACHE = Path(".jit/bench")
SHARDS = ("coder", "researcher", "tester", "reviewer")


def load_tools(n: int) -> list[ToolDef]:
    return load_pool([default_data_dir() / "toucan_smithery" / "tools.jsonl"]).tools[:n]


def fill(store: Store, tools: list[ToolDef]) -> None:
    store.sync_catalog(tools, status=ServerStatus.CONNECTED)


def real_catalog(n: int, embedder) -> Store:
    store = Store(CACHE / f"real_{n}.db")
    t = time.perf_counter()
    if store.tool_count() != n:
        fill(store, load_tools(n))
    # Both passes only do what an interrupted earlier build left undone.
    embed_pending(store, embedder)
    analyze_pending(store, OfflineAnalyzer(Config.default().shards))
    print(f"{n} real tools ready in {time.perf_counter() - t:.0f} s")
    return store


def synthetic_catalog(n: int, base: Store, embedder) -> Store:
    store = Store(CACHE / f"synthetic_{n}.db")
    if store.tool_count() == n:
        return store
    t = time.perf_counter()
    src = base.tools()
    ids, matrix = base.vector_matrix()
    vec_of = dict(zip(ids.tolist(), matrix, strict=True))
    rng = np.random.default_rng(0)
    store.set_embedding_model(embedder.model_name, embedder.dimension)
    copies, k = [], 0
    while len(copies) < n:
        for st in src:
            if len(copies) == n:
                break
            server = st.tool.server if k == 0 else f"{st.tool.server[:50]}-c{k}"
            copies.append((ToolDef(server=server, name=st.tool.name, description=st.tool.description,
                                   input_schema=st.tool.input_schema), st))
        k += 1
    fill(store, [c for c, _ in copies])
    store.put_analyses((c.definition_hash, st.analysis) for c, st in copies if st.analysis is not None)
    by_key = {(t.tool.server, t.tool.name): t for t in store.tools()}
    rows = []
    for c, st in copies:
        v = vec_of[st.id] + rng.normal(0, 0.05, size=matrix.shape[1]).astype(np.float32)
        v /= np.linalg.norm(v)
        rows.append((by_key[(c.server, c.name)].id, f"synthetic-{c.server}-{c.name}", v.astype(np.float32).tobytes()))
    store.put_vectors(embedder.model_name, rows, cache=False)
    print(f"built {n} synthetic tools in {time.perf_counter() - t:.0f} s")
    return store


class TimedEmbedder:
    """The real embedder, timing each call: jit's own share of a compile is the rest."""

    def __init__(self, inner) -> None:
        self.inner = inner
        self.seconds = 0.0
        self.cpu_seconds = 0.0  # the calling thread's CPU time inside the embedder

    @property
    def model_name(self) -> str:
        return self.inner.model_name

    @property
    def dimension(self) -> int:
        return self.inner.dimension

    def embed(self, texts):
        t, c = time.perf_counter(), time.thread_time()
        try:
            return self.inner.embed(texts)
        finally:
            self.seconds += time.perf_counter() - t
            self.cpu_seconds += time.thread_time() - c


def measure(store: Store, embedder, tasks: list[str], *, task_vectors: str | None = None) -> dict[str, list[float]]:
    """One run with a fresh compiler, the default config's ``task_vectors`` unless one is given:
    samples in ms."""
    config = Config.default(Path.cwd())
    if task_vectors is not None:
        config = replace(config, tool_selection=config.tool_selection.model_copy(update={"task_vectors": task_vectors}))
    timed = TimedEmbedder(embedder)
    t = time.perf_counter()
    compiler = Compiler(store, config, timed, token_counter=EstimateCounter())
    # Without a view file of this code's rules and config (after a rules change) the first compile
    # builds the view from the catalog: at 100k that is most of ``first_compiles_s``.
    kept = compiler.catalog.view_file_kept
    for shard in SHARDS:
        compiler.compile(TaskContext(shard=shard, task=tasks[0]))
    warm = time.perf_counter() - t
    ms, own, own_cpu = [], [], []
    for i, task in enumerate(tasks):
        timed.seconds = timed.cpu_seconds = 0.0
        t, c = time.perf_counter(), time.thread_time()
        compiler.compile(TaskContext(shard=SHARDS[i % len(SHARDS)], task=task))
        ms.append(1000 * (time.perf_counter() - t))
        own.append(ms[-1] - 1000 * timed.seconds)
        own_cpu.append(1000 * (time.thread_time() - c - timed.cpu_seconds))
    # A harness spawns several shards for one task: the later ones reuse the task's vectors.
    same = []
    for i, task in enumerate(tasks[:10]):
        for shard in SHARDS:
            if shard == SHARDS[i % len(SHARDS)]:
                continue
            t = time.perf_counter()
            compiler.compile(TaskContext(shard=shard, task=task))
            same.append(1000 * (time.perf_counter() - t))
    emb = []
    for task in tasks[:20]:
        t = time.perf_counter()
        embedder.embed([task])
        emb.append(1000 * (time.perf_counter() - t))
    compiler.close()
    return {"warm": [warm], "view_file": [kept], "ms": ms, "own": own, "own_cpu": own_cpu, "same": same, "emb": emb}


def after_calls(path: Path, embedder, task: str, n: int = 20) -> dict:
    """The compile after a tool call (usage changes only) against one with nothing changed,
    on a copy of the catalog so the cached one keeps no usage."""
    with tempfile.TemporaryDirectory() as tmp:
        copy = Path(tmp) / path.name
        shutil.copy(path, copy)
        store = Store(copy)
        compiler = Compiler(store, Config.default(Path.cwd()), embedder, token_counter=EstimateCounter())
        ctx = TaskContext(shard="coder", task=task)
        compiler.compile(ctx)
        tools = store.tools()[:n]
        quiet, called = [], []
        for st in tools:
            t = time.perf_counter()
            compiler.compile(ctx)
            quiet.append(1000 * (time.perf_counter() - t))
            store.record_call(st.tool.server, st.tool.name, ok=True, latency_ms=1.0)
            t = time.perf_counter()
            compiler.compile(ctx)
            called.append(1000 * (time.perf_counter() - t))
        compiler.close()
        store.close()
    return {"p50_ms_nothing_changed": round(statistics.median(quiet), 1),
            "p50_ms_after_a_tool_call": round(statistics.median(called), 1)}


#: Run in a new interpreter: argv[1] the catalog, argv[2] the task. Prints its timings as JSON.
_FRESH = """
import time
t0 = time.perf_counter()
import json, sys
from pathlib import Path
from jit.catalog.store import Store
from jit.config import Config
from jit.embedding.factory import embedder_from_config
from jit.process import tuned
from jit.selection.compiler import Compiler
from jit.selection.task import TaskContext


def peak_rss_mb():
    # This process's own peak. Not ru_maxrss: Linux folds into it the peak of the address space
    # exec replaced, which for a child of subprocess (vfork) is the parent's: the benchmark's
    # parent holds the 100k catalog, so ru_maxrss reported its peak, not the child's.
    try:
        with open("/proc/self/status") as f:
            return next(int(line.split()[1]) for line in f if line.startswith("VmHWM:")) / 1024
    except (OSError, StopIteration):
        import resource
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


t1 = time.perf_counter()
with tuned():
    config = Config.default(Path.cwd())
    store = Store(sys.argv[1], migrate=False)
    with Compiler(store, config, embedder_from_config(config.embedding)) as compiler:
        ts = compiler.compile(TaskContext(shard="coder", task=sys.argv[2]))
t2 = time.perf_counter()
rss = peak_rss_mb()
print(json.dumps({"imports_s": t1 - t0, "first_compile_s": t2 - t1, "total_s": t2 - t0, "tools": len(ts.tools),
                  "peak_rss_mb": rss}))
"""


def fresh_process(path: Path, task: str, repeat: int) -> dict:
    """Medians of a new process's import + first compile, with and without the index file."""
    import subprocess
    import sys

    from jit.selection.indexcache import IndexCache

    # As `jit sync` leaves the catalog: the view file written with every shard's tables.
    config = Config.default(Path.cwd())
    with Store(path) as store, Compiler(store, config, embedder_from_config(config.embedding),
                                        token_counter=EstimateCounter()) as compiler:
        compiler.prepare()
    out: dict[str, dict] = {}
    for case in ("index_file_kept", "no_index_file"):
        runs = []
        for _ in range(repeat):
            index_dir = IndexCache(str(path)).directory
            if case == "no_index_file" and index_dir is not None:
                shutil.rmtree(index_dir, ignore_errors=True)
            done = subprocess.run([sys.executable, "-c", _FRESH, str(path), task], capture_output=True, text=True,
                                  check=True, env={**os.environ, "HF_HUB_OFFLINE": "1"})
            runs.append(json.loads(done.stdout.strip().splitlines()[-1]))
        out[case] = {k: round(statistics.median(r[k] for r in runs), 2)
                     for k in ("imports_s", "first_compile_s", "total_s", "peak_rss_mb")}
        out[case]["runs_total_s"] = [round(r["total_s"], 2) for r in runs]
    return out


#: Run in a new interpreter: argv[1] a copy of the catalog, argv[2:5] three tasks. A process
#: holding the catalog meets a sync another process ran (one tool rewritten and embedded again);
#: prints the next compile's time and this process's memory around it as JSON.
_AFTER_CHANGE = """
import json, subprocess, sys, time
from pathlib import Path
from jit.catalog.store import Store
from jit.config import Config
from jit.embedding.factory import embedder_from_config
from jit.process import tuned
from jit.selection.compiler import Compiler
from jit.selection.task import TaskContext


def rss_mb():
    with open("/proc/self/status") as f:
        fields = dict(line.split(":", 1) for line in f)
    return int(fields["VmRSS"].split()[0]) / 1024, int(fields["VmHWM"].split()[0]) / 1024


with tuned():
    config = Config.default(Path.cwd())
    store = Store(sys.argv[1], migrate=False)
    with Compiler(store, config, embedder_from_config(config.embedding)) as compiler:
        for task in sys.argv[2:4]:
            compiler.compile(TaskContext(shard="coder", task=task))
        holding = rss_mb()[0]
        subprocess.run([sys.executable, "-m", "bench.bench_compile", "--rewrite-one", sys.argv[1]], check=True)
        try:
            with open("/proc/self/clear_refs", "w") as f:
                f.write("5")  # the peak from here on
            reset = True
        except OSError:
            reset = False
        t = time.perf_counter()
        compiler.compile(TaskContext(shard="coder", task=sys.argv[4]))
        seconds = time.perf_counter() - t
        compiler.catalog.flush()  # the files for the next process, written meanwhile: their peak counts too
        written = time.perf_counter() - t
        rss, peak = rss_mb()
print(json.dumps({"compile_after_change_s": seconds, "files_written_s": written, "rss_holding_mb": holding,
                  "rss_after_mb": rss, "peak_rss_mb": peak, "peak_since_change": reset}))
"""


def rewrite_one(path: Path) -> None:
    """What another process's ``jit sync`` does when one server changed one tool's description:
    the server's tools synced again, the rewritten one embedded and analysed again."""
    config = Config.default(Path.cwd())
    with Store(path) as store:
        servers = sorted({server for server, _name in store.tool_heads()})
        server = servers[len(servers) // 2]
        tools = [st.tool for st in store.tools(server=server)]
        tools[0] = replace(tools[0], description=tools[0].description + " (revised: also reads archives)")
        store.sync_tools(server, tools)
        embed_pending(store, embedder_from_config(config.embedding))
        analyze_pending(store, OfflineAnalyzer(config.shards))


def after_change(path: Path, tasks: list[str], repeat: int) -> dict:
    """Medians of a compile right after another process changed one tool, in a process that held
    the catalog, each run on a fresh copy of it (with its view and index files)."""
    import subprocess
    import sys

    from jit.selection.indexcache import IndexCache

    runs = []
    for _ in range(repeat):
        with tempfile.TemporaryDirectory() as tmp:
            copy = Path(tmp) / path.name
            shutil.copy(path, copy)
            index_dir = IndexCache(str(path)).directory
            if index_dir is not None and index_dir.is_dir():
                shutil.copytree(index_dir, IndexCache(str(copy)).directory)
            done = subprocess.run([sys.executable, "-c", _AFTER_CHANGE, str(copy), *tasks[:3]], capture_output=True,
                                  text=True, check=True, env={**os.environ, "HF_HUB_OFFLINE": "1"})
            runs.append(json.loads(done.stdout.strip().splitlines()[-1]))
    out = {k: round(statistics.median(r[k] for r in runs), 2)
           for k in ("compile_after_change_s", "files_written_s", "rss_holding_mb", "rss_after_mb", "peak_rss_mb")}
    out["runs_s"] = [round(r["compile_after_change_s"], 2) for r in runs]
    out["peak_since_change"] = all(r["peak_since_change"] for r in runs)
    return out


def summarize(runs: list[dict[str, list[float]]], tools: int) -> dict:
    """Pooled over the runs (each run's p50 listed too: one run moves with the machine's state)."""
    pool = {k: [x for r in runs for x in r[k]] for k in runs[0]}
    ms, own, same = pool["ms"], pool["own"], pool["same"]
    return {"tools": tools, "first_compiles_s": round(statistics.median(pool["warm"]), 1),
            "first_compiles_view_file": pool["view_file"],
            "p50_ms": round(statistics.median(ms), 1), "p95_ms": round(float(np.percentile(ms, 95)), 1),
            "mean_ms": round(statistics.fmean(ms), 1),
            "p50_ms_without_embedding": round(statistics.median(own), 1),
            "p95_ms_without_embedding": round(float(np.percentile(own, 95)), 1),
            "p50_cpu_ms_without_embedding": round(statistics.median(pool["own_cpu"]), 1),
            "query_embedding_p50_ms": round(statistics.median(pool["emb"]), 1), "compiles": len(ms),
            "p50_ms_same_task_other_shard": round(statistics.median(same), 1),
            "p95_ms_same_task_other_shard": round(float(np.percentile(same, 95)), 1),
            "runs_p50_ms": [round(statistics.median(r["ms"]), 1) for r in runs]}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", type=int, nargs="+", default=[1000, 10000, 100000])
    ap.add_argument("--queries", type=int, default=40)
    ap.add_argument("--repeat", type=int, default=3, help="runs per size, each with a fresh compiler")
    ap.add_argument("--rewrite-one", type=Path, metavar="CATALOG", help=argparse.SUPPRESS)  # after_change's sync
    args = ap.parse_args()
    if args.rewrite_one:
        rewrite_one(args.rewrite_one)
        return
    CACHE.mkdir(parents=True, exist_ok=True)
    embedder = embedder_from_config(Config.default().embedding)
    embedder.embed(["warm up"])
    rows = [json.loads(line) for line in (default_data_dir() / "livemcpbench/queries.jsonl").open()]
    tasks = [r["query"] for r in rows][: args.queries]
    results = {"cpus": os.cpu_count(), "load_before": os.getloadavg()[0], "sizes": []}
    for n in sorted(args.sizes):
        if n <= 10000:
            store = real_catalog(n, embedder)
        else:
            store = synthetic_catalog(n, real_catalog(10000, embedder), embedder)
        runs, dense = [], []
        for _ in range(args.repeat):
            runs.append(measure(store, embedder, tasks))
            if n == 10000:
                # The alternative the config offers: every clause embedded too (runs alternate).
                dense.append(measure(store, embedder, tasks, task_vectors="both"))
        tools = store.tool_count()
        r = summarize(runs, tools)
        r["load_avg_1m"] = os.getloadavg()[0]
        if n == 10000:
            r["same_task"] = after_calls(CACHE / f"real_{n}.db", embedder, tasks[0])
        store.close()
        r["fresh_process"] = fresh_process(CACHE / (f"real_{n}.db" if n <= 10000 else f"synthetic_{n}.db"),
                                           tasks[1], args.repeat)
        r["after_change"] = after_change(CACHE / (f"real_{n}.db" if n <= 10000 else f"synthetic_{n}.db"),
                                         tasks[2:5], args.repeat)
        if dense:
            d = summarize(dense, tools)
            r["task_vectors_both"] = {k: d[k] for k in ("p50_ms", "p95_ms", "p50_ms_without_embedding", "runs_p50_ms")}
        results["sizes"].append(r)
        print(json.dumps(r), flush=True)
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "compile.json").write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    with tuned():  # the process's owner: snapshots frozen out of the GC, one BLAS thread (jit.process)
        main()
