"""Train (and measure) the injection model jit ships: ``jit/analysis/injection_model.npz``.

    python -m bench.train_injection_model [--shared ../shared/data] [--write]
        [--leave-out blind16 blind15 ...] [--test more.jsonl ...] [--json out.json]

Protocol (deterministic: same corpus, pools and options, the same arrays):

* hostile: every row of ``tests/data/injection/hostile.jsonl`` but a left-out split and the
  batches kept for first sight (:data:`FIRST_SIGHT`: written after the model, never trained on),
  without the parameter descriptions the corpus reuses as filler (:func:`_without_filler`);
* benign, real: every second deduplicated tool of the shared pools that is not in
  ``benign.jsonl`` (:func:`bench.injection_corpus.pool_rows`, even positions); the odd
  positions and ``benign.jsonl`` are never trained on and measure false positives, for the
  shipped model too (trained on every pool tool instead, a model set its threshold lower and
  flagged more of the hard benign texts: 19 of 60 against 14, measured before the length gate);
* benign, written to look hostile: ``synthetic_benign.jsonl`` (usage guidance addressed to
  the model, call order, other tools named, secrets handled, URL templates, other
  languages), so the model learns what an attack asks for rather than how corpus text
  is written; ``hard_benign.jsonl`` is never trained on;
* benign, tricky: the ``tricky_train`` rows of ``tricky_benign.jsonl`` (weight
  ``--tricky-weight``): usage advice addressed to the model ("confirm with the user
  before …", "do not include personal data …", "Note for the assistant: …"), tools whose job
  is secrets, payments, deleting, running commands or managing other bots' prompts, quoted
  attack examples, in 25 languages; its ``tricky_dev`` rows (every third) are never trained on;
* features: :func:`jit.analysis.hostile_model.features` (hashed word 1–3-grams and
  character 3–5-grams, tf-idf with the training texts' idf); a class-weighted logistic
  regression (``--C``); the threshold is the higher of two quantiles of out-of-fold (5
  folds) scores: the ``1 - --fp`` quantile of the real benign training tools the model will
  be asked about (at least ``MIN_MODEL_CHARS`` characters: shorter texts are the rules'
  alone) and the ``1 - --tricky-fp`` quantile of the tricky training texts.

``--leave-out S`` trains once more without split S and scores S: what the model catches
of a batch written by someone else, at first sight, beside what the rules catch of it.
``--test FILE`` scores a JSONL of hostile rows the model never saw. ``--write`` saves the
model trained as above (no split left out); without it nothing is written.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from pathlib import Path

import numpy as np

from bench.injection_corpus import CORPUS, load_jsonl, pool_rows, tool_of
from jit.analysis.hostile import detect_hostile
from jit.analysis.hostile_model import (
    CHAR_NGRAMS,
    MIN_MODEL_CHARS,
    MODEL_FILE,
    WORD_NGRAMS,
    InjectionModel,
    features,
    model_text,
)
from jit.evaluation.datasets import default_data_dir

SEED = 0
BITS = 18
C = 30.0
FP = 0.005
TRICKY_FP = 0.08
SYNTHETIC_WEIGHT = 3.0
TRICKY_WEIGHT = 30.0
SYNTHETIC = CORPUS / "synthetic_benign.jsonl"
TRICKY = CORPUS / "tricky_benign.jsonl"
#: A parameter description repeated in this many hostile rows is the corpus's filler.
FILLER_ROWS = 3
#: Hostile batches written after the model and never trained on: its first-sight measure
#: (tests/test_hostile_model.py holds it). blind19 to blind22 were counted once with the
#: shipped model and nothing was changed after.
FIRST_SIGHT = ("blind17", "blind18", "blind19", "blind20", "blind21", "blind22")


def _rules_only(rows: list[dict]) -> np.ndarray:
    """Whether the phrase and intent rules (not the model) flag each row."""
    from jit.analysis import hostile

    return np.fromiter((bool(hostile.detect_hostile(tool_of(r), model=False)) for r in rows), bool, len(rows))


def _without_filler(rows: list[dict]) -> list[dict]:
    """Hostile rows without the parameter descriptions the corpus reuses as filler ("Input text."
    in 403 rows, "Search query." in 56): words the writers put in many attacks' schemas would be
    learned as signs of an attack ("input"), and real tools use them everywhere."""
    seen: Counter[str] = Counter()
    for r in rows:
        for spec in ((r.get("input_schema") or {}).get("properties") or {}).values():
            if isinstance(spec, dict) and isinstance(spec.get("description"), str):
                seen[spec["description"]] += 1
    filler = {d for d, n in seen.items() if n >= FILLER_ROWS}
    out = []
    for r in rows:
        props = (r.get("input_schema") or {}).get("properties") or {}
        kept = {k: ({kk: vv for kk, vv in v.items() if kk != "description"}
                    if isinstance(v, dict) and v.get("description") in filler else v) for k, v in props.items()}
        out.append({**r, "input_schema": {**(r.get("input_schema") or {}), "properties": kept}})
    return out


def _idf(raw) -> np.ndarray:
    """The smoothed idf of the training texts' n-gram counts (scikit-learn's)."""
    from sklearn.feature_extraction.text import TfidfTransformer

    return TfidfTransformer(sublinear_tf=True).fit(raw).idf_.astype(np.float32)


def train(hostile: list[str], benign_real: list[str], benign_synthetic: list[str], benign_tricky: list[str], *,
          c: float = C, fp: float = FP, tricky_fp: float = TRICKY_FP, synthetic_weight: float = SYNTHETIC_WEIGHT,
          tricky_weight: float = TRICKY_WEIGHT, bits: int = BITS, info: dict | None = None) -> InjectionModel:
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import StratifiedKFold

    from jit.analysis.hostile_model import counts

    docs = [*hostile, *benign_real, *benign_synthetic, *benign_tricky]
    y = np.r_[np.ones(len(hostile)), np.zeros(len(benign_real) + len(benign_synthetic) + len(benign_tricky))]
    weight = np.r_[np.ones(len(hostile) + len(benign_real)), np.full(len(benign_synthetic), synthetic_weight),
                   np.full(len(benign_tricky), tricky_weight)]
    raw_w, raw_c = counts(docs, bits)
    idf_w, idf_c = _idf(raw_w), _idf(raw_c)
    x = features(docs, bits, idf_w, idf_c)

    def fit(rows: np.ndarray) -> LogisticRegression:
        return LogisticRegression(C=c, class_weight="balanced", max_iter=5000).fit(
            x[rows], y[rows], sample_weight=weight[rows])

    oof = np.zeros(len(y))
    for a, b in StratifiedKFold(5, shuffle=True, random_state=SEED).split(x, y):
        oof[b] = fit(a).decision_function(x[b])
    # The threshold is set on the texts the model will be asked about (long enough, see MIN_MODEL_CHARS): at most
    # fp of the real tools and tricky_fp of the tricky texts above it, out of fold.
    real = len(hostile) + np.flatnonzero([len(t.strip()) >= MIN_MODEL_CHARS for t in benign_real])
    tricky = len(docs) - len(benign_tricky) + np.flatnonzero([len(t.strip()) >= MIN_MODEL_CHARS for t in benign_tricky])
    threshold = float(np.quantile(oof[real], 1 - fp))
    if len(tricky):
        threshold = max(threshold, float(np.quantile(oof[tricky], 1 - tricky_fp)))
    model = fit(np.arange(len(y)))
    return InjectionModel(bits=bits, idf_word=idf_w, idf_char=idf_c, coef=model.coef_[0].astype(np.float32),
                          intercept=float(model.intercept_[0]), threshold=threshold,
                          info={"word_ngrams": list(WORD_NGRAMS), "char_ngrams": list(CHAR_NGRAMS), "C": c,
                                "fp_target": fp, "tricky_fp_target": tricky_fp, "synthetic_weight": synthetic_weight,
                                "tricky_weight": tricky_weight, **(info or {})})


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shared", type=Path, default=None, help="the shared data directory (pools)")
    ap.add_argument("--C", type=float, default=C)
    ap.add_argument("--fp", type=float, default=FP, help="false-positive rate on real tools the threshold allows")
    ap.add_argument("--tricky-fp", type=float, default=TRICKY_FP,
                    help="false-positive rate on the tricky training texts the threshold allows")
    ap.add_argument("--synthetic-weight", type=float, default=SYNTHETIC_WEIGHT)
    ap.add_argument("--tricky-weight", type=float, default=TRICKY_WEIGHT)
    ap.add_argument("--leave-out", nargs="*", default=[], help="hostile splits to measure at first sight")
    ap.add_argument("--test", nargs="*", type=Path, default=[], help="JSONL files of unseen hostile rows")
    ap.add_argument("--write", action="store_true", help=f"save the model to {MODEL_FILE}")
    ap.add_argument("--json", type=Path, default=None)
    args = ap.parse_args(argv)

    hostile = load_jsonl(CORPUS / "hostile.jsonl")
    synthetic = load_jsonl(SYNTHETIC)
    tricky_rows = load_jsonl(TRICKY)
    tricky_dev = [r for r in tricky_rows if r["split"] == "tricky_dev"]
    payload = load_jsonl(CORPUS / "payload.jsonl")
    hard = load_jsonl(CORPUS / "hard_benign.jsonl")
    held_benign = {r["source"] for r in load_jsonl(CORPUS / "benign.jsonl")}
    pool = pool_rows(args.shared or default_data_dir())
    in_benign = np.array([r["source"] in held_benign for r in pool])
    sources = np.array([r["source"].split(":")[0] for r in pool])
    train_pool = (np.arange(len(pool)) % 2 == 0) & ~in_benign
    text = [model_text(tool_of(r)) for r in pool]
    real = [t for t, k in zip(text, train_pool) if k]
    syn = [model_text(tool_of(r)) for r in synthetic]
    tricky = [model_text(tool_of(r)) for r in tricky_rows if r["split"] == "tricky_train"]
    first_sight = [r for r in hostile if r["split"] in FIRST_SIGHT]
    hostile = [r for r in hostile if r["split"] not in FIRST_SIGHT]
    splits = np.array([r["split"] for r in hostile])
    htext = [model_text(tool_of(r)) for r in _without_filler(hostile)]
    opts = {"c": args.C, "fp": args.fp, "tricky_fp": args.tricky_fp, "synthetic_weight": args.synthetic_weight,
            "tricky_weight": args.tricky_weight}

    rules_pool, rules_hard = _rules_only(pool), _rules_only(hard)
    rules_tricky = _rules_only(tricky_dev)
    payload_benign = [r for r in payload if r["label"] == "benign"]
    rules_payload = _rules_only(payload_benign)
    held_pool = ~train_pool & ~in_benign
    results = []

    def judged(model: InjectionModel, texts: list[str]) -> np.ndarray:
        long = np.array([len(t.strip()) >= MIN_MODEL_CHARS for t in texts], dtype=bool)
        return long & (np.asarray(model.scores(texts)) > model.threshold)

    def report(name: str, model: InjectionModel, rows: list[dict]) -> None:
        caught = judged(model, [model_text(tool_of(r)) for r in rows])
        rules = _rules_only(rows)
        pool_either = judged(model, text) | rules_pool
        hard_either = judged(model, [model_text(tool_of(r)) for r in hard]) | rules_hard
        tricky_either = judged(model, [model_text(tool_of(r)) for r in tricky_dev]) | rules_tricky
        payload_either = judged(model, [model_text(tool_of(r)) for r in payload_benign]) | rules_payload
        missed: dict[str, int] = {}
        for r, hit in zip(rows, caught | rules):
            if not hit:
                missed[r["class"]] = missed.get(r["class"], 0) + 1
        row = {"scored": name, "n": len(rows), "model": round(float(caught.mean()), 3),
               "rules": round(float(rules.mean()), 3), "either": round(float((caught | rules).mean()), 3),
               "held_out_pool_flagged_either": round(float(pool_either[held_pool].mean()), 4),
               "held_out_pool_n": int(held_pool.sum()),
               "benign_jsonl_flagged_either": f"{int(pool_either[in_benign].sum())}/{int(in_benign.sum())}",
               "metatool_flagged_either": int(pool_either[sources == "metatool"].sum()),
               "livemcpbench_flagged_either": int(pool_either[sources == "livemcpbench"].sum()),
               "hard_benign_flagged_either": f"{int(hard_either.sum())}/{len(hard)}",
               "tricky_dev_flagged_either": f"{int(tricky_either.sum())}/{len(tricky_dev)}",
               "payload_benign_flagged_either": f"{int(payload_either.sum())}/{len(payload_benign)}",
               "missed_by_class": missed}
        results.append(row)
        print(json.dumps(row), flush=True)

    for split in args.leave_out:
        keep = splits != split
        model = train([t for t, k in zip(htext, keep) if k], real, syn, tricky, **opts)
        report(split, model, [r for r in hostile if r["split"] == split])
    if args.test or args.write or first_sight:
        sizes = {"hostile": len(htext), "benign_real": len(real), "benign_synthetic": len(syn),
                 "benign_tricky": len(tricky)}
        model = train(htext, real, syn, tricky, **opts, info=sizes)
        for split in FIRST_SIGHT:
            rows = [r for r in first_sight if r["split"] == split]
            if rows:
                report(split, model, rows)
        for path in args.test:
            report(path.name, model, load_jsonl(path))
        if args.write:
            model.save(MODEL_FILE)
            print(f"wrote {MODEL_FILE} (threshold {model.threshold:.4f})")
    if args.json is not None:
        args.json.write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
