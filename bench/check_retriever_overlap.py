"""The retriever's training data must not hold anything jit is measured on: this checks it.

Every training query and every training tool's description is compared with every query, task,
step and tool description of the evaluation sets (:data:`SHARED_SETS` under ``--data``, the shared
benchmark directory, and :data:`EVAL_GLOBS` in the repository). A training text fails when its
normalised form (lower case, words of letters and digits only) equals an evaluation text's, or when
the Jaccard similarity of their word-trigram sets (word sets, for a text of fewer than three
words) is >= :data:`JACCARD` (0.8): a near copy, whatever was reworded at the edges.

``python -m bench.check_retriever_overlap`` reports and exits 1 when anything fails;
``--apply`` drops what fails (a pair whose query fails; a tool whose description fails, and the
pairs that need it) from bench/data/retriever_train and rewrites the files. The report is a JSON
object (the manifest records the one of the committed files).
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import re
import sys
from collections import Counter, defaultdict
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from .build_retriever_data import OUT, _write_gz

ROOT = Path(__file__).resolve().parent.parent
JACCARD = 0.8
#: The evaluation sets: the shared benchmark data (``--data``) and the repository's own.
SHARED_SETS = ("livemcpbench", "stabletoolbench", "metatool", "toucan_smithery")
EVAL_GLOBS = ("bench/data/steps/*.jsonl", "bench/data/roles/*.jsonl", "bench/data/labels/*.jsonl",
              "bench/data/catalogs/*.jsonl", "tests/data/*.jsonl", "tests/data/*/*.jsonl")
#: The keys whose strings are queries or tool texts, at any depth of a record.
TEXT_KEYS = frozenset({"query", "task", "step", "annotated_steps", "description", "merged_tool_description",
                       "server_description"})
MIN_CHARS = 12
_WORD = re.compile(r"[^\W_]+")


def normalise(text: str) -> str:
    return " ".join(_WORD.findall(text.lower()))


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, list):
        for v in value:
            yield from _strings(v)


def _texts(record: Any) -> Iterator[str]:
    if isinstance(record, dict):
        for key, value in record.items():
            if key in TEXT_KEYS:
                yield from (s for s in _strings(value) if len(s.strip()) >= MIN_CHARS)
            elif isinstance(value, (dict, list)):
                yield from _texts(value)
    elif isinstance(record, list):
        for v in record:
            yield from _texts(v)


def eval_files(data: Path) -> list[Path]:
    files = [f for s in SHARED_SETS for f in sorted((data / s).glob("*.jsonl"))]
    return files + [f for g in EVAL_GLOBS for f in sorted(ROOT.glob(g))]


def eval_texts(files: list[Path]) -> list[str]:
    seen: dict[str, None] = {}
    for path in files:
        with open(path, encoding="utf-8") as fh:
            for line in fh:
                if line.strip():
                    for text in _texts(json.loads(line)):
                        seen.setdefault(" ".join(text.split())[:1000])
    return list(seen)


def _read(path: Path) -> list[dict[str, Any]]:
    with gzip.open(path, "rt", encoding="utf-8") as fh:
        return [json.loads(line) for line in fh]


def shingles(text: str) -> frozenset[str]:
    words = normalise(text).split()
    if len(words) < 3:
        return frozenset(words)
    return frozenset(" ".join(words[i:i + 3]) for i in range(len(words) - 2))


def failing(train: list[str], evals: list[str]) -> dict[str, tuple[str, float]]:
    """The training texts that fail either check, each with the evaluation text it is nearest and
    their Jaccard similarity (1.0 for an equal normalised text)."""
    by_norm = {normalise(e): e for e in evals}
    eval_sets = [shingles(e) for e in evals]
    index: dict[str, list[int]] = defaultdict(list)
    for i, s in enumerate(eval_sets):
        for g in s:
            index[g].append(i)
    bad: dict[str, tuple[str, float]] = {}
    for t in train:
        if normalise(t) in by_norm:
            bad[t] = (by_norm[normalise(t)], 1.0)
            continue
        mine = shingles(t)
        shared: Counter[int] = Counter(i for g in mine for i in index.get(g, ()))
        best, score = -1, 0.0
        for i, n in shared.items():
            jaccard = n / (len(mine) + len(eval_sets[i]) - n)
            if jaccard > score:
                best, score = i, jaccard
        if score >= JACCARD:
            bad[t] = (evals[best], round(score, 4))
    return bad


def check(data: Path, out: Path, apply: bool) -> dict[str, Any]:
    files = eval_files(data)
    evals = eval_texts(files)
    tools = _read(out / "tools.jsonl.gz")
    pairs = _read(out / "pairs.jsonl.gz")
    train = sorted({p["query"] for p in pairs} | {t["description"] for t in tools if len(t["description"]) >= MIN_CHARS})
    bad = failing(train, evals)
    bad_tools = {t["id"] for t in tools if t["description"] in bad}
    kept_pairs = [p for p in pairs if p["query"] not in bad and not bad_tools & set(p["tools"])]
    for p in kept_pairs:
        if "candidates" in p:
            p["candidates"] = [c for c in p["candidates"] if c not in bad_tools]
    kept_tools = [t for t in tools if t["id"] not in bad_tools]
    report = {
        "check": f"normalised text equal, or word-trigram Jaccard >= {JACCARD}",
        "eval_files": [str(f.relative_to(data) if f.is_relative_to(data) else f.relative_to(ROOT)) for f in files],
        "eval_texts": len(evals),
        "train_texts": len(train),
        "failing_texts": len(bad),
        "dropped_pairs": len(pairs) - len(kept_pairs),
        "dropped_tools": len(bad_tools),
        "examples": [{"train": t, "eval": e, "jaccard": s} for t, (e, s) in sorted(bad.items())[:10]],
    }
    if apply and bad:
        _write_gz(out / "tools.jsonl.gz", kept_tools)
        _write_gz(out / "pairs.jsonl.gz", kept_pairs)
    return report


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--data", type=Path, default=Path(os.environ.get("JIT_DATA_DIR", "/work/shared/data")),
                        help="the shared benchmark data directory (livemcpbench, stabletoolbench, ...)")
    parser.add_argument("--out", type=Path, default=OUT, help="the training data directory")
    parser.add_argument("--apply", action="store_true", help="drop what fails and rewrite the training files")
    args = parser.parse_args(argv)
    missing = [s for s in SHARED_SETS if not (args.data / s).is_dir()]
    if missing:
        print(f"error: {args.data} lacks {', '.join(missing)} (set --data or JIT_DATA_DIR)", file=sys.stderr)
        return 2
    report = check(args.data, args.out, args.apply)
    print(json.dumps(report, indent=1, ensure_ascii=False))
    return 1 if report["failing_texts"] and not args.apply else 0


if __name__ == "__main__":
    sys.exit(main())
