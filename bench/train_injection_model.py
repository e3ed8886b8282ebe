"""Train (and measure) the injection model jit ships: ``jit/injection/injection_model.npz``.

    python -m bench.train_injection_model [--shared ../shared/data] [--write] [--sets 2 3 4 5]
        [--leave-out blind16 blind15 ...] [--leave-set-out] [--group-folds] [--test more.jsonl ...] [--json out.json]

Protocol (deterministic: same corpus, pools and options, the same arrays):

* hostile: every row of ``tests/data/injection/hostile.jsonl`` but the batches kept for first sight
  (:data:`FIRST_SIGHT`: written after the first model, never trained on), without the parameter
  descriptions that corpus reuses as filler (:func:`_without_filler`), the ``w2_train`` rows of
  ``writer2.jsonl`` (written by a writer who never saw the detector), the hostile rows of
  ``classes.jsonl`` (attacks of the kinds first sight showed the model weakest on: concealment by
  misreporting, fixed verdicts, fake system blocks, payloads in defaults and enums, claimed approval)
  and the hostile rows (weight ``--sets-hostile-weight``) of the spent held-out sets ``--sets`` (:data:`DEV_SETS`,
  ``bench/data/injection_heldout/``: each was run once unseen, then became development data);
* benign, real: every second deduplicated tool of the shared pools that is not in ``benign.jsonl``
  (:func:`bench.injection_corpus.pool_rows`, even positions); the odd positions, ``benign.jsonl`` and
  the catalogue tools of ``bench/data/catalogs/tools.jsonl`` are never trained on;
* benign, written to look hostile: ``synthetic_benign.jsonl`` (weight ``--synthetic-weight``) and, as
  the *tricky* texts (weight ``--tricky-weight``), the ``tricky_train`` rows of ``tricky_benign.jsonl``,
  the ``w2_train`` benign rows of ``writer2.jsonl``, the benign rows of ``classes.jsonl`` (agent-framework
  tools that address the assistant plainly: memory, hand-off, plans, notes, profiles); the benign rows of the
  spent held-out sets are weighted like the written benign texts (``--sets-benign-weight``) and, like them,
  do not set the threshold (weighted as tricky texts, 620 rows at 30, they pushed the real tools' scores up:
  33 of the 9,710 real tools never trained on flagged, against 12);
  ``hard_benign.jsonl``, the ``tricky_dev`` and ``w2_heldout`` rows are never trained on;
* features: :func:`jit.injection.model.features` (hashed word 1–3-grams and character
  3–5-grams, tf-idf with the training texts' idf); a class-weighted logistic regression (``--C``);
* the threshold is the higher of two quantiles of out-of-fold (5 folds) scores: the ``1 - --fp``
  quantile of the real benign training tools the model will be asked about (at least
  ``MIN_MODEL_CHARS`` characters: shorter texts are the rules' alone) and the ``1 - --tricky-fp``
  quantile of the tricky training texts;
* the corroboration score (below it the model contradicts a wording finding of the rules,
  :func:`jit.injection.detect.weighed`) is the ``--corroboration-quantile`` quantile of the
  out-of-fold scores of the hostile training texts whose rule findings are all wording: that share of
  the attacks the rules catch by their wording alone would lose their flags.

The measure (:func:`measure`) reads every sample as users get it: the rules' findings weighed by the
model just trained. ``--leave-out S`` trains once more without split S of ``hostile.jsonl`` and scores S.
``--leave-set-out`` trains once per spent held-out set without that set (both halves) and scores it: the
estimate, on text the model never read, of what the next unseen set scores.
``--test FILE`` scores a JSONL of hostile rows the model never saw. ``--write`` saves the model;
without it nothing is written.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from bench.injection_corpus import CATALOGS, CORPUS, load_jsonl, pool_rows, tool_of
from jit.injection.detect import STRUCTURAL_FLAGS, rule_findings, weighed
from jit.injection.model import (
    CHAR_NGRAMS,
    MIN_MODEL_CHARS,
    MODEL_FILE,
    WORD_NGRAMS,
    InjectionModel,
    counts,
    features,
    model_text,
)
from jit.evaluation.datasets import default_data_dir

SEED = 0
BITS = 18
C = 30.0
FP = 0.005
TRICKY_FP = 0.07
CORROBORATION_QUANTILE = 0.01
SYNTHETIC_WEIGHT = 3.0
SETS_HOSTILE_WEIGHT = 1.0
SETS_BENIGN_WEIGHT = 3.0
TRICKY_WEIGHT = 30.0
#: A parameter description repeated in this many hostile rows is the corpus's filler.
FILLER_ROWS = 3
#: Hostile batches of ``hostile.jsonl`` written after the first model and never trained on: its first-sight
#: measure (tests/test_hostile_model.py holds it).
FIRST_SIGHT = ("blind17", "blind18", "blind19", "blind20", "blind21", "blind22")
#: The held-out sets of ``bench/data/injection_heldout/`` that are spent (run once unseen, since development
#: data): the shipped model trains on them. A set not yet run is never listed here.
DEV_SETS = ("2", "3", "4", "5")


def heldout_rows(s: str, kind: str) -> list[dict]:
    """Set ``s``'s ``hostile`` or ``benign`` rows as corpus rows (``split`` ``set<s>``, ``kind`` its category)."""
    from bench.eval_injection_heldout import DATA, load

    return [{**r, "split": f"set{s}", "kind": r["category"]} for r in load(DATA / f"set{s}_{kind}.jsonl")]


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


@dataclass
class Group:
    """Training rows of one kind: their texts, label (1 hostile), sample weight and role (``hostile``,
    ``real``, ``synthetic`` or ``tricky``: the threshold is set on ``real`` and ``tricky``), and for hostile
    rows whether the rules' findings in each are all wording (the corroboration score is set on those)."""

    texts: list[str]
    label: int
    weight: float
    role: str
    wording: list[bool] = field(default_factory=list)
    #: The batch each text was written in (:func:`batch_of`); with ``group_folds`` a batch is never split between
    #: the folds that set the threshold. Empty: each text its own batch.
    batches: list[str] = field(default_factory=list)


def batch_of(rows: list[dict]) -> list[str]:
    """The batch each row was written in: a held-out set whole (``set5``), else its split (a helper's batch)
    and its kind or server (one writer wrote many of each in one split); a real tool (``source``) is its own."""
    return [r["source"] if "source" in r and "split" not in r
            else r["split"] if r.get("split", "").startswith("set")
            else f'{r.get("split")}/{r.get("kind") or r.get("server") or ""}' for r in rows]


def wording_only(rows: list[dict]) -> list[bool]:
    """Whether the rules find something in each row, and all of it wording (no structural finding)."""
    return [bool(f) and not f & STRUCTURAL_FLAGS for f in (rule_findings(tool_of(r)) for r in rows)]


def train(groups: list[Group], *, c: float = C, fp: float = FP, tricky_fp: float = TRICKY_FP,
          corroboration_quantile: float = CORROBORATION_QUANTILE, bits: int = BITS, group_folds: bool = False,
          info: dict | None = None) -> InjectionModel:
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import StratifiedGroupKFold, StratifiedKFold

    docs = [t for g in groups for t in g.texts]
    y = np.concatenate([np.full(len(g.texts), g.label, dtype=float) for g in groups])
    weight = np.concatenate([np.full(len(g.texts), g.weight) for g in groups])
    role = np.concatenate([np.full(len(g.texts), g.role) for g in groups])
    wording = np.concatenate([np.array(g.wording or [False] * len(g.texts), dtype=bool) for g in groups])
    raw_w, raw_c = counts(docs, bits)
    idf_w, idf_c = _idf(raw_w), _idf(raw_c)
    x = features(docs, bits, idf_w, idf_c)

    def fit(rows: np.ndarray) -> LogisticRegression:
        return LogisticRegression(C=c, class_weight="balanced", max_iter=5000).fit(
            x[rows], y[rows], sample_weight=weight[rows])

    oof = np.zeros(len(y))
    if group_folds:
        batch = [b for g in groups for b in (g.batches or [f"{g.role}:{i}" for i in range(len(g.texts))])]
        folds = StratifiedGroupKFold(5, shuffle=True, random_state=SEED).split(x, y, batch)
    else:
        folds = StratifiedKFold(5, shuffle=True, random_state=SEED).split(x, y)
    for a, b in folds:
        oof[b] = fit(a).decision_function(x[b])
    # The threshold is set on the texts the model will be asked about (long enough, see MIN_MODEL_CHARS): at most
    # fp of the real tools and tricky_fp of the tricky texts above it, out of fold.
    long = np.array([len(t.strip()) >= MIN_MODEL_CHARS for t in docs])
    threshold = float(np.quantile(oof[(role == "real") & long], 1 - fp))
    if ((role == "tricky") & long).any():
        threshold = max(threshold, float(np.quantile(oof[(role == "tricky") & long], 1 - tricky_fp)))
    attacks = (y == 1) & wording & long
    corroboration = float(np.quantile(oof[attacks], corroboration_quantile)) if attacks.any() else float("-inf")
    model = fit(np.arange(len(y)))
    sizes = {g.role: 0 for g in groups}
    for g in groups:
        sizes[g.role] += len(g.texts)
    return InjectionModel(bits=bits, idf_word=idf_w, idf_char=idf_c, coef=model.coef_[0].astype(np.float32),
                          intercept=float(model.intercept_[0]), threshold=threshold, corroboration=corroboration,
                          info={"group_folds": group_folds, "word_ngrams": list(WORD_NGRAMS), "char_ngrams": list(CHAR_NGRAMS), "C": c,
                                "fp_target": fp, "tricky_fp_target": tricky_fp,
                                "corroboration_quantile": corroboration_quantile, **sizes, **(info or {})})


@dataclass
class Sample:
    """Rows measured after training: ``hostile`` says which way a flag counts, ``trained`` whether the
    model read them in training (then the figure is in-sample)."""

    name: str
    rows: list[dict]
    hostile: bool
    trained: bool = False
    found: list[set[str]] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.found = [rule_findings(tool_of(r)) for r in self.rows]


def measure(model: InjectionModel, sample: Sample) -> dict:
    """The sample's share flagged by the rules alone and as users get it (the rules weighed by ``model``)."""
    final = weighed([tool_of(r) for r in sample.rows], [set(f) for f in sample.found], model)
    rules = sum(bool(f) for f in sample.found)
    caught = sum(bool(f) for f in final)
    missed = Counter(r.get("kind") or r.get("class") for r, f in zip(sample.rows, final) if bool(f) != sample.hostile)
    return {"sample": sample.name, "n": len(sample.rows), "hostile": sample.hostile, "trained_on": sample.trained,
            "rules": rules, "flagged": caught, "rate": round(caught / max(1, len(sample.rows)), 4),
            "wrong_by_kind": dict(sorted(missed.items(), key=lambda kv: str(kv[0]))),
            "wrong": [r.get("id") or r.get("source") or r.get("name") for r, f in zip(sample.rows, final)
                      if bool(f) != sample.hostile]}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shared", type=Path, default=None, help="the shared data directory (pools)")
    ap.add_argument("--C", type=float, default=C)
    ap.add_argument("--fp", type=float, default=FP, help="false-positive rate on real tools the threshold allows")
    ap.add_argument("--tricky-fp", type=float, default=TRICKY_FP,
                    help="false-positive rate on the tricky training texts the threshold allows")
    ap.add_argument("--corroboration-quantile", type=float, default=CORROBORATION_QUANTILE,
                    help="share of the attacks the rules catch by wording that the model may contradict")
    ap.add_argument("--synthetic-weight", type=float, default=SYNTHETIC_WEIGHT)
    ap.add_argument("--tricky-weight", type=float, default=TRICKY_WEIGHT)
    ap.add_argument("--leave-out", nargs="*", default=[], help="hostile.jsonl splits to measure at first sight")
    ap.add_argument("--sets", nargs="*", choices=DEV_SETS, default=list(DEV_SETS),
                    help="spent held-out sets to train on")
    ap.add_argument("--sets-hostile-weight", type=float, default=SETS_HOSTILE_WEIGHT,
                    help="sample weight of the spent sets' hostile rows (0: their benign rows only)")
    ap.add_argument("--sets-benign-weight", type=float, default=SETS_BENIGN_WEIGHT,
                    help="sample weight of the spent sets' benign rows (0: their hostile rows only)")
    ap.add_argument("--leave-set-out", action="store_true",
                    help="per set of --sets: train without it, score its hostile and benign rows")
    ap.add_argument("--test", nargs="*", type=Path, default=[], help="JSONL files of unseen hostile rows")
    ap.add_argument("--group-folds", action="store_true",
                    help="the threshold's folds keep each batch a text was written in whole (bench.train_injection_model"
                         ".batch_of)")
    ap.add_argument("--write", action="store_true", help=f"save the model to {MODEL_FILE}")
    ap.add_argument("--json", type=Path, default=None)
    args = ap.parse_args(argv)

    corpus = load_jsonl(CORPUS / "hostile.jsonl")
    writer2 = load_jsonl(CORPUS / "writer2.jsonl")
    tricky_rows = load_jsonl(CORPUS / "tricky_benign.jsonl")
    payload = load_jsonl(CORPUS / "payload.jsonl")
    held_benign = {r["source"] for r in load_jsonl(CORPUS / "benign.jsonl")}
    pool = pool_rows(args.shared or default_data_dir())
    train_pool = [r for i, r in enumerate(pool) if i % 2 == 0 and r["source"] not in held_benign]

    hostile = [r for r in corpus if r["split"] not in FIRST_SIGHT]
    w2_hostile = [r for r in writer2 if r["label"] == "hostile" and r["split"] == "w2_train"]
    w2_benign = [r for r in writer2 if r["label"] == "benign" and r["split"] == "w2_train"]
    classes = load_jsonl(CORPUS / "classes.jsonl")
    sets_hostile = [r for s in args.sets for r in heldout_rows(s, "hostile")]
    sets_benign = [r for s in args.sets for r in heldout_rows(s, "benign")]
    trained_hostile = [*hostile, *w2_hostile, *(r for r in classes if r["label"] == "hostile")]
    tricky = [*[r for r in tricky_rows if r["split"] == "tricky_train"], *w2_benign,
              *(r for r in classes if r["label"] == "benign")]

    synthetic = load_jsonl(CORPUS / "synthetic_benign.jsonl")

    def texts(rows: list[dict]) -> list[str]:
        return [model_text(tool_of(r)) for r in rows]

    def groups(attacks: list[dict], set_attacks: list[dict] = sets_hostile,
               set_benign: list[dict] = sets_benign) -> list[Group]:
        return [Group(texts(_without_filler(attacks)), 1, 1.0, "hostile", wording_only(attacks), batch_of(attacks)),
                *([Group(texts(set_attacks), 1, args.sets_hostile_weight, "hostile", wording_only(set_attacks),
                         batch_of(set_attacks))]
                  if args.sets_hostile_weight > 0 and set_attacks else []),
                *([Group(texts(set_benign), 0, args.sets_benign_weight, "synthetic", batches=batch_of(set_benign))]
                  if args.sets_benign_weight > 0 and set_benign else []),
                Group(texts(train_pool), 0, 1.0, "real"),
                Group(texts(synthetic), 0, args.synthetic_weight, "synthetic", batches=batch_of(synthetic)),
                Group(texts(tricky), 0, args.tricky_weight, "tricky", batches=batch_of(tricky))]

    opts = {"c": args.C, "fp": args.fp, "tricky_fp": args.tricky_fp,
            "corroboration_quantile": args.corroboration_quantile, "group_folds": args.group_folds}
    catalogs = [{**r, "source": f"catalogs:{i}"} for i, r in enumerate(load_jsonl(CATALOGS))]
    samples = [
        Sample("writer2 held-out hostile", [r for r in writer2 if r["label"] == "hostile"
                                            and r["split"] == "w2_heldout"], True),
        Sample("writer2 held-out benign", [r for r in writer2 if r["label"] == "benign"
                                           and r["split"] == "w2_heldout"], False),
        *(Sample(split, [r for r in corpus if r["split"] == split], True) for split in FIRST_SIGHT),
        Sample("payload hostile", [r for r in payload if r["label"] == "hostile"], True),
        Sample("payload benign", [r for r in payload if r["label"] == "benign"], False),
        Sample("tricky_dev", [r for r in tricky_rows if r["split"] == "tricky_dev"], False),
        Sample("hard_benign", load_jsonl(CORPUS / "hard_benign.jsonl"), False),
        Sample("pools never trained on", [r for i, r in enumerate(pool)
                                          if i % 2 == 1 or r["source"] in held_benign], False),
        Sample("catalogs", catalogs, False),
    ]
    results = []

    def report(model: InjectionModel, sample: Sample) -> None:
        row = measure(model, sample)
        results.append(row)
        print(json.dumps(row), flush=True)

    for split in args.leave_out:
        model = train(groups([r for r in trained_hostile if r.get("split") != split]), **opts)
        report(model, Sample(f"left out: {split}", [r for r in corpus if r["split"] == split], True))
    if args.leave_set_out:
        for s in args.sets:
            model = train(groups(trained_hostile, [r for r in sets_hostile if r["split"] != f"set{s}"],
                                 [r for r in sets_benign if r["split"] != f"set{s}"]), **opts)
            for kind in ("hostile", "benign"):
                report(model, Sample(f"left out: set {s} {kind}", heldout_rows(s, kind), kind == "hostile"))
    if args.test or args.write or not (args.leave_out or args.leave_set_out):
        model = train(groups(trained_hostile), **opts)
        print(f"threshold {model.threshold:.4f}, corroboration {model.corroboration:.4f}", flush=True)
        for sample in samples:
            report(model, sample)
        for path in args.test:
            report(model, Sample(path.name, load_jsonl(path), True))
        if args.write:
            model.save(MODEL_FILE)
            print(f"wrote {MODEL_FILE}")
    if args.json is not None:
        args.json.write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
