"""Quick selection-quality check of compile() while tuning (the full report is jit.evaluation.evaluate).

    python -m bench.quality_quick [livemcpbench|stabletoolbench|livemcpbench+toucan] [--shard S] [--sample N]

Builds (or reuses) the catalog under .jit/eval/, analyzes it with the offline
analyzer, and prints, per shard: gold groups recalled in Full, Full+Condensed
and any tier, with the tokens of the rendering, next to BM25 top-10 and dense
(MiniLM) top-10 over the same pool. Writes bench/results/quality_<dataset>.json.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

import numpy as np

from jit.analysis.offline_analyzer import OfflineAnalyzer
from jit.embedding.factory import embedder_from_config
from jit.config import Config
from jit.evaluation.datasets import DATASETS, default_data_dir, load_pool, load_queries
from jit.evaluation.evaluate import build_catalog
from jit.process import tuned
from jit.selection.compiler import Compiler
from jit.selection.retrieve import LexicalIndex
from jit.selection.task import TaskContext
from jit.selection.tiers import Tier

RESULTS = Path(__file__).parent / "results"


def group_recall(selected: set[int], groups) -> float:
    return sum(1 for g in groups if any(m in selected for m in g)) / len(groups)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("dataset", nargs="?", default="livemcpbench", choices=sorted(DATASETS))
    ap.add_argument("--shard", action="append", dest="shards")
    ap.add_argument("--sample", type=int)
    ap.add_argument("--budget", type=int)
    args = ap.parse_args()
    spec = DATASETS[args.dataset]
    data = default_data_dir()
    pool = load_pool([data / p for p in spec.tools])
    queries, _skipped, _kind = load_queries(data / spec.queries, pool, sample=args.sample or spec.sample)
    config = Config.default(Path(".jit/eval"))
    embedder = embedder_from_config(config.embedding)
    t0 = time.perf_counter()
    store = build_catalog(pool, Path(".jit/eval") / f"{args.dataset}.db", config, embedder,
                          analyzer=OfflineAnalyzer(config.shards))
    print(f"catalog ready in {time.perf_counter() - t0:.1f} s: {store.tool_count()} tools, {len(queries)} queries")
    key_of = {(t.tool.server, t.tool.name): pool.index.get((t.tool.server, t.tool.name)) for t in store.tools()}
    # Baselines on the same pool: BM25 and dense top-10 over name + description (+ parameters).
    texts = [f"{t.server} {t.name} {t.description} {' '.join((t.input_schema.get('properties') or {}).keys())}"
             for t in pool.tools]
    bm25 = LexicalIndex(texts)
    ids, matrix = store.vector_matrix()
    by_id = store.tools_by_id(ids.tolist())
    dense_rows = np.array([pool.index[(by_id[i].tool.server, by_id[i].tool.name)] for i in ids.tolist()])
    qvecs = embedder.embed([q.text for q in queries])
    base = {"bm25@10": [], "dense@10": []}
    for q, v in zip(queries, qvecs, strict=True):
        top = np.argsort(-bm25.scores(q.text), kind="stable")[:10]
        base["bm25@10"].append(group_recall(set(top.tolist()), q.groups))
        sims = matrix @ v
        base["dense@10"].append(group_recall(set(dense_rows[np.argsort(-sims)[:10]].tolist()), q.groups))
    out: dict = {"dataset": args.dataset, "queries": len(queries),
                 "baselines": {k: statistics.fmean(v) for k, v in base.items()}}
    print("  ".join(f"{k} {statistics.fmean(v):.3f}" for k, v in base.items()))
    with Compiler(store, config, embedder) as compiler:
        for shard in args.shards or ["researcher"]:
            res = {"full": [], "full+condensed": [], "any": [], "tokens": [], "ms": [], "n_full": [], "n_cond": []}
            for q in queries:
                t = time.perf_counter()
                ts = compiler.compile(TaskContext(shard=shard, task=q.text, budget=args.budget))
                res["ms"].append(1000 * (time.perf_counter() - t))
                tiers = {}
                for s in ts.tools:
                    idx = key_of.get((s.server, s.tool_name))
                    if idx is not None:
                        tiers[idx] = s.tier
                res["full"].append(group_recall({i for i, x in tiers.items() if x is Tier.FULL}, q.groups))
                res["full+condensed"].append(group_recall(
                    {i for i, x in tiers.items() if x in (Tier.FULL, Tier.CONDENSED)}, q.groups))
                res["any"].append(group_recall({i for i, x in tiers.items() if x is not Tier.EXCLUDED}, q.groups))
                res["tokens"].append(ts.tokens_used)
                res["n_full"].append(len(ts.tier(Tier.FULL)))
                res["n_cond"].append(len(ts.tier(Tier.CONDENSED)))
            summary = {k: statistics.fmean(v) for k, v in res.items() if k != "ms"}
            summary["p50_ms"] = statistics.median(res["ms"])
            out[shard] = summary
            print(f"{shard}: " + "  ".join(f"{k} {v:.3f}" if v < 10 else f"{k} {v:.0f}" for k, v in summary.items()))
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / f"quality_{args.dataset}.json").write_text(json.dumps(out, indent=2))
    store.close()


if __name__ == "__main__":
    with tuned():  # the process's owner: snapshots frozen out of the GC, one BLAS thread (jit.process)
        main()
