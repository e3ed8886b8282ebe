"""A semantic second line for hostile tool text: train and measure a sentence classifier.

    python -m bench.train_injection_classifier [--shared ../shared/data] [--cache vecs.npz]
        [--C 10] [--coherence] [--max-tool-fp 0.003] [--out weights.npz] [--json out.json]

The phrase rules of :mod:`jit.injection.detect` match wordings; this asks whether a linear model
over MiniLM sentence vectors (the embedder jit already ships) generalises to paraphrases.
It was measured and NOT integrated: on unseen cases it catches ~20-40% at the false-positive
budget (numbers in docs/reliability.md). Deterministic: same corpus, pools and model, same
weights and numbers.

Training data (nothing else):

* hostile sentences: the sentences of the corpus's ``tune`` split (``tests/data/injection/
  hostile.jsonl``, written first) that the phrase rules flag on their own;
* benign sentences: every sentence of every third tool of the shared pools (file order,
  deduplicated like ``bench.injection_corpus``) that is *not* in ``benign.jsonl``.

A sentence is its normalised MiniLM vector (with ``--coherence`` also its cosine to the
first sentence of its tool: injected sentences tend to be off the tool's topic). A
class-weighted logistic regression is fitted; the threshold is chosen on out-of-fold (5
folds) scores of the training tools so that at most ``--max-tool-fp`` of them have a
sentence at or above it. A tool is flagged when its best sentence crosses the threshold.

Evaluation, on data never trained on: first-sight detection on the seven later corpus
batches (holdout .. blind4) and ``blind5`` — classifier alone, rules of today, either —
and false positives on ``benign.jsonl`` and on every pool tool that was not a training tool.
The rules of today were tuned on the seven later batches, so "either" is only first-sight
for ``blind5``.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import sys
import time
import unicodedata
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np

from bench.injection_corpus import CORPUS, ROOT, load_jsonl, pool_rows, tool_of
from jit.injection.detect import _instruction_flags, detect_hostile
from jit.embedding.torch_embedder import SentenceTransformerEmbedder
from jit.text import remove_hidden

LATER = ("holdout", "fresh", "final", "blind", "blind2", "blind3", "blind4")
#: Every k-th pool tool (outside benign.jsonl) is a training tool; the rest are held out.
TRAIN_EVERY = 3

_SENTENCE = re.compile(r"(?<=[.!?;:])\s+|\n+|(?<=[。！？；])")
_WS = re.compile(r"\s+")
_MIN_CHARS, _MAX_CHARS = 12, 400  # shorter says nothing; MiniLM reads 256 word pieces at most


def _strings(schema: Any, out: list[str], depth: int = 0) -> None:
    """Every description-like string of a JSON schema (keys and enum tokens left out)."""
    if depth > 12:
        return
    if isinstance(schema, dict):
        for key, value in schema.items():
            if isinstance(value, str) and key in ("description", "title", "default", "examples"):
                out.append(value)
            else:
                _strings(value, out, depth + 1)
    elif isinstance(schema, list):
        for value in schema:
            _strings(value, out, depth + 1)


def tool_sentences(row: dict) -> list[str]:
    """The distinct sentences of a tool's title, description and schema strings, in order."""
    tool = tool_of(row)
    texts = [tool.title or "", tool.description or ""]
    _strings(tool.input_schema or {}, texts)
    seen: dict[str, None] = {}
    for text in texts:
        clean = unicodedata.normalize("NFKC", remove_hidden(text))
        for piece in _SENTENCE.split(clean):
            s = _WS.sub(" ", piece).strip()
            if len(s) >= _MIN_CHARS and (" " in s or not s.isascii()):
                seen.setdefault(s[:_MAX_CHARS], None)
    return list(seen)


def _key(row: dict) -> str:
    return json.dumps([row.get("description") or "", row.get("input_schema") or {}], sort_keys=True)


class VectorCache:
    """Sentence vectors by text hash, kept in an .npz between runs (50k sentences take minutes)."""

    def __init__(self, path: Path | None) -> None:
        self.embedder, self.path, self.vecs = SentenceTransformerEmbedder(), path, {}
        if path and path.exists():
            with np.load(path, allow_pickle=False) as z:
                self.vecs = dict(zip(z["keys"].tolist(), z["vecs"], strict=True))

    @staticmethod
    def _h(text: str) -> str:
        return hashlib.sha256(text.encode()).hexdigest()[:24]

    def embed(self, texts: list[str]) -> np.ndarray:
        missing = list(dict.fromkeys(t for t in texts if self._h(t) not in self.vecs))
        for i in range(0, len(missing), 4096):
            part = missing[i:i + 4096]
            for t, v in zip(part, self.embedder.embed(part), strict=True):
                self.vecs[self._h(t)] = v
        if missing and self.path:
            keys = list(self.vecs)
            np.savez(self.path, keys=np.array(keys), vecs=np.stack([self.vecs[k] for k in keys]))
        return np.stack([self.vecs[self._h(t)] for t in texts]) if texts else np.zeros((0, 384), np.float32)


def features(rows: list[dict], cache: VectorCache, coherence: bool) -> list[tuple[list[str], np.ndarray]]:
    """Per tool: its sentences and one feature row per sentence."""
    per = [tool_sentences(r) for r in rows]
    cache.embed([s for ss in per for s in ss])  # one batched pass
    out = []
    for ss in per:
        v = cache.embed(ss).astype(np.float64) if ss else np.zeros((0, 384))
        out.append((ss, np.hstack([v, (v @ v[0])[:, None]]) if coherence and ss else v))
    return out


def split_pools(shared: Path) -> tuple[list[dict], list[dict]]:
    """(training tools, held-out tools) of the pools; benign.jsonl's tools are in neither."""
    committed = {_key(r) for r in load_jsonl(CORPUS / "benign.jsonl")}
    rest = [r for r in pool_rows(shared) if _key(r) not in committed]
    return rest[::TRAIN_EVERY], [r for i, r in enumerate(rest) if i % TRAIN_EVERY]


def _fit(x: np.ndarray, y: np.ndarray, c: float):
    from sklearn.linear_model import LogisticRegression

    return LogisticRegression(C=c, class_weight="balanced", max_iter=5000).fit(x, y)


def train(hostile: list[dict], train_tools: list[dict], cache: VectorCache, args: argparse.Namespace):
    from sklearn.model_selection import StratifiedKFold

    xs, ys, owner = [], [], []
    for ss, f in features([r for r in hostile if r["split"] == "tune"], cache, args.coherence):
        for s, x in zip(ss, f, strict=True):
            if _instruction_flags(s.lower()):  # the injected sentence(s) of a tune case
                xs.append(x), ys.append(1), owner.append(-1)
    for j, (ss, f) in enumerate(features(train_tools, cache, args.coherence)):
        for x in f:
            xs.append(x), ys.append(0), owner.append(j)
    x, y, owner = np.array(xs), np.array(ys), np.array(owner)
    oof = np.zeros(len(y))
    for tr, te in StratifiedKFold(5, shuffle=True, random_state=0).split(x, y):
        oof[te] = _fit(x[tr], y[tr], args.c).predict_proba(x[te])[:, 1]
    tool_best = np.zeros(len(train_tools))
    np.maximum.at(tool_best, owner[y == 0], oof[y == 0])
    threshold = float(np.sort(tool_best)[::-1][int(args.max_tool_fp * len(train_tools))]) + 1e-9
    lr = _fit(x, y, args.c)
    info = {"positive_sentences": int(y.sum()), "negative_sentences": int((y == 0).sum()),
            "train_tools": len(train_tools), "C": args.c, "coherence": args.coherence, "threshold": threshold,
            "oof_positive_recall": float((oof[y == 1] >= threshold).mean()),
            "oof_tool_fp": float((tool_best >= threshold).mean())}
    return lr, threshold, info


def flagged(lr, threshold: float, rows: list[dict], cache: VectorCache, coherence: bool) -> np.ndarray:
    """Each tool's best sentence score (0 without sentences) and whether it crosses ``threshold``."""
    best = np.array([lr.predict_proba(f)[:, 1].max() if len(ss) else 0.0
                     for ss, f in features(rows, cache, coherence)])
    return best, best >= threshold


def evaluate(lr, threshold: float, hostile: list[dict], heldout: list[dict], cache: VectorCache,
             coherence: bool) -> dict:
    out: dict = {}
    for name, splits in (("later7", LATER), ("blind5", ("blind5",)), ("later7+blind5", (*LATER, "blind5"))):
        rows = [r for r in hostile if r["split"] in splits]
        _, sem = flagged(lr, threshold, rows, cache, coherence)
        rules = np.array([bool(detect_hostile(tool_of(r))) for r in rows])
        per: Counter = Counter()
        for r, a, b in zip(rows, sem, rules, strict=True):
            per[r["class"], "n"] += 1
            per[r["class"], "sem"] += bool(a)
            per[r["class"], "either"] += bool(a or b)
        out[name] = {"n": len(rows), "semantic": float(sem.mean()), "rules": float(rules.mean()),
                     "either": float((sem | rules).mean()),
                     "classes (semantic, either)": {k: f"{per[k, 'sem']}, {per[k, 'either']}/{per[k, 'n']}"
                                                    for k in sorted({k for k, _ in per})}}
    for name, rows in (("benign_corpus", load_jsonl(CORPUS / "benign.jsonl")), ("pool_heldout", heldout)):
        best, sem = flagged(lr, threshold, rows, cache, coherence)
        rules = np.array([bool(detect_hostile(tool_of(r))) for r in rows])
        out[name] = {"n": len(rows), "semantic": int(sem.sum()), "rules": int(rules.sum()),
                     "either": int((sem | rules).sum()), "either_rate": float((sem | rules).mean()),
                     "semantic_listing": [(rows[i].get("source"), rows[i]["name"], round(float(best[i]), 4))
                                          for i in np.argsort(-best)[: int(sem.sum())]]}
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--shared", type=Path, default=ROOT.parent / "shared" / "data")
    ap.add_argument("--cache", type=Path, help="keep sentence vectors in this .npz between runs")
    ap.add_argument("--C", type=float, default=10.0, dest="c", help="inverse regularisation strength")
    ap.add_argument("--coherence", action="store_true", help="add the cosine to the tool's first sentence")
    ap.add_argument("--max-tool-fp", type=float, default=0.003)
    ap.add_argument("--out", type=Path, help="write the weights (coef, intercept, threshold) here")
    ap.add_argument("--json", type=Path, help="write the numbers here")
    ap.add_argument("--listing", type=int, default=15, help="flagged benign tools to print per sample")
    args = ap.parse_args(argv)
    cache = VectorCache(args.cache)
    hostile = load_jsonl(CORPUS / "hostile.jsonl")
    train_tools, heldout = split_pools(args.shared)
    if not train_tools:
        print(f"no shared pools under {args.shared}", file=sys.stderr)
        return 2
    t0 = time.perf_counter()
    lr, threshold, info = train(hostile, train_tools, cache, args)
    info["train_seconds"] = round(time.perf_counter() - t0, 1)
    print("train", json.dumps(info))
    if args.out:
        np.savez(args.out, coef=lr.coef_[0], intercept=lr.intercept_[0], threshold=threshold)
    result = {"train": info, "eval": evaluate(lr, threshold, hostile, heldout, cache, args.coherence)}
    for k, v in result["eval"].items():
        print(k, json.dumps({a: b for a, b in v.items() if a != "semantic_listing"}, ensure_ascii=False))
        for item in v.get("semantic_listing", [])[: args.listing]:
            print("    ", item)
    if args.json:
        args.json.write_text(json.dumps(result, indent=1, ensure_ascii=False), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
