"""Dump every compile's selection over LiveMCPBench, to prove a refactor changed nothing.

    python -m bench.golden_selections OUT.json [--work DIR]

Builds the LiveMCPBench catalog (offline analyzer, the real model), compiles every
task for the four default shards and writes, per compile, each selected tool's
name, tier, logic, vector and final scores and the tokens used, plus the rendered
Anthropic tool list. Run it before and after a change and compare the two files
byte for byte (`cmp`): a pure refactor leaves them identical.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from jit.analysis.offline_analyzer import OfflineAnalyzer
from jit.embedding.factory import embedder_from_config
from jit.config import Config
from jit.evaluation.datasets import DATASETS, default_data_dir, load_pool, load_queries
from jit.evaluation.evaluate import build_catalog
from jit.process import tuned
from jit.selection.compiler import Compiler
from jit.selection.task import TaskContext

SHARDS = ("coder", "tester", "reviewer", "researcher")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out", type=Path)
    ap.add_argument("--work", type=Path, default=Path(".jit/golden"), help="where the catalog is built")
    args = ap.parse_args()
    spec = DATASETS["livemcpbench"]
    data = default_data_dir()
    pool = load_pool([data / p for p in spec.tools])
    queries, _skipped, _kind = load_queries(data / spec.queries, pool, sample=spec.sample)
    config = Config.default(args.work)
    embedder = embedder_from_config(config.embedding)
    store = build_catalog(pool, args.work / "golden.db", config, embedder, analyzer=OfflineAnalyzer(config.shards))
    out: dict[str, object] = {}
    with Compiler(store, config, embedder) as compiler:
        for shard in SHARDS:
            for i, q in enumerate(queries):
                ts = compiler.compile(TaskContext(shard=shard, task=q.text))
                out[f"{shard}:{i}"] = [[s.name, s.tier.value, s.logic, round(s.vector, 3), s.final]
                                       for s in ts.tools if s.tier.value != "excluded"] + [ts.tokens_used]
                out[f"{shard}:{i}:render"] = json.dumps(ts.render("anthropic"), sort_keys=True)
    store.close()
    args.out.write_text(json.dumps(out, indent=0, sort_keys=True))
    print(f"wrote {args.out}: {len(queries)} tasks x {len(SHARDS)} shards")


if __name__ == "__main__":
    with tuned():
        main()
