"""Catalog benchmark: store and embed 10,000 real tools, then query.

Reports store throughput (sync_tools), embedding throughput (MiniLM, CPU, on the
runtime ``embedding.runtime`` chooses: ONNX by default, ``--runtime torch`` for
sentence-transformers),
re-sync of the unchanged catalog (must embed nothing), one short and one ~30-word query's embedding,
vec0 KNN and in-memory
matrix-scan latency, and peak RSS. Writes bench/results/store.json.

The compiler ranks by scanning the vector matrix in memory (jit/selection/retrieve.py); the
vec0 KNN query is measured beside it, on its own connection, as the alternative
that scan was chosen over.

    python -m bench.bench_store [--tools 10000] [--runtime auto|onnx|torch] [--precision fp32|int8]
        [--bulk-runtime auto|off] [--data ../shared/data/toucan_smithery/tools.jsonl]

The embedding pass of the sync is timed whole, the bulk model's load included (``bulk``: what
embedded it, ``openvino-bf16`` or null for the query runtime; jit/embedding/openvino_bulk.py).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import tempfile
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import numpy as np  # noqa: E402
import pysqlite3.dbapi2 as sqlite3  # noqa: E402
import sqlite_vec  # noqa: E402

from jit.catalog.embedding_pass import embed_pending  # noqa: E402
from jit.catalog.store import Store  # noqa: E402
from jit.config import EmbeddingConfig  # noqa: E402
from jit.embedding.factory import embedder_from_config  # noqa: E402
from jit.evaluation.datasets import load_pool  # noqa: E402
from jit.models import ToolDef  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
DEFAULT_DATA = REPO.parent / "shared" / "data" / "toucan_smithery" / "tools.jsonl"
RESULTS = REPO / "bench" / "results"

#: A ~30-word task (LiveMCPBench's tasks are 20–40 words); ``{}`` makes each one new.
LONG_TASK = ("Generate a well-formatted PDF report titled report_{}.pdf in /root/pdf, summarizing the current "
             "reading trends from the ranking site, including a word cloud chart and a table of the top ten titles.")


def load_tools(path: Path, limit: int) -> list[ToolDef]:
    """The first ``limit`` tools of a tools.jsonl, one per (server, name)."""
    return load_pool([path]).tools[:limit]


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def sync_all(store: Store, tools: list[ToolDef]) -> int:
    """Sync every server's tools; returns how many tools were added."""
    return sum(len(r.added) for r in store.sync_catalog(tools).values())


def vec0_knn(conn: sqlite3.Connection, vector: np.ndarray, k: int) -> list[tuple[int, float]]:
    """``(tool_id, cosine distance)`` of the ``k`` nearest tools by a vec0 KNN query."""
    rows = conn.execute(
        "SELECT tool_id, distance FROM tool_vectors WHERE embedding MATCH ? AND k = ? ORDER BY distance",
        (np.asarray(vector, dtype=np.float32).tobytes(), int(k)),
    ).fetchall()
    return [(r[0], float(r[1])) for r in rows]


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tools", type=int, default=10_000)
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA)
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--runtime", choices=["auto", "onnx", "torch"], default="auto",
                    help="embedding.runtime (the ONNX export, if not cached yet, is counted in model_load_s)")
    ap.add_argument("--precision", choices=["fp32", "int8"], default="fp32",
                    help="embedding.precision (int8: the quantized ONNX model, its own vectors)")
    ap.add_argument("--bulk-runtime", choices=["auto", "off"], default="auto",
                    help="embedding.bulk_runtime (off: the sync's new tools on the query runtime)")
    args = ap.parse_args(argv)

    catalog = load_tools(args.data, args.tools)
    n_tools = len(catalog)
    embedder = embedder_from_config(EmbeddingConfig(runtime=args.runtime, precision=args.precision,
                                                   bulk_runtime=args.bulk_runtime))
    t0 = time.perf_counter()
    embedder.embed(["warm up"])
    load_s = time.perf_counter() - t0

    with tempfile.TemporaryDirectory() as tmp, Store(Path(tmp) / "bench.db") as store:
        t0 = time.perf_counter()
        sync_all(store, catalog)
        store_s = time.perf_counter() - t0

        t0 = time.perf_counter()
        report = embed_pending(store, embedder)
        embed_s = time.perf_counter() - t0
        bulk = getattr(embedder, "last_bulk", None)

        t0 = time.perf_counter()
        resync_added = sync_all(store, catalog)
        again = embed_pending(store, embedder)
        resync_s = time.perf_counter() - t0

        query_ms = []
        for i in range(220):  # one short task per call, as a compile embeds it; the first 20 warm up
            t0 = time.perf_counter()
            embedder.embed([f"fix the flaky parser test number {i} and open an issue about it"])
            query_ms.append((time.perf_counter() - t0) * 1000)
        query_ms = query_ms[20:]
        long_ms = []
        for i in range(220):  # a task of ~30 words, as LiveMCPBench's are
            t0 = time.perf_counter()
            embedder.embed([LONG_TASK.format(i)])
            long_ms.append((time.perf_counter() - t0) * 1000)
        long_ms = long_ms[20:]

        rng = np.random.default_rng(0)
        _, matrix = store.vector_matrix()
        queries = matrix[rng.choice(len(matrix), size=min(args.queries, len(matrix)), replace=False)]
        knn_ms, scan_ms = [], []
        reader = sqlite3.connect(store.path)
        reader.enable_load_extension(True)
        sqlite_vec.load(reader)
        for q in queries:
            t0 = time.perf_counter()
            vec0_knn(reader, q, 20)
            knn_ms.append((time.perf_counter() - t0) * 1000)
            t0 = time.perf_counter()
            scores = matrix @ q
            np.argpartition(-scores, 20)[:20]
            scan_ms.append((time.perf_counter() - t0) * 1000)
        reader.close()
        db_mb = Path(store.path).stat().st_size / 1e6

    result = {
        "tools": n_tools,
        "servers": len({t.server for t in catalog}),
        "runtime": getattr(embedder, "runtime", None) or "torch",
        "precision": args.precision,
        "bulk": bulk,
        "model": embedder.model_name,
        "model_load_s": round(load_s, 2),
        "store_tools_per_s": round(n_tools / store_s, 1),
        "embed_tools_per_s": round(report.embedded / embed_s, 1),
        "store_and_embed_tools_per_s": round(n_tools / (store_s + embed_s), 1),
        "resync_unchanged_s": round(resync_s, 3),
        "query_embed_p50_ms": round(statistics.median(query_ms), 2),
        "query_embed_long_p50_ms": round(statistics.median(long_ms), 2),
        "resync_reembedded": again.embedded,
        "resync_rewritten": resync_added,
        "knn_vec0_p50_ms": round(statistics.median(knn_ms), 2),
        "knn_vec0_p95_ms": round(float(np.percentile(knn_ms, 95)), 2),
        "matrix_scan_p50_ms": round(statistics.median(scan_ms), 3),
        "db_size_mb": round(db_mb, 1),
        "peak_rss_mb": round(peak_rss_mb(), 1),
    }
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "store.json").write_text(json.dumps(result, indent=2))
    for k, v in result.items():
        print(f"{k:>28}: {v}")
    return result


if __name__ == "__main__":
    main()
