"""A linear adapter on frozen all-MiniLM-L6-v2 vectors, trained for tools: the cheap try before a fine-tune.

Every text of bench/data/retriever_train (the tools as jit embeds them, the queries, and the
multi-step tasks :mod:`bench.compose_tasks` joins from them) is embedded once by the base model
(cached in ``--cache``); the adapter is ``x -> normalise(x + A x)`` with ``A`` a 384 x 384 matrix
starting at zero, applied to the query side only (``--side query``) or to both (``--side both``,
the one a sentence-transformers model can carry as a Dense layer). The loss is a softmax over the
batch's tools (each row's needed tool against the others of the batch, and one sibling of it: a
tool of the same server it does not need, else a BM25 near-miss among its source), with the other
tools a task needs masked out, and an L2 pull of ``A`` to zero. Seconds per variant on a CPU.

Each variant is chosen by leaving one training source out: trained on the other two, measured on
the held-out source's queries and composed tasks among its own tools (R@5, Hit@1), beside the
base model. No evaluation set is read. ::

    python -m bench.train_adapter                       # the variants, each source held out in turn
    python -m bench.train_adapter --final --out DIR     # the chosen variant on all sources, a model dir
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np

from jit.embedding.torch_embedder import base_model_path

from .compose_tasks import compose
from .train_retriever import DATA, INFERENCE_MAX_SEQ, V1_SOURCES, encode, load, read_pairs, read_rows, tool_text

#: The sources the adapter was measured on (docs/quality.md).
SOURCES = V1_SOURCES


def embeddings(texts: list[str], cache: Path) -> np.ndarray:
    """The base model's unit vectors of ``texts``, cached by text."""
    cache.mkdir(parents=True, exist_ok=True)
    file = cache / "vectors.npz"
    known: dict[str, np.ndarray] = {}
    if file.exists():
        with np.load(file, allow_pickle=False) as z:
            known = dict(zip(z["keys"].tolist(), z["vecs"], strict=True))
    key = [hashlib.sha1(t.encode()).hexdigest() for t in texts]
    todo = sorted({k: t for k, t in zip(key, texts, strict=True) if k not in known}.items())
    if todo:
        model = load(base_model_path(), INFERENCE_MAX_SEQ)
        started = time.perf_counter()
        vecs = encode(model, [t for _, t in todo])
        print(f"embedded {len(todo)} texts in {time.perf_counter() - started:.0f} s", flush=True)
        known.update(zip([k for k, _ in todo], vecs, strict=True))
        np.savez(file, keys=np.array(list(known)), vecs=np.stack(list(known.values())))
    return np.stack([known[k] for k in key]).astype(np.float32)


class Data:
    """The tools, queries and composed tasks of the training sources, with their base vectors."""

    def __init__(self, data: Path, cache: Path, seed: int, per_pair: float) -> None:
        tools = {t["id"]: t for t in read_rows(data / "tools.jsonl.gz")}
        pairs = [p for p in read_pairs(data, SOURCES) if set(p["tools"]) & set(tools)]
        tasks = compose(pairs, tools, seed=seed, per_pair=per_pair)
        self.tool_ids = sorted(tools)
        self.tools = tools
        self.index = {t: i for i, t in enumerate(self.tool_ids)}
        self.rows = [dict(p, kind="query") for p in pairs] + [dict(t, kind="task") for t in tasks]
        self.tool_vecs = embeddings([tool_text(tools[t]) for t in self.tool_ids], cache)
        self.row_vecs = embeddings([r["query"] for r in self.rows], cache)
        self.gold = [sorted(self.index[t] for t in r["tools"] if t in tools) for r in self.rows]
        by_server: dict[tuple[str, str], list[int]] = defaultdict(list)
        for i, t in enumerate(self.tool_ids):
            by_server[(tools[t]["source"], tools[t]["server"])].append(i)
        self.siblings = [by_server[(tools[t]["source"], tools[t]["server"])] for t in self.tool_ids]
        self.source_tools = {s: np.array([i for i, t in enumerate(self.tool_ids) if tools[t]["source"] == s])
                             for s in SOURCES}

    def hard_negatives(self, rows: list[int], near: int) -> dict[tuple[int, int], list[int]]:
        """For each (row, needed tool): its siblings the row does not need, else the ``near`` tools
        of its source the base model ranks highest for the row that it does not need."""
        out: dict[tuple[int, int], list[int]] = {}
        for r in rows:
            gold = set(self.gold[r])
            source = self.rows[r]["source"]
            pool = self.source_tools[source]
            ranked = pool[np.argsort(-(self.tool_vecs[pool] @ self.row_vecs[r]))[: near + len(gold)]]
            close = [int(t) for t in ranked if t not in gold][:near]
            for g in self.gold[r]:
                sib = [s for s in self.siblings[g] if s not in gold]
                if sib or close:  # a source whose every tool the row needs offers no negative
                    out[(r, g)] = sib or close
        return out


def adapted(a: np.ndarray | None, x: np.ndarray) -> np.ndarray:
    y = x if a is None else x + x @ a.T
    return y / np.linalg.norm(y, axis=1, keepdims=True)


def scores(d: Data, rows: list[int], a: np.ndarray | None, side: str) -> dict[str, float]:
    """R@5 and Hit@1 of ``rows`` (each among its source's tools), split by queries and composed tasks."""
    out: dict[str, float] = {}
    for kind in ("query", "task"):
        mine = [r for r in rows if d.rows[r]["kind"] == kind]
        if not mine:
            continue
        r5 = hit = 0.0
        for source in {d.rows[r]["source"] for r in mine}:
            sel = [r for r in mine if d.rows[r]["source"] == source]
            pool = d.source_tools[source]
            q = adapted(a, d.row_vecs[sel])
            t = adapted(a if side == "both" else None, d.tool_vecs[pool])
            top = pool[np.argsort(-(q @ t.T), axis=1, kind="stable")[:, :5]]
            for r, row in zip(sel, top, strict=True):
                gold = set(d.gold[r])
                r5 += len(gold & set(row.tolist())) / len(gold)
                hit += float(row[0] in gold)
        out[f"{kind} R@5"] = round(r5 / len(mine), 4)
        out[f"{kind} Hit@1"] = round(hit / len(mine), 4)
    return out


def fit(d: Data, rows: list[int], *, side: str, epochs: int, lr: float, l2: float, scale: float,
        batch: int, near: int, tasks: bool, seed: int) -> np.ndarray:
    """Train ``A`` (see the module's docstring) on ``rows``; ``tasks``: with the composed tasks."""
    import torch

    torch.manual_seed(seed)
    rng = random.Random(seed)
    rows = [r for r in rows if tasks or d.rows[r]["kind"] == "query"]
    negs = d.hard_negatives(rows, near)
    items = sorted(negs)
    dim = d.tool_vecs.shape[1]
    a = torch.zeros(dim, dim, requires_grad=True)
    opt = torch.optim.Adam([a], lr=lr)
    qv = torch.from_numpy(d.row_vecs)
    tv = torch.from_numpy(d.tool_vecs)

    def f(x: torch.Tensor) -> torch.Tensor:
        return torch.nn.functional.normalize(x + x @ a.T, dim=1)

    for _ in range(epochs):
        rng.shuffle(items)
        for start in range(0, len(items), batch):
            chunk = items[start:start + batch]
            rs = [r for r, _ in chunk]
            pos = [g for _, g in chunk]
            neg = [rng.choice(negs[c]) for c in chunk]
            cols = pos + neg
            q = f(qv[rs])
            t = f(tv[cols]) if side == "both" else torch.nn.functional.normalize(tv[cols], dim=1)
            logits = scale * q @ t.T
            # A column the row needs (another of its tools, or the same tool as its positive) is no negative.
            mask = torch.tensor([[c in d.gold[r] and j != i for j, c in enumerate(cols)]
                                 for i, r in enumerate(rs)])
            logits = logits.masked_fill(mask, float("-inf"))
            loss = torch.nn.functional.cross_entropy(logits, torch.arange(len(chunk))) + l2 * (a ** 2).sum()
            opt.zero_grad()
            loss.backward()
            opt.step()
    return a.detach().numpy().astype(np.float32)


VARIANTS: dict[str, dict[str, Any]] = {
    "query side, queries only": {"side": "query", "tasks": False},
    "query side, + tasks": {"side": "query", "tasks": True},
    "both sides, queries only": {"side": "both", "tasks": False},
    "both sides, + tasks": {"side": "both", "tasks": True},
    "both sides, + tasks, l2 1e-3": {"side": "both", "tasks": True, "l2": 1e-3},
    "both sides, + tasks, l2 1e-5": {"side": "both", "tasks": True, "l2": 1e-5},
    "both sides, + tasks, 3 epochs": {"side": "both", "tasks": True, "epochs": 3},
    "both sides, + tasks, scale 50": {"side": "both", "tasks": True, "scale": 50.0},
}
DEFAULTS: dict[str, Any] = {"epochs": 1, "lr": 1e-3, "l2": 1e-4, "scale": 20.0, "batch": 128, "near": 10}


def save_model(a: np.ndarray, out: Path, report: dict[str, Any]) -> None:
    """A sentence-transformers directory: the base model, then ``x + A x`` as a Dense layer, then
    normalisation (so jit's embedders load it as any model directory)."""
    import torch
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.models import Dense, Normalize

    base = load(base_model_path(), INFERENCE_MAX_SEQ)
    dim = a.shape[0]
    dense = Dense(dim, dim, bias=False, activation_function=torch.nn.Identity())
    with torch.no_grad():
        dense.linear.weight.copy_(torch.eye(dim) + torch.from_numpy(a))
    model = SentenceTransformer(modules=[base[0], base[1], dense, Normalize()], device="cpu")
    model.save(str(out), safe_serialization=True)
    (out / "README.md").unlink(missing_ok=True)
    (out / "training.json").write_text(json.dumps(report, indent=1) + "\n")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--cache", type=Path, default=Path(".jit/adapter"))
    parser.add_argument("--seed", type=int, default=13)
    parser.add_argument("--per-pair", type=float, default=1.0, help="composed tasks per query of a source")
    parser.add_argument("--variants", nargs="*", help="the variants run (default: all)")
    parser.add_argument("--hold-out", nargs="*", default=list(SOURCES), help="the sources held out in turn")
    parser.add_argument("--final", choices=sorted(VARIANTS),
                        help="train this variant (one that maps both sides) on every source and write --out")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args(argv)
    d = Data(args.data, args.cache, args.seed, args.per_pair)
    if args.final:
        if args.out is None:
            parser.error("--final writes a model: give --out DIR")
        settings = {**DEFAULTS, **VARIANTS[args.final]}
        if settings["side"] != "both":
            # jit embeds tasks and tools through one model, so a written model maps both sides.
            parser.error(f"--final {args.final}: a query-side variant cannot be written as one model")
        a = fit(d, list(range(len(d.rows))), seed=args.seed, **settings)
        save_model(a, args.out, {"variant": args.final, "settings": settings, "rows": len(d.rows)})
        print(f"wrote {args.out}")
        return
    results: dict[str, dict[str, Any]] = {}
    for held in args.hold_out:
        test = [i for i, r in enumerate(d.rows) if r["source"] == held]
        train = [i for i, r in enumerate(d.rows) if r["source"] != held]
        results.setdefault("base", {})[held] = scores(d, test, None, "query")
        print(f"held out {held}: base {results['base'][held]}", flush=True)
        for name in args.variants or VARIANTS:
            settings = {**DEFAULTS, **VARIANTS[name]}
            started = time.perf_counter()
            a = fit(d, train, seed=args.seed, **settings)
            results.setdefault(name, {})[held] = found = scores(d, test, a, settings["side"])
            print(f"held out {held}: {name} {found} ({time.perf_counter() - started:.0f} s)", flush=True)
    print(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
