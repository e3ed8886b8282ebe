"""Train and measure the semantic reader of tool text (:mod:`bench.injection_semantic`); it is not shipped.

    python -m bench.train_injection_semantic [--shared DIR] [--cache /tmp/injection_segments.npz] [--loso]
        [--fp 0.002] [--C 1.0] [--rounds 2] [--margin 1.0] [--hidden 128] [--epochs 60] [--cost N] [--json out.json]

Corpora: those of ``bench/train_injection_model.py`` (the hostile corpus but its first-sight batches, without its
filler parameter descriptions, writer 2's and ``classes.jsonl``'s training rows; the even half of the shared pools
but ``benign.jsonl``; the synthetic and tricky benign texts, weight ``--tricky-weight``) and the held-out sets 2-7
(all spent; their benign rows weighted like the tricky texts). Never trained on, measured for false positives: the
odd half of the pools with ``benign.jsonl`` (9,710 tools) and the 1,352 catalogue tools of ``bench/data/catalogs``.

Every segment (:func:`bench.injection_semantic.segments`) is embedded once by jit's sentence model (the bulk
embedder a sync uses) and kept in ``--cache`` (keyed by the segment's text), so a run after the first embeds nothing.

Training (:func:`train_head`, deterministic): multiple-instance learning. Every segment of a benign text is a
negative. A hostile text's segments start as positives weighted 1/n each; for ``--rounds`` rounds a class-balanced
logistic regression is fitted and each hostile text keeps as positives only its segments scoring within
``--margin`` of its best one (the honest documentation around a payload is no evidence). The head is then a
one-hidden-layer perceptron (``--hidden`` units, ``--epochs``) on those segments, class-balanced. A tool's score
is its best segment's; the threshold is the ``1 - --fp`` quantile of the out-of-fold (5 folds, by text) scores of
the real training tools.

Two ways of joining the shipped detector (rules and the shipped n-gram model, :func:`jit.injection.detect.detect_hostile_many`)
are measured (:class:`Reader`): ``or`` (a tool the detector leaves unflagged is flagged when its semantic score passes
the threshold) and ``joint`` (when its semantic and its n-gram score both rank high among the real training tools').

``--loso``: for each set k of ``--sets`` (2-7), a head trained without set k scores set k (the thresholds are the head's trained on
every set: they are set on the real tools, which every fold trains on alike). Then, with the head trained on every
set: the real tools never trained on (and which it newly flags), ``tricky_dev`` and the first-sight batches.
``--misses`` adds, for each hostile row the shipped detector misses, the percentile of its semantic score among the real
tools never trained on. ``--cost N``: the wall time of the detector and of the reader on N real tools never trained on, best of 3.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from bench.injection_corpus import CATALOGS, CORPUS, load_jsonl, pool_rows, tool_of
from bench.train_injection_model import FIRST_SIGHT, _without_filler, heldout_rows
from bench.injection_semantic import SemanticHead, segments
from jit.evaluation.datasets import default_data_dir

SEED = 0
C = 1.0
FP = 0.002
ROUNDS = 2
MARGIN = 1.0
HIDDEN = 128
ALPHA = 1e-3
EPOCHS = 60
TRICKY_WEIGHT = 3.0
SETS = ("2", "3", "4", "5", "6", "7")
MODEL_NAME = "all-MiniLM-L6-v2"
#: The segments' vectors, embedded once: keyed by the model, so another model's are never reused.
CACHE = Path(f"/tmp/injection_segments.{MODEL_NAME}.npz")


@dataclass
class Text:
    """One tool of a corpus: its segments, label (1 hostile), sample weight, role (``hostile``, ``real``,
    ``synthetic``, ``tricky``, ``set``) and where it comes from (its set for the held-out sets)."""

    segs: list[str]
    label: int
    weight: float
    role: str
    origin: str
    row: dict


def corpus(shared: Path) -> dict[str, list[dict]]:
    """Every corpus this script reads, by name."""
    hostile = load_jsonl(CORPUS / "hostile.jsonl")
    writer2 = load_jsonl(CORPUS / "writer2.jsonl")
    classes = load_jsonl(CORPUS / "classes.jsonl")
    tricky = load_jsonl(CORPUS / "tricky_benign.jsonl")
    held_benign = {r["source"] for r in load_jsonl(CORPUS / "benign.jsonl")}
    pool = pool_rows(shared)
    out = {
        "hostile": _without_filler([r for r in hostile if r["split"] not in FIRST_SIGHT]
                                   + [r for r in writer2 if r["label"] == "hostile" and r["split"] == "w2_train"]
                                   + [r for r in classes if r["label"] == "hostile"]),
        "first_sight": [r for r in hostile if r["split"] in FIRST_SIGHT],
        "real": [r for i, r in enumerate(pool) if i % 2 == 0 and r["source"] not in held_benign],
        "synthetic": load_jsonl(CORPUS / "synthetic_benign.jsonl"),
        "tricky": [*(r for r in tricky if r["split"] == "tricky_train"),
                   *(r for r in writer2 if r["label"] == "benign" and r["split"] == "w2_train"),
                   *(r for r in classes if r["label"] == "benign")],
        "tricky_dev": [r for r in tricky if r["split"] == "tricky_dev"],
        "held_pool": [r for i, r in enumerate(pool) if i % 2 == 1 or r["source"] in held_benign],
        "catalogs": [{**r, "source": f"catalogs:{i}"} for i, r in enumerate(load_jsonl(CATALOGS))],
    }
    for s in SETS:
        out[f"set{s}_hostile"] = heldout_rows(s, "hostile")
        out[f"set{s}_benign"] = heldout_rows(s, "benign")
    return out


def embed_cached(texts: Sequence[str], cache: Path) -> dict[str, np.ndarray]:
    """The vector of every text, embedding only those ``cache`` lacks (then rewriting it)."""
    have: dict[str, np.ndarray] = {}
    if cache.exists():
        with np.load(cache, allow_pickle=False) as z:
            keys = json.loads(str(z["keys"]))
            have = dict(zip(keys, z["vectors"]))
    missing = sorted(set(texts) - have.keys())
    if missing:
        from jit.embedding.onnx_embedder import OnnxEmbedder

        embedder = OnnxEmbedder(MODEL_NAME)
        t0 = time.perf_counter()
        with embedder.bulk(len(missing)) as bulk:
            vectors = bulk.embed(missing)
        print(f"embedded {len(missing)} segments in {time.perf_counter() - t0:.0f} s", file=sys.stderr, flush=True)
        have.update(zip(missing, np.asarray(vectors, dtype=np.float32)))
        keys = sorted(have)
        np.savez(cache, keys=np.str_(json.dumps(keys)), vectors=np.stack([have[k] for k in keys]))
    return have


def _fit_linear(x: np.ndarray, y: np.ndarray, w: np.ndarray, c: float):
    from sklearn.linear_model import LogisticRegression

    return LogisticRegression(C=c, max_iter=3000).fit(x, y, sample_weight=_balanced(y, w))


def _balanced(y: np.ndarray, w: np.ndarray) -> np.ndarray:
    """``w`` scaled so that the positives' weights sum to the negatives', with mean 1."""
    w = w.copy()
    w[y == 1] *= w[y == 0].sum() / max(w[y == 1].sum(), 1e-9)
    return w / w.mean()


def _instances(texts: Sequence[Text], vectors: dict[str, np.ndarray],
               keep: list[np.ndarray] | None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    xs, ys, ws = [], [], []
    for i, t in enumerate(texts):
        if not t.segs:
            continue
        mask = keep[i] if keep is not None else np.ones(len(t.segs), dtype=bool)
        chosen = [s for s, m in zip(t.segs, mask) if m]
        xs += [vectors[s] for s in chosen]
        ys += [t.label] * len(chosen)
        ws += [t.weight / len(chosen)] * len(chosen)
    return np.stack(xs), np.array(ys), np.array(ws)


def positives(texts: Sequence[Text], vectors: dict[str, np.ndarray], c: float = C, rounds: int = ROUNDS,
              margin: float = MARGIN) -> list[np.ndarray]:
    """Which segments of each text are positives (every segment of a benign text is a negative): multiple-instance
    learning with a linear model, each hostile text keeping its segments within ``margin`` of its best one."""
    keep: list[np.ndarray] | None = None
    for _ in range(rounds):
        x, y, w = _instances(texts, vectors, keep)
        model = _fit_linear(x, y, w, c)
        keep = []
        for t in texts:
            if t.label == 0 or not t.segs:
                keep.append(np.ones(len(t.segs), dtype=bool))
                continue
            s = model.decision_function(np.stack([vectors[g] for g in t.segs]))
            keep.append(s >= s.max() - margin)
    return keep or [np.ones(len(t.segs), dtype=bool) for t in texts]


def fit_head(texts: Sequence[Text], vectors: dict[str, np.ndarray], *, c: float = C, rounds: int = ROUNDS,
             margin: float = MARGIN, hidden: int = HIDDEN, alpha: float = ALPHA,
             epochs: int = EPOCHS) -> tuple[np.ndarray, np.ndarray, np.ndarray, float]:
    """The perceptron's arrays (w1, b1, w2, b2), trained on the segments :func:`positives` chose."""
    from sklearn.neural_network import MLPClassifier

    from sklearn.exceptions import ConvergenceWarning

    x, y, w = _instances(texts, vectors, positives(texts, vectors, c, rounds, margin))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        mlp = MLPClassifier((hidden,), alpha=alpha, max_iter=epochs, random_state=SEED).fit(
            x, y, sample_weight=_balanced(y, w))
    return (mlp.coefs_[0].astype(np.float32), mlp.intercepts_[0].astype(np.float32),
            mlp.coefs_[1][:, 0].astype(np.float32), float(mlp.intercepts_[1][0]))


def text_scores(head: SemanticHead, texts: Sequence[Text], vectors: dict[str, np.ndarray]) -> np.ndarray:
    """Each text's best segment's score (minus infinity: no segment)."""
    out = np.full(len(texts), -np.inf)
    for i, t in enumerate(texts):
        if t.segs:
            out[i] = float(head.segment_scores(np.stack([vectors[s] for s in t.segs])).max())
    return out


def train_head(texts: Sequence[Text], vectors: dict[str, np.ndarray], *, fp: float = FP, folds: bool = True,
               **opts) -> tuple[SemanticHead, np.ndarray]:
    """The head (:func:`fit_head` on every text), its threshold (the ``1 - fp`` quantile of the out-of-fold scores
    of the real tools; 5 folds, by text; ``folds=False``: no threshold, plus infinity) and those out-of-fold
    scores (one per text; minus infinity for a text in no fold)."""
    from sklearn.model_selection import StratifiedKFold

    y = np.array([t.label for t in texts])
    oof = np.full(len(texts), -np.inf)
    threshold = float("inf")
    if folds:
        for a, b in StratifiedKFold(5, shuffle=True, random_state=SEED).split(np.zeros(len(y)), y):
            fold = SemanticHead(*fit_head([texts[i] for i in a], vectors, **opts), threshold=0.0,
                                model_name=MODEL_NAME, info={})
            oof[b] = text_scores(fold, [texts[i] for i in b], vectors)
        real = np.array([t.role == "real" and bool(t.segs) for t in texts])
        threshold = float(np.quantile(oof[real], 1 - fp))
    head = SemanticHead(*fit_head(texts, vectors, **opts), threshold=threshold, model_name=MODEL_NAME,
                        info={**opts, "fp_target": fp, "texts": int(len(texts)), "hostile": int(y.sum())})
    return head, oof


def texts_of(rows: Sequence[dict], label: int, weight: float, role: str, origin: str) -> list[Text]:
    return [Text(segments(tool_of(r)), label, weight, role, origin, r) for r in rows]


def training_texts(c: dict[str, list[dict]], sets: Sequence[str], tricky_weight: float = TRICKY_WEIGHT) -> list[Text]:
    return [*texts_of(c["hostile"], 1, 1.0, "hostile", "corpus"),
            *(t for s in sets for t in texts_of(c[f"set{s}_hostile"], 1, 1.0, "hostile", f"set{s}")),
            *(t for s in sets for t in texts_of(c[f"set{s}_benign"], 0, tricky_weight, "set", f"set{s}")),
            *texts_of(c["real"], 0, 1.0, "real", "pool"),
            *texts_of(c["synthetic"], 0, tricky_weight, "synthetic", "synthetic"),
            *texts_of(c["tricky"], 0, tricky_weight, "tricky", "tricky")]


def _ranks(scores: np.ndarray, reference: np.ndarray) -> np.ndarray:
    """Each score's rank among ``reference`` (the share of it below), 0 to 1."""
    return np.searchsorted(np.sort(reference), scores, side="left") / len(reference)


@dataclass
class Reader:
    """How the semantic reader joins the shipped detector: ``or``: a tool the detector leaves unflagged is flagged when its
    semantic score passes the head's threshold; ``joint``: when both its semantic and its n-gram score rank high
    among the real training tools' (the lower of the two ranks above the ``1 - fp`` quantile of the same lower rank
    of those tools: the two readers must agree)."""

    head: SemanticHead
    real_semantic: np.ndarray
    real_ngram: np.ndarray
    joint_threshold: float

    def flags(self, mode: str, base: Sequence[tuple[str, ...]], semantic: np.ndarray, ngram: np.ndarray) -> np.ndarray:
        found = np.array([bool(b) for b in base])
        if mode == "or":
            return found | (semantic > self.head.threshold)
        joint = np.minimum(_ranks(semantic, self.real_semantic), _ranks(ngram, self.real_ngram))
        return found | (joint > self.joint_threshold)


def cost(head: SemanticHead, rows: Sequence[dict]) -> dict:
    """Wall time (best of 3) of the shipped detector on ``rows`` and of the semantic reader on top: segmenting, embedding
    (jit's bulk embedder, as a sync's pass runs it, and the query runtime) and the head; peak RSS before and after."""
    import resource

    from jit.embedding.onnx_embedder import OnnxEmbedder
    from jit.injection.detect import detect_hostile_many

    tools = [tool_of(r) for r in rows]
    detect_hostile_many(tools[:10])

    def best(run) -> float:
        times = []
        for _ in range(3):
            t0 = time.perf_counter()
            run()
            times.append(time.perf_counter() - t0)
        return min(times)

    rss0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    detector = best(lambda: detect_hostile_many(tools))
    embedder = OnnxEmbedder(MODEL_NAME)
    embedder.embed(["warm"])
    segs = [segments(t) for t in tools]
    flat = [s for ss in segs for s in ss]

    def read(bulk: bool) -> None:
        if bulk:
            with embedder.bulk(len(flat)) as b:
                v = b.embed(flat)
        else:
            v = embedder.embed(flat)
        head.segment_scores(np.asarray(v))

    split = best(lambda: [segments(t) for t in tools])
    bulk, query = best(lambda: read(True)), best(lambda: read(False))
    return {"tools": len(tools), "segments": len(flat), "detector_s": round(detector, 3),
            "segmenting_s": round(split, 3), "embed_and_head_bulk_s": round(bulk, 3),
            "embed_and_head_query_runtime_s": round(query, 3),
            "tools_per_s_detector": round(len(tools) / detector), "tools_per_s_with_reader_bulk":
                round(len(tools) / (detector + split + bulk)),
            "peak_rss_mb_before": rss0 // 1024, "peak_rss_mb_after": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024}


def ngram_scores(rows: Sequence[dict]) -> np.ndarray:
    """The shipped n-gram model's score of each row (minus infinity: too short for it)."""
    from jit.injection.model import model_text
    from jit.injection.model import text_scores as model_scores

    return np.array([-np.inf if s is None else s for s in model_scores([model_text(tool_of(r)) for r in rows])])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shared", type=Path, default=None)
    ap.add_argument("--cache", type=Path, default=CACHE)
    ap.add_argument("--C", type=float, default=C)
    ap.add_argument("--fp", type=float, default=FP)
    ap.add_argument("--rounds", type=int, default=ROUNDS)
    ap.add_argument("--margin", type=float, default=MARGIN)
    ap.add_argument("--hidden", type=int, default=HIDDEN)
    ap.add_argument("--epochs", type=int, default=EPOCHS)
    ap.add_argument("--tricky-weight", type=float, default=TRICKY_WEIGHT)
    ap.add_argument("--loso", action="store_true", help="train once without each set of --sets and score it")
    ap.add_argument("--sets", nargs="*", choices=SETS, default=list(SETS), help="the sets --loso leaves out in turn")
    ap.add_argument("--misses", action="store_true",
                    help="with --loso: each hostile row the shipped detector misses, its semantic score's percentile "
                         "among the real tools never trained on")
    ap.add_argument("--cost", type=int, default=0, metavar="N",
                    help="only time the reader on N real tools never trained on (after training a head)")
    ap.add_argument("--json", type=Path, default=None)
    args = ap.parse_args(argv)
    from jit.injection.detect import detect_hostile_many

    c = corpus(args.shared or default_data_dir())
    every = {name: texts_of(rows, 0, 1.0, name, name) for name, rows in c.items()}
    vectors = embed_cached([s for ts in every.values() for t in ts for s in t.segs], args.cache)
    opts = {"c": args.C, "rounds": args.rounds, "margin": args.margin, "hidden": args.hidden, "epochs": args.epochs}
    results: list[dict] = []
    if args.cost:
        head, _ = train_head(training_texts(c, SETS, args.tricky_weight), vectors, fp=args.fp, folds=False, **opts)
        print(json.dumps(cost(head, c["held_pool"][:args.cost])), flush=True)
        return 0

    texts = training_texts(c, SETS, args.tricky_weight)
    head, oof = train_head(texts, vectors, fp=args.fp, **opts)
    real = np.array([t.role == "real" for t in texts])
    real_ngram = ngram_scores(c["real"])
    joint = np.minimum(_ranks(oof[real], oof[real]), _ranks(real_ngram, real_ngram))
    reader = Reader(head, oof[real], real_ngram, float(np.quantile(joint, 1 - args.fp)))
    print(f"threshold {head.threshold:.3f}, joint {reader.joint_threshold:.4f}", file=sys.stderr, flush=True)

    def report(name: str, k_head: SemanticHead, hostile: bool | None = None) -> None:
        base = detect_hostile_many([tool_of(r) for r in c[name]])
        semantic = text_scores(k_head, every[name], vectors)
        ngram = ngram_scores(c[name])
        row: dict = {"sample": name, "n": len(base), "today": sum(map(bool, base))}
        for mode in ("or", "joint"):
            flagged = Reader(k_head, reader.real_semantic, reader.real_ngram, reader.joint_threshold).flags(
                mode, base, semantic, ngram)
            row[mode] = int(flagged.sum())
            if hostile is None:  # real tools: which the reader newly flags
                row[f"{mode}_new"] = [r.get("source") or r.get("name") for r, b, f in zip(c[name], base, flagged)
                                      if f and not b]
        if hostile and args.misses:
            pool = np.sort(text_scores(k_head, every["held_pool"], vectors))
            row["misses"] = [{"id": r.get("id"), "category": r.get("category"),
                              "percentile": round(100 * float(np.searchsorted(pool, x)) / len(pool), 2)}
                             for r, b, x in zip(c[name], base, semantic) if not b]
        results.append(row)
        print(json.dumps(row), flush=True)

    if args.loso:
        for k in args.sets:
            k_head, _ = train_head(training_texts(c, [s for s in SETS if s != k], args.tricky_weight), vectors,
                                   fp=args.fp, folds=False, **opts)
            # the thresholds are the full head's (set on the real tools, which every fold trains on alike)
            k_head = SemanticHead(k_head.w1, k_head.b1, k_head.w2, k_head.b2, head.threshold, MODEL_NAME, k_head.info)
            report(f"set{k}_hostile", k_head, True)
            report(f"set{k}_benign", k_head, False)
    for name in ("held_pool", "catalogs", "tricky_dev", "first_sight"):
        report(name, head, None if name in ("held_pool", "catalogs") else name == "first_sight")
    if args.json is not None:
        args.json.write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
