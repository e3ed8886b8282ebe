"""Hostile tool text from the tool's own vector: measure a linear classifier over the embedding jit stores.

    HF_HUB_OFFLINE=1 python -m bench.tool_vector_classifier [--shared ../shared/data] [--cache vecs.npz]
        [--held blind10 blind9 blind7] [--fp 0.002 0.003 0.005] [--json out.json]

Every synced tool is embedded anyway (``ToolDef.embedding_text``: server, name, title,
description, parameter names), so a classifier over that vector would cost one dot
product per tool: no extra embedding, unlike the sentence classifier of
``bench.train_injection_classifier``. This measures whether it is worth shipping. It was
measured and NOT integrated (numbers in docs/reliability.md).

Protocol (deterministic: same corpus, pools and model, same numbers):

* hostile: the corpus rows (``tests/data/injection/hostile.jsonl``) of every split but the
  held-out one and ``blind10`` (never used for training, so the blind10 row is first sight
  for the classifier and for the phrase and intent rules alike). The corpus's made-up
  ``acme-tools`` server is replaced by a pool server name drawn at random (seeded), so the
  model cannot learn the corpus's server name;
* benign: every second deduplicated pool tool that is not in ``benign.jsonl``; the other half
  and ``benign.jsonl`` are held out for false positives; ``hard_benign.jsonl`` (benign text
  written to look hostile) is held out too;
* a class-weighted logistic regression (C = 10); the threshold is set on out-of-fold (5
  folds) scores of the training benign tools for each false-positive rate asked for;
* reported per held-out split and rate: the classifier alone, the shipped rules
  (``detect_hostile``) alone, either of them; false positives of "either" on the held-out
  pool half, on ``benign.jsonl`` and on ``hard_benign.jsonl``.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

from bench.injection_corpus import CORPUS, load_jsonl, pool_rows, tool_of
from jit.injection.detect import detect_hostile
from jit.evaluation.datasets import default_data_dir

SEED = 0
C = 10.0


def _vectors(texts: list[str]) -> np.ndarray:
    from jit.config import EmbeddingConfig
    from jit.embedding.factory import embedder_from_config

    return embedder_from_config(EmbeddingConfig()).embed(texts)


def _texts(hostile: list[dict], pool: list[dict], hard: list[dict]) -> tuple[list[str], list[str], list[str]]:
    rng = np.random.default_rng(SEED)
    servers = sorted({r["server"] for r in pool})
    h = []
    for r in hostile:
        if r["server"] == "acme-tools":
            r = {**r, "server": servers[int(rng.integers(len(servers)))]}
        h.append(tool_of(r).embedding_text())
    return h, [tool_of(r).embedding_text() for r in pool], [tool_of(r).embedding_text() for r in hard]


def _flags(rows: list[dict]) -> np.ndarray:
    return np.fromiter((bool(detect_hostile(tool_of(r))) for r in rows), dtype=bool, count=len(rows))


def main(argv: list[str] | None = None) -> int:
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import StratifiedKFold

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shared", type=Path, default=None, help="the shared data directory (pools)")
    ap.add_argument("--cache", type=Path, default=None, help="keep the vectors here between runs (.npz)")
    ap.add_argument("--held", nargs="+", default=["blind10", "blind9", "blind7"])
    ap.add_argument("--fp", nargs="+", type=float, default=[0.002, 0.003, 0.005])
    ap.add_argument("--json", type=Path, default=None)
    args = ap.parse_args(argv)

    hostile = load_jsonl(CORPUS / "hostile.jsonl")
    hard = load_jsonl(CORPUS / "hard_benign.jsonl")
    benign_sources = {r["source"] for r in load_jsonl(CORPUS / "benign.jsonl")}
    pool = pool_rows(args.shared or default_data_dir())
    if args.cache is not None and args.cache.exists():
        z = np.load(args.cache)
        hv, pv, bv = z["hostile"], z["pool"], z["hard"]
    else:
        ht, pt, bt = _texts(hostile, pool, hard)
        hv, pv, bv = _vectors(ht), _vectors(pt), _vectors(bt)
        if args.cache is not None:
            np.savez(args.cache, hostile=hv, pool=pv, hard=bv)

    splits = np.array([r["split"] for r in hostile])
    rules_h, rules_p, rules_b = _flags(hostile), _flags(pool), _flags(hard)
    in_benign = np.array([r["source"] in benign_sources for r in pool])
    train_pool = (np.arange(len(pool)) % 2 == 0) & ~in_benign
    test_pool = ~train_pool & ~in_benign

    results = []
    for held in args.held:
        train_h = (splits != held) & (splits != "blind10")
        x = np.vstack([hv[train_h], pv[train_pool]])
        y = np.r_[np.ones(int(train_h.sum())), np.zeros(int(train_pool.sum()))]
        oof = np.zeros(len(y))
        for a, b in StratifiedKFold(5, shuffle=True, random_state=SEED).split(x, y):
            fold = LogisticRegression(C=C, class_weight="balanced", max_iter=5000).fit(x[a], y[a])
            oof[b] = fold.decision_function(x[b])
        model = LogisticRegression(C=C, class_weight="balanced", max_iter=5000).fit(x, y)
        scores_h = model.decision_function(hv[splits == held])
        scores_p, scores_b = model.decision_function(pv), model.decision_function(bv)
        for rate in args.fp:
            threshold = float(np.quantile(oof[y == 0], 1 - rate))
            clf_h, clf_p, clf_b = scores_h > threshold, scores_p > threshold, scores_b > threshold
            rules = rules_h[splits == held]
            either_p = clf_p | rules_p
            row = {
                "held_out": held, "n": int(rules.size), "fp_target": rate,
                "caught_classifier": round(float(clf_h.mean()), 3), "caught_rules": round(float(rules.mean()), 3),
                "caught_either": round(float((clf_h | rules).mean()), 3),
                "pool_heldout_flagged_either": round(float(either_p[test_pool].mean()), 4),
                "pool_heldout_flagged_rules": round(float(rules_p[test_pool].mean()), 4),
                "benign_jsonl_flagged_either": f"{int(either_p[in_benign].sum())}/{int(in_benign.sum())}",
                "hard_benign_flagged_either": f"{int((clf_b | rules_b).sum())}/{len(hard)}",
                "hard_benign_flagged_rules": f"{int(rules_b.sum())}/{len(hard)}",
            }
            results.append(row)
            print(json.dumps(row))
    if args.json is not None:
        args.json.write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
