"""Multi-step training tasks composed from bench/data/retriever_train's one-call queries.

The training queries ask for one call each (Seal-Tools, BFCL, ToolAlpaca), while the tasks jit
serves ask for several steps over servers whose tools are siblings. A composed task joins two or
three queries of one server (else of one source) with a varied joiner ("…, then …", "First …;
after that …"), and needs the union of their tools; its hard negatives are the other tools of
those servers (the siblings) and the tools BM25 ranks high for it that it does not need.

Nothing here reads an evaluation set except :func:`overlap`, which runs the overlap check of
:mod:`bench.check_retriever_overlap` over the composed texts (they are joins of checked queries,
and a join must not become a near copy of an evaluation task either). ::

    python -m bench.compose_tasks            # counts, examples and the overlap check
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
from collections import defaultdict
from pathlib import Path
from typing import Any

from .train_retriever import DATA, V1_SOURCES, read_pairs, read_rows

#: How one part leads into the next; ``{a}`` and ``{b}`` are the parts (the first with its end
#: stop cut, the second starting in lower case).
JOINERS = (
    "{a}, then {b}",
    "{a}; then {b}",
    "{a}, and after that {b}",
    "{a}. Next, {b}",
    "{a}, and also {b}",
    "First {a}; then {b}",
    "{a}. Once that is done, {b}",
    "{a}, and {b}",
    "{a}. Then {b}",
    "{a}; afterwards {b}",
)
#: The longest the parts of a composed task may be together, in characters, joiners not counted (a
#: query of half this length or more is never a part).
MAX_CHARS = 600
#: The share of tasks joined across the servers of one source rather than within one server.
CROSS_SERVER = 0.3


def _trim(text: str) -> str:
    return re.sub(r"[\s.!?;,]+$", "", text.strip().strip('"').strip())


def _lower_first(text: str) -> str:
    # "Retrieve the…" -> "retrieve the…", but an acronym or a name in capitals stays ("NASA", "I'm").
    if len(text) > 1 and text[0].isupper() and text[1].islower():
        return text[0].lower() + text[1:]
    return text


def join(parts: list[str], rng: random.Random) -> str:
    out = _trim(parts[0])
    for part in parts[1:]:
        pattern = rng.choice(JOINERS)
        if pattern.startswith("First") and out != _trim(parts[0]):
            pattern = "{a}, then {b}"  # "First" opens a task only
        a = _lower_first(out) if pattern.startswith("First") else out
        out = pattern.format(a=a, b=_lower_first(_trim(part)))
    return out + "."


def server_of(pair: dict[str, Any], tools: dict[str, dict[str, Any]]) -> str:
    return tools[sorted(t for t in pair["tools"] if t in tools)[0]]["server"]


def compose(pairs: list[dict[str, Any]], tools: dict[str, dict[str, Any]], *, seed: int = 13,
            per_pair: float = 1.0) -> list[dict[str, Any]]:
    """Composed tasks: rows like a pair's (``source``, ``query``, ``tools``) with ``parts`` (the
    queries joined) and ``servers``. About ``per_pair`` tasks per query of a source, each of 2 or 3
    queries of one server (of one source for :data:`CROSS_SERVER` of them, and always where a
    server has one query); no task joins two queries of the same tools."""
    rng = random.Random(seed)
    usable = [p for p in pairs if set(p["tools"]) & set(tools) and len(p["query"]) < MAX_CHARS // 2]
    by_source: dict[str, list[dict[str, Any]]] = defaultdict(list)
    by_server: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
    for p in usable:
        by_source[p["source"]].append(p)
        by_server[(p["source"], server_of(p, tools))].append(p)
    out: list[dict[str, Any]] = []
    seen: set[tuple[str, ...]] = set()
    for source in sorted(by_source):
        members = by_source[source]
        for _ in range(round(len(members) * per_pair)):
            first = rng.choice(members)
            group = by_server[(source, server_of(first, tools))]
            pool = members if len(group) < 2 or rng.random() < CROSS_SERVER else group
            k = rng.choice((2, 3))
            chosen = [first]
            for cand in rng.sample(pool, min(len(pool), 12)):
                if len(chosen) == k:
                    break
                if (all(set(cand["tools"]) != set(c["tools"]) for c in chosen)
                        and sum(len(c["query"]) for c in chosen) + len(cand["query"]) < MAX_CHARS):
                    chosen.append(cand)
            key = tuple(sorted(c["query"] for c in chosen))
            if len(chosen) < 2 or key in seen:
                continue
            seen.add(key)
            gold = sorted({t for c in chosen for t in c["tools"] if t in tools})
            out.append({"source": source, "query": join([c["query"] for c in chosen], rng),
                        "parts": [c["query"] for c in chosen], "tools": gold,
                        "servers": sorted({tools[t]["server"] for t in gold})})
    return out


def overlap(texts: list[str], data: Path) -> dict[str, Any]:
    """The overlap check of :mod:`bench.check_retriever_overlap` over ``texts``."""
    from .check_retriever_overlap import eval_files, eval_texts, failing

    evals = eval_texts(eval_files(data))
    bad = failing(sorted(set(texts)), evals)
    return {"eval_texts": len(evals), "train_texts": len(set(texts)), "failing_texts": len(bad),
            "examples": [{"train": t, "eval": e, "jaccard": s} for t, (e, s) in sorted(bad.items())[:5]]}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--eval-data", type=Path, default=Path(os.environ.get("JIT_DATA_DIR", "/work/shared/data")))
    parser.add_argument("--seed", type=int, default=13)
    parser.add_argument("--per-pair", type=float, default=1.0)
    parser.add_argument("--sources", nargs="+", default=list(V1_SOURCES),
                        help="the sources whose queries are joined ('all': every source; default: the adapter's)")
    args = parser.parse_args(argv)
    tools = {t["id"]: t for t in read_rows(args.data / "tools.jsonl.gz")}
    pairs = read_pairs(args.data, args.sources)
    tasks = compose(pairs, tools, seed=args.seed, per_pair=args.per_pair)
    counts: dict[str, int] = defaultdict(int)
    for t in tasks:
        counts[t["source"]] += 1
    report = {"tasks": dict(counts), "examples": [t["query"] for t in tasks[:: max(1, len(tasks) // 6)]],
              "overlap": overlap([t["query"] for t in tasks], args.eval_data)}
    print(json.dumps(report, indent=1, ensure_ascii=False))
    return 1 if report["overlap"]["failing_texts"] else 0


if __name__ == "__main__":
    raise SystemExit(main())
