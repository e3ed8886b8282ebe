"""Fine-tune all-MiniLM-L6-v2 into jit's tool retriever from bench/data/retriever_train.

The recipe: each (query, needed tool) pair is a triplet with one hard negative, a tool the
dataset offered the query beside the right one (BFCL, ToolAlpaca), else one BM25 ranks high for
the query among the tools of the same server (Seal-Tools' field) or source; the loss is
sentence-transformers' MultipleNegativesRankingLoss (the other tools of the batch are the in-batch
negatives; no text appears twice in a batch, so a tool two queries need is never the other's
negative). A tool's text is what jit embeds for it (:meth:`jit.models.ToolDef.embedding_text`).
Seeded: the same data, seed and arguments give the same weights on the same torch build. ::

    nice python -m bench.train_retriever --out /tmp/tuned   # 8 min on 2 cores with nothing beside it
    jit eval livemcpbench --compare-model /tmp/tuned         # beside the default model

jit's default model is these weights moved half way back to all-MiniLM-L6-v2's
(``python -m bench.interpolate_retriever``, WiSE-FT).

One source (``--hold-out``, ToolAlpaca by default) is left out of training and measured
``--checks`` times over the training (R@5/R@10/Hit@1 of its queries against its tools, the base
model beside it): the weights kept are those of the best check, so the training length is chosen
there, never on a set jit is evaluated on. ``training.json`` in
the model directory records the arguments and those figures.
"""

from __future__ import annotations

import argparse
import gzip
import json
import random
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from jit.embedding.torch_embedder import base_model_path
from jit.models import ToolDef

DATA = Path(__file__).resolve().parent / "data" / "retriever_train"
#: The sources jit-tools-MiniLM-L6-v1 was trained from (the default ``--sources``, so the recipe in its
#: card reproduces it); the multi-step sources added after it were measured and not shipped
#: (docs/quality.md, "More training data: multi-step tasks of sibling tools").
V1_SOURCES = ("seal-tools", "toolalpaca", "bfcl")
#: The tokens a text is cut at when the model runs: all-MiniLM-L6-v2's.
INFERENCE_MAX_SEQ = 256


def read_rows(path: Path) -> list[dict[str, Any]]:
    with gzip.open(path, "rt", encoding="utf-8") as fh:
        return [json.loads(line) for line in fh]


def read_pairs(data: Path, sources: Sequence[str] = V1_SOURCES) -> list[dict[str, Any]]:
    """The pairs of ``sources`` (``"all"`` among them: every source), in the file's order."""
    return [p for p in read_rows(data / "pairs.jsonl.gz") if "all" in sources or p["source"] in sources]


def tool_text(tool: dict[str, Any]) -> str:
    schema = {"type": "object", "properties": {k: {"description": v} for k, v in tool["params"].items()}}
    return ToolDef(server=tool["server"], name=tool["name"], description=tool["description"],
                   input_schema=schema).embedding_text()


def load(path: str, max_seq: int) -> Any:
    from sentence_transformers import SentenceTransformer

    model = SentenceTransformer(path, device="cpu", local_files_only=True)
    model.max_seq_length = max_seq
    return model


def encode(model: Any, texts: list[str]) -> np.ndarray:
    return np.asarray(model.encode(texts, batch_size=128, normalize_embeddings=True, convert_to_numpy=True,
                                   show_progress_bar=False), dtype=np.float32)


def retrieval_scores(model: Any, pairs: list[dict[str, Any]], tools: dict[str, dict[str, Any]]) -> dict[str, float]:
    """R@5, R@10 (the share of a query's needed tools in the first k) and Hit@1 of ``pairs`` against
    every tool of their source(s)."""
    ids = sorted({t for t, tool in tools.items() if tool["source"] in {p["source"] for p in pairs}})
    index = {t: i for i, t in enumerate(ids)}
    tv = encode(model, [tool_text(tools[t]) for t in ids])
    qv = encode(model, [p["query"] for p in pairs])
    order = np.argsort(-(qv @ tv.T), axis=1, kind="stable")[:, :10]
    r5 = r10 = hit = 0.0
    for p, top in zip(pairs, order, strict=True):
        gold = {index[t] for t in p["tools"]}
        r5 += len(gold & set(top[:5].tolist())) / len(gold)
        r10 += len(gold & set(top.tolist())) / len(gold)
        hit += float(top[0] in gold)
    n = len(pairs)
    return {"R@5": round(r5 / n, 4), "R@10": round(r10 / n, 4), "Hit@1": round(hit / n, 4), "queries": n}


def triplets(pairs: list[dict[str, Any]], tools: dict[str, dict[str, Any]], rng: random.Random,
             mined: int) -> list[tuple[str, str, str]]:
    """(query, needed tool, hard negative) texts. The negative is a tool the dataset offered the
    query beside the needed ones where it did, else one of the ``mined`` tools BM25 ranks highest
    for the query among the needed tool's server (or its source, for a server of one tool); never
    a tool of a needed tool's name or text (Seal-Tools repeats a tool under several fields)."""
    from jit.evaluation.baselines import BM25Ranker

    text = {t: tool_text(tool) for t, tool in tools.items()}
    by_group: dict[tuple[str, str], list[str]] = {}
    for t, tool in sorted(tools.items()):
        by_group.setdefault((tool["source"], tool["server"]), []).append(t)
        by_group.setdefault((tool["source"], ""), []).append(t)
    rankers: dict[tuple[str, str], BM25Ranker] = {}
    out = []
    for p in pairs:
        gold = set(p["tools"]) & set(tools)
        if not gold:
            continue
        same = {tools[g]["name"] for g in gold} | {text[g] for g in gold}
        pool = [c for c in p.get("candidates", []) if c in tools and not {tools[c]["name"], text[c]} & same]
        first = tools[sorted(gold)[0]]
        for group in ((first["source"], first["server"]), (first["source"], "")):
            if pool:
                break
            members = by_group[group]
            if group not in rankers:
                rankers[group] = BM25Ranker([text[t] for t in members])
            scores = next(rankers[group].scores([p["query"]]))
            ranked = [members[i] for i in np.argsort(-scores, kind="stable")]
            pool = [t for t in ranked if not {tools[t]["name"], text[t]} & same][:mined]
        for g in sorted(gold):
            out.append((p["query"], text[g], text[rng.choice(pool)]))
    return out


def batches(rows: list[tuple[str, str, str]], size: int, rng: random.Random) -> list[list[tuple[str, str, str]]]:
    """Shuffled batches in which no text appears twice (sentence-transformers' no-duplicates sampler)."""
    rest = rows[:]
    rng.shuffle(rest)
    out = []
    while rest:
        batch, seen, left = [], set(), []
        for r in rest:
            if len(batch) < size and not seen & set(r):
                batch.append(r)
                seen.update(r)
            else:
                left.append(r)
        out.append(batch)
        rest = left
    return out


def train(model: Any, rows: list[tuple[str, str, str]], *, epochs: int, batch_size: int, lr: float,
          scale: float, seed: int, checks: int = 1, at_check: Any = None, log_every: int = 20) -> None:
    """MultipleNegativesRankingLoss with AdamW, 10% linear warm-up then linear decay;
    ``at_check(step)`` is called ``checks`` times, evenly over the steps, the last at the end
    (the model in eval mode)."""
    import torch
    from sentence_transformers.sentence_transformer.losses import MultipleNegativesRankingLoss

    torch.manual_seed(seed)
    rng = random.Random(seed)
    loss_fn = MultipleNegativesRankingLoss(model, scale=scale)
    plan = [batches(rows, batch_size, rng) for _ in range(epochs)]
    total = sum(len(p) for p in plan)
    optimizer = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=lr, weight_decay=0.01)
    warmup = max(1, total // 10)
    scheduler = torch.optim.lr_scheduler.LambdaLR(
        optimizer, lambda s: min((s + 1) / warmup, max(0.0, (total - s) / max(1, total - warmup))))
    step, started = 0, time.perf_counter()
    check_at = {round(total * (i + 1) / checks) for i in range(checks)}
    model.train()
    for epoch in plan:
        for batch in epoch:
            features = [model.tokenize([r[i] for r in batch]) for i in range(3)]
            loss = loss_fn(features, None)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
            scheduler.step()
            optimizer.zero_grad()
            step += 1
            if step % log_every == 0 or step == total:
                print(f"step {step}/{total} loss {loss.item():.4f} ({time.perf_counter() - started:.0f} s)", flush=True)
            if step in check_at and at_check is not None:
                model.eval()
                at_check(step)
                model.train()
    model.eval()


def freeze_below(model: Any, trained: int) -> None:
    """Train only the top ``trained`` transformer layers (the cost of a step on a CPU is the backward
    pass through what is trained)."""
    bert = model[0].auto_model
    layers = bert.encoder.layer
    for p in bert.parameters():
        p.requires_grad = False
    for layer in list(layers)[len(layers) - trained:]:
        for p in layer.parameters():
            p.requires_grad = True


def save(model: Any, out: Path, fp16: bool) -> None:
    """Write the model directory; ``fp16``: the weights in half precision, the config saying float32
    (the loaders upcast, so the model runs in float32 as it was trained). The model itself is untouched."""
    import copy

    out.mkdir(parents=True, exist_ok=True)
    copied = copy.deepcopy(model)
    copied.max_seq_length = INFERENCE_MAX_SEQ  # trained on shorter texts, run as the base model runs
    if fp16:
        copied[0].auto_model.half()
    copied.save(str(out), safe_serialization=True)
    config = json.loads((out / "config.json").read_text())
    for key in ("torch_dtype", "dtype"):
        if key in config:
            config[key] = "float32"
    (out / "config.json").write_text(json.dumps(config, indent=2, sort_keys=True) + "\n")
    (out / "README.md").unlink(missing_ok=True)  # sentence-transformers' generated card, with local paths


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--out", type=Path, required=True, help="the model directory written")
    parser.add_argument("--sources", nargs="+", default=list(V1_SOURCES),
                        help="the sources read ('all': every source of the data; default: the shipped model's)")
    parser.add_argument("--hold-out", default="toolalpaca",
                        help="a source trained without and measured after each epoch ('none': train on all)")
    parser.add_argument("--epochs", type=int, default=1)
    parser.add_argument("--checks", type=int, default=4,
                        help="times the held-out source is measured, evenly over training; the best is kept")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--lr", type=float, default=5e-5)
    parser.add_argument("--scale", type=float, default=20.0, help="the loss's similarity scale")
    parser.add_argument("--mined", type=int, default=10, help="hard negatives drawn from BM25's top N")
    parser.add_argument("--max-seq", type=int, default=64, help="tokens of a text trained on (the model keeps 256)")
    parser.add_argument("--train-layers", type=int, default=6,
                        help="the top transformer layers trained; the embeddings and the layers below stay frozen")
    parser.add_argument("--max-triplets", type=int, default=5000, help="a seeded sample of the triplets, at most")
    parser.add_argument("--seed", type=int, default=13)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--fp16", action="store_true", help="save the weights in half precision")
    args = parser.parse_args(argv)

    import torch

    torch.set_num_threads(args.threads)
    started = time.perf_counter()
    tools = {t["id"]: t for t in read_rows(args.data / "tools.jsonl.gz")}
    pairs = read_pairs(args.data, args.sources)
    held = [p for p in pairs if p["source"] == args.hold_out]
    train_pairs = [p for p in pairs if p["source"] != args.hold_out]
    if args.hold_out != "none" and not held:
        raise SystemExit(f"no pairs of source {args.hold_out!r}")
    random.seed(args.seed)
    np.random.seed(args.seed)
    model = load(base_model_path(), args.max_seq)
    report: dict[str, Any] = {"args": {k: str(v) for k, v in vars(args).items()}, "held_out": {}}
    if held:
        report["held_out"]["base"] = retrieval_scores(model, held, tools)
        print(f"held out {args.hold_out}, base model: {report['held_out']['base']}", flush=True)
    rows = triplets(train_pairs, tools, random.Random(args.seed), args.mined)
    if len(rows) > args.max_triplets:
        rows = random.Random(args.seed).sample(rows, args.max_triplets)
    freeze_below(model, args.train_layers)
    report["triplets"] = len(rows)
    report["pairs"] = len(train_pairs)
    print(f"{len(rows)} triplets from {len(train_pairs)} pairs", flush=True)
    best = {"step": 0, "score": -1.0}

    def at_check(step: int) -> None:
        # The weights kept are the check's with the best R@5 on the held-out source (else the last).
        score = float(step)
        if held:
            found = report["held_out"][f"step {step}"] = retrieval_scores(model, held, tools)
            print(f"held out {args.hold_out}, step {step}: {found}", flush=True)
            score = found["R@5"]
        if score > best["score"]:
            best.update(step=step, score=score)
            save(model, args.out, args.fp16)

    train(model, rows, epochs=args.epochs, batch_size=args.batch_size, lr=args.lr, scale=args.scale,
          seed=args.seed, checks=args.checks, at_check=at_check)
    report["kept_step"] = best["step"]
    report["seconds"] = round(time.perf_counter() - started)
    (args.out / "training.json").write_text(json.dumps(report, indent=1) + "\n")
    print(json.dumps(report), flush=True)


if __name__ == "__main__":
    main()
