"""Which text of a tool, embedded, finds it best: jit's own (:meth:`jit.models.ToolDef.embedding_text`)
beside richer or split representations, by dense retrieval alone (cosine with the query).

The representations:

* ``jit``: :meth:`~jit.models.ToolDef.embedding_text` (server, name words, title, description,
  parameter names);
* ``+siblings``: that text and its server's theme, the name words of up to 12 other tools of the server;
* ``two vectors``: a tool's best cosine over two vectors, its server, name words and parameter names, and
  its description;
* ``+server mean``: ``jit``'s cosine plus 0.3 times the cosine with the mean of its server's vectors
  (no text embedded again).

Measured first on the training sources of bench/data/retriever_train (each source's queries among
its own tools; nothing is fitted, so there is nothing to leave out), then once on the evaluation
sets (``--eval``; ``$JIT_DATA_DIR``): R@5 and Hit@1, a query's gold groups as ``jit eval`` counts
them. ::

    python -m bench.tool_representation --eval livemcpbench stabletoolbench metatool
"""

from __future__ import annotations

import argparse
from collections import defaultdict
from collections.abc import Callable, Sequence

import numpy as np

from bench.train_reranker import DATA, SOURCES, read_rows, tooldef
from jit.embedding.factory import embedder_from_config
from jit.evaluation.datasets import DATASETS, _resolve, default_data_dir, load_pool, load_queries
from jit.evaluation.evaluate import unscoped_config
from jit.models import ToolDef

#: A server's theme: the name words of this many of its other tools.
SIBLINGS = 12
#: The weight of a server's mean vector beside the tool's own (``+server mean``).
SERVER_MEAN = 0.3


def words(name: str) -> str:
    return name.replace("_", " ").replace("-", " ")


def with_siblings(tools: Sequence[ToolDef]) -> list[str]:
    by_server: dict[str, list[str]] = defaultdict(list)
    for t in tools:
        by_server[t.server].append(words(t.name))
    out = []
    for t in tools:
        others = [n for n in by_server[t.server] if n != words(t.name)][:SIBLINGS]
        out.append(t.embedding_text() + (f" | server tools: {', '.join(others)}" if others else ""))
    return out


def name_part(t: ToolDef) -> str:
    props = t.input_schema.get("properties") if isinstance(t.input_schema, dict) else None
    params = ", ".join(str(k) for k in props) if isinstance(props, dict) else ""
    return f"{t.server} {words(t.name)}" + (f" | parameters: {params}" if params else "")


def unit(m: np.ndarray) -> np.ndarray:
    return m / np.maximum(np.linalg.norm(m, axis=1, keepdims=True), 1e-9)


def methods(tools: Sequence[ToolDef], embed: Callable[[list[str]], np.ndarray]
            ) -> dict[str, Callable[[np.ndarray], np.ndarray]]:
    """Representation -> a function from query vectors to cosines (queries x tools)."""
    own = embed([t.embedding_text() for t in tools])
    sib = embed(with_siblings(tools))
    names = embed([name_part(t) for t in tools])
    desc = embed([t.description or name_part(t) for t in tools])
    servers = sorted({t.server for t in tools})
    at = {s: i for i, s in enumerate(servers)}
    server_of = np.array([at[t.server] for t in tools])
    means = np.zeros((len(servers), own.shape[1]), dtype=np.float32)
    np.add.at(means, server_of, own)
    means = unit(means)[server_of]
    return {
        "jit": lambda q: q @ own.T,
        "+siblings": lambda q: q @ sib.T,
        "two vectors": lambda q: np.maximum(q @ names.T, q @ desc.T),
        "+server mean": lambda q: q @ own.T + SERVER_MEAN * (q @ means.T),
    }


def measure(sims: np.ndarray, groups: Sequence[Sequence[Sequence[int]]]) -> dict[str, float]:
    r5 = hit = 0.0
    for row, gold in zip(sims, groups, strict=True):
        top = np.argsort(-row, kind="stable")[:5].tolist()
        r5 += sum(any(t in top for t in g) for g in gold) / len(gold)
        hit += any(top[0] in g for g in gold)
    return {"R@5": r5 / len(groups), "Hit@1": hit / len(groups)}


def report(name: str, tools: Sequence[ToolDef], queries: list[str], groups: list, embed) -> None:
    q = embed(queries)
    cells = [f"{m} R@5 {r['R@5']:.3f} Hit@1 {r['Hit@1']:.3f}"
             for m, fn in methods(tools, embed).items() for r in [measure(fn(q), groups)]]
    print(f"| {name} ({len(queries)} queries, {len(tools)} tools) | " + " | ".join(cells) + " |", flush=True)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--eval", nargs="*", default=[], choices=sorted(DATASETS), help="evaluation sets, once")
    parser.add_argument("--sample", type=int, default=600, help="queries of an evaluation set (fixed sample)")
    args = parser.parse_args(argv)
    embedder = embedder_from_config(unscoped_config().embedding)

    def embed(texts: list[str]) -> np.ndarray:
        return unit(np.vstack([embedder.embed(texts[i:i + 256]) for i in range(0, len(texts), 256)]))

    rows, pairs = read_rows(DATA / "tools.jsonl.gz"), read_rows(DATA / "pairs.jsonl.gz")
    for source in SOURCES:
        mine = [t for t in rows if t["source"] == source]
        at = {t["id"]: i for i, t in enumerate(mine)}
        asked = [p for p in pairs if p["source"] == source]
        report(source, [tooldef(t) for t in mine], [p["query"] for p in asked],
               [[[at[t]] for t in p["tools"]] for p in asked], embed)
    data_dir = default_data_dir()
    for name in args.eval:
        spec = DATASETS[name]
        pool = load_pool([_resolve(data_dir, f) for f in spec.tools])
        queries, _skipped, _kind = load_queries(_resolve(data_dir, spec.queries), pool, sample=args.sample)
        report(name, pool.tools, [q.text for q in queries], [q.groups for q in queries], embed)


if __name__ == "__main__":
    main()
