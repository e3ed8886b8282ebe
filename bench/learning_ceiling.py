"""How far learning from calls could take a set: what the recorded tasks alone say of the held-out ones.

    JIT_DATA_DIR=... python -m bench.learning_ceiling SET [--sample N] [--mix]

The folds and shares are ``jit eval SET --replay``'s (jit.evaluation.replay.replay_folds: the
same held-out queries, the same recorded ones in the same order). Per share recorded, over the
held-out queries:

- ``seen``: the share of them a gold tool of which was called for a recorded query (no learner
  from this history can rank first a tool never called);
- ``centroid``: Hit@1 of the tool whose mean recorded query vector (its usage vector, undecayed,
  no count weighting, no per-server rule) is likest the query: what the usage vector says alone;
- ``knn5``: Hit@1 of the vote of the 5 likest recorded queries, each weighing its cosine;
- with ``--mix``: the best Hit@1 of the shard's ranking with nothing recorded (``Compiler.rank``,
  researcher, the 40 first) plus ``beta`` x a tool's usage likeness (x the number of its
  recorded queries over three while below one), over ``beta`` in a grid: a ceiling chosen on the
  held-out queries themselves, so no shipped mix can be expected to pass it; and ``full_bound``:
  the Full recall compile() would have if every gold tool called for a recorded query were put
  in Full beside what compile() puts there with nothing recorded.

The query vectors are the model's vectors of the query texts (compile() embeds the same text).
Writes bench/results/learning_ceiling-SET.json.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

from jit.analysis.offline_analyzer import OfflineAnalyzer
from jit.embedding.factory import embedder_from_config
from jit.evaluation.datasets import DATASETS, EvalQuery, default_data_dir, load_pool, load_queries
from jit.evaluation.evaluate import build_catalog, unscoped_config
from jit.evaluation.replay import CURVE, forget_all, replay_folds
from jit.selection.compiler import Compiler
from jit.selection.task import TaskContext
from jit.selection.tiers import Tier

RESULTS = Path(__file__).parent / "results"
BETAS = (0.1, 0.2, 0.3, 0.5, 1.0, 2.0)
SHARD = "researcher"


def _hit(q: EvalQuery, tool: int | None) -> float:
    return float(any(tool in g for g in q.groups))


def _baseline(compiler: Compiler, pool, queries: list[EvalQuery]) -> tuple[list[dict[int, float]], list[set[int]]]:
    """Per query, with nothing recorded: the shard ranking's 40 first (tool -> score 0..1) and the tools in Full."""
    ranked, full = [], []
    for q in queries:
        ranked.append({pool.index.get((st.tool.server, st.tool.name)): s
                       for st, s in compiler.rank(q.text, k=40, shard=SHARD)})
        ts = compiler.compile(TaskContext(shard=SHARD, task=q.text))
        full.append({pool.index.get((s.server, s.tool_name)) for s in ts.tools if s.tier is Tier.FULL})
    return ranked, full


def ceiling(queries: list[EvalQuery], vectors: np.ndarray, share: float, folds: int,
            base: tuple[list[dict[int, float]], list[set[int]]] | None) -> dict[str, float]:
    found: dict[str, list[float]] = {"seen": [], "centroid": [], "knn5": []}
    mixed: dict[float, list[float]] = {b: [] for b in BETAS}
    for train, test in replay_folds(len(queries), folds):
        train = train[: int(round(share * len(queries)))]
        if not train:
            continue
        used: dict[int, list[int]] = {}  # tool -> the recorded queries it was called for
        for i in train:
            for g in queries[i].groups:
                if g:
                    used.setdefault(g[0], []).append(i)
        tools = list(used)
        sums = np.stack([vectors[used[t]].sum(0) for t in tools])
        centroids = sums / np.linalg.norm(sums, axis=1, keepdims=True)
        count = np.minimum(1.0, np.array([len(used[t]) for t in tools]) / 3)
        for i in test:
            q = queries[i]
            found["seen"].append(float(any(_hit(q, t) for t in tools)))
            like = centroids @ vectors[i]
            found["centroid"].append(_hit(q, tools[int(np.argmax(like))]))
            sims = vectors[train] @ vectors[i]
            vote: dict[int, float] = {}
            for j in np.argsort(-sims)[:5]:
                for g in queries[train[j]].groups:
                    if g:
                        vote[g[0]] = vote.get(g[0], 0.0) + float(sims[j])
            found["knn5"].append(_hit(q, max(vote, key=vote.__getitem__)))
            if base is not None:
                ranked, full = base[0][i], base[1][i]
                floor = min(ranked.values(), default=0.0)
                evidence = dict(zip(tools, np.maximum(like, 0) * count, strict=True))
                for b in BETAS:
                    score = {t: ranked.get(t, floor) + b * evidence.get(t, 0.0) for t in {*ranked, *evidence}}
                    mixed[b].append(_hit(q, max(score, key=score.__getitem__)))
                found.setdefault("full_bound", []).append(
                    sum(any(m in full or m in used for m in g) for g in q.groups) / len(q.groups))
    out = {k: float(np.mean(v)) for k, v in found.items() if v}
    if base is not None and mixed[BETAS[0]]:
        out["mix"], out["mix_beta"] = max((float(np.mean(v)), b) for b, v in mixed.items())
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("dataset", choices=sorted(DATASETS))
    ap.add_argument("--sample", type=int, help="queries kept (the set's own sample by default)")
    ap.add_argument("--folds", type=int, default=4)
    ap.add_argument("--mix", action="store_true", help="also the shard ranking mixed with the usage likeness, "
                    "and the Full bound (compiles every query once)")
    args = ap.parse_args()
    spec, data = DATASETS[args.dataset], default_data_dir()
    pool = load_pool([data / f for f in spec.tools])
    queries = load_queries(data / spec.queries, pool, sample=args.sample if args.sample else spec.sample)[0]
    config = unscoped_config()
    embedder = embedder_from_config(config.embedding)
    vectors = np.asarray(embedder.embed([q.text for q in queries]), dtype=np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    base = None
    if args.mix:
        store = build_catalog(pool, config.store_path.parent / "eval" / f"{spec.name}.db", config, embedder,
                              analyzer=OfflineAnalyzer(config.shards))
        forget_all(store)
        with Compiler(store, config, embedder) as compiler:
            base = _baseline(compiler, pool, queries)
        store.close()
    rows = {f"{share:.2f}": ceiling(queries, vectors, share, args.folds, base) for share in CURVE if share}
    for share, row in rows.items():
        print(share, " ".join(f"{k} {v:.3f}" for k, v in row.items()))
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / f"learning_ceiling-{spec.name}.json").write_text(json.dumps(
        {"dataset": spec.name, "queries": len(queries), "folds": args.folds, "shares": rows}, indent=1) + "\n")


if __name__ == "__main__":
    main()
