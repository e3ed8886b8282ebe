"""Train the second stage of jit's retrieval (jit/selection/rerank.py) from bench/data/retriever_train.

Each training source (Seal-Tools, ToolAlpaca, BFCL) is made a catalog of its own tools, embedded
by jit's default model as ``jit eval`` builds one (:func:`jit.evaluation.evaluate.build_catalog`),
and each of its queries is ranked by jit's first stage
(:meth:`~jit.selection.retrieve.RetrievalIndex.score`, the config's defaults). The first stage's
``top`` best candidates of a query are rows of :data:`~jit.selection.rerank.FEATURES`, labelled 1
when the query needs the tool; the model is an L2-regularised logistic regression (Newton's
method, numpy) over them.

Its settings (``top`` and the L2 weight) are chosen by leaving one source out: for each setting
the model is trained on two sources and measured on the third (R@5 and Hit@1 of its queries
among its own tools, each needed tool a group of its own), and the setting with the best mean
R@5 over the three held-out sources is trained again on all three and written to
``--out`` (jit/selection/rerank.json by default). Nothing of LiveMCPBench, StableToolBench,
MetaTool, Toucan/Smithery or the steps and roles sets is read: the training data's overlap check
with them is bench/data/retriever_train/MANIFEST.md's. Deterministic: no randomness. ::

    python -m bench.train_reranker --work /tmp/jit-rerank    # 22 min on the shared 2 cores
"""

from __future__ import annotations

import argparse
import json
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from jit.embedding.factory import embedder_from_config
from jit.evaluation.datasets import Pool
from jit.evaluation.evaluate import build_catalog, unscoped_config
from jit.models import ToolDef
from jit.selection.compiler import Compiler, _queries
from jit.selection.rerank import FEATURES, WEIGHTS, Reranker, features

from .train_retriever import DATA, V1_SOURCES, read_rows

#: The sources the shipped second stage was trained and measured on (docs/quality.md).
SOURCES = V1_SOURCES
TOPS = (5, 10, 20)
L2S = (1.0, 100.0)


def tooldef(tool: dict[str, Any]) -> ToolDef:
    props = {p: {"type": "string", "description": d} for p, d in tool["params"].items()}
    return ToolDef(server=tool["server"], name=tool["name"], description=tool["description"],
                   input_schema={"type": "object", "properties": props})


@dataclass
class Ranked:
    """One query's first stage: its candidates' scores (as ``RetrievalIndex.score`` gives them),
    the index, and the index rows of the tools it needs."""

    scores: Any
    index: Any
    gold: frozenset[int]


def first_stage(source: str, tools: list[dict[str, Any]], pairs: list[dict[str, Any]], work: Path) -> list[Ranked]:
    """The first stage's ranking of each of ``source``'s queries among its tools."""
    config = unscoped_config()
    embedder = embedder_from_config(config.embedding)
    defs = [tooldef(t) for t in tools if t["source"] == source]
    key_of = {t["id"]: (t["server"], t["name"]) for t in tools if t["source"] == source}
    pool = Pool(defs, {(d.server, d.name): i for i, d in enumerate(defs)}, (source,))
    store = build_catalog(pool, work / f"{source}.db", config, embedder)
    compiler = Compiler(store, config, embedder)
    out = []
    try:
        view = compiler.catalog.snapshot()
        row_of = {view.heads[t]: r for r, t in enumerate(view.rows)}
        sel = config.tool_selection
        for p in pairs:
            if p["source"] != source:
                continue
            queries = _queries(p["query"])
            scores = view.index.score(compiler._query_vectors(queries), queries,
                                      lexical_weight=sel.lexical_weight, pool=sel.candidate_pool)
            out.append(Ranked(scores, view.index,
                              frozenset(row_of[key_of[t]] for t in p["tools"])))
    finally:
        compiler.close()
        store.close()
    return out


def first_order(r: Ranked) -> np.ndarray:
    return np.lexsort((r.scores.rows, -r.scores.vector))


def examples(ranked: list[Ranked], top: int) -> tuple[np.ndarray, np.ndarray]:
    xs, ys = [], []
    for r in ranked:
        first = first_order(r)[:top]
        xs.append(features(r.scores, first, r.index))
        ys.append(np.array([int(row) in r.gold for row in r.scores.rows[first].tolist()], dtype=np.float64))
    return np.vstack(xs).astype(np.float64), np.concatenate(ys)


def fit(x: np.ndarray, y: np.ndarray, l2: float, top: int) -> Reranker:
    """L2-regularised logistic regression by Newton's method on standardised features."""
    mean = x.mean(axis=0)
    scale = x.std(axis=0)
    scale[scale < 1e-6] = 1.0
    z = np.hstack([(x - mean) / scale, np.ones((len(x), 1))])
    w = np.zeros(z.shape[1])
    reg = np.full(z.shape[1], l2)
    reg[-1] = 0.0  # the bias is not shrunk
    for _ in range(50):
        p = 1 / (1 + np.exp(-(z @ w)))
        grad = z.T @ (p - y) + reg * w
        hess = (z * (p * (1 - p))[:, None]).T @ z + np.diag(reg) + 1e-9 * np.eye(len(w))
        step = np.linalg.solve(hess, grad)
        w -= step
        if np.abs(step).max() < 1e-8:
            break
    return Reranker(top, mean.astype(np.float32), scale.astype(np.float32), w[:-1].astype(np.float32),
                    float(w[-1]))


def measure(ranked: list[Ranked], model: Reranker | None) -> dict[str, float]:
    """R@5 (each needed tool a group), R@10 and Hit@1 of the queries, by the first stage alone
    (``model`` None) or reordered by ``model``."""
    r5 = r10 = hit = 0.0
    for r in ranked:
        scores = r.scores if model is None else model.apply(r.scores, r.index)
        order = r.scores.rows[np.lexsort((scores.rows, -scores.vector))].tolist()
        r5 += len(r.gold & set(order[:5])) / len(r.gold)
        r10 += len(r.gold & set(order[:10])) / len(r.gold)
        hit += bool(order) and order[0] in r.gold
    n = max(len(ranked), 1)
    return {"R@5": r5 / n, "R@10": r10 / n, "Hit@1": hit / n}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--work", type=Path, required=True, help="where the training catalogs are kept")
    parser.add_argument("--out", type=Path, default=WEIGHTS, help="the model file written")
    args = parser.parse_args(argv)
    args.work.mkdir(parents=True, exist_ok=True)
    tools = read_rows(DATA / "tools.jsonl.gz")
    pairs = read_rows(DATA / "pairs.jsonl.gz")
    ranked = {s: first_stage(s, tools, pairs, args.work) for s in SOURCES}
    report: dict[str, Any] = {"features": list(FEATURES), "first_stage": {s: measure(ranked[s], None) for s in SOURCES},
                              "held_out": defaultdict(dict)}
    for s in SOURCES:
        print(f"{s}: {len(ranked[s])} queries, first stage {report['first_stage'][s]}")
    best, best_r5 = None, -1.0
    for top in TOPS:
        data = {s: examples(ranked[s], top) for s in SOURCES}
        for l2 in L2S:
            got = {}
            for held in SOURCES:
                x = np.vstack([data[s][0] for s in SOURCES if s != held])
                y = np.concatenate([data[s][1] for s in SOURCES if s != held])
                got[held] = measure(ranked[held], fit(x, y, l2, top))
            mean_r5 = float(np.mean([g["R@5"] for g in got.values()]))
            report["held_out"][f"top={top} l2={l2}"] = got
            print(f"top={top} l2={l2}: mean held-out R@5 {mean_r5:.3f} " +
                  " ".join(f"{s} R@5 {g['R@5']:.3f} Hit@1 {g['Hit@1']:.3f}" for s, g in got.items()))
            if mean_r5 > best_r5:
                best, best_r5 = (top, l2), mean_r5
    assert best is not None
    top, l2 = best
    data = {s: examples(ranked[s], top) for s in SOURCES}
    model = fit(np.vstack([d[0] for d in data.values()]), np.concatenate([d[1] for d in data.values()]), l2, top)
    args.out.write_text(json.dumps({**model.to_json(), "l2": l2}, indent=1) + "\n")
    (args.work / "report.json").write_text(json.dumps(report, indent=1))
    print(f"chosen top={top} l2={l2} (mean held-out R@5 {best_r5:.3f}); weights "
          + ", ".join(f"{f} {w:+.2f}" for f, w in zip(FEATURES, model.weights.tolist(), strict=True))
          + f"; written to {args.out}")


if __name__ == "__main__":
    main()
