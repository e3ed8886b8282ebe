"""compile() recall under each ``tool_selection.task_vectors`` mode, on one evaluation set.

    HF_HUB_OFFLINE=1 python -m bench.task_vectors [livemcpbench] [--shard researcher]

Everything else is the evaluation's default config (``jit eval``: built-in defaults, no
harness tools, the read-only roles granted what a benchmark task may need), and the
catalog is the evaluation's cached one (``.jit/eval/<set>.db``). Prints, per mode, the
share of gold groups in Full and in Full + Condensed, and the p50 compile time (which
includes embedding the task: the modes differ in what the model embeds).
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

from jit.analysis.offline_analyzer import OfflineAnalyzer
from jit.config import AvailableTools, Config
from jit.embedding.factory import embedder_from_config
from jit.evaluation.datasets import DATASETS, _resolve, default_data_dir, load_pool, load_queries
from jit.evaluation.evaluate import UNSCOPED_GRANTS, _run_compile, build_catalog
from jit.selection.compiler import Compiler

MODES = ("clauses", "whole", "both")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.task_vectors", description=__doc__.split("\n\n")[0])
    parser.add_argument("dataset", nargs="?", default="livemcpbench", choices=sorted(DATASETS))
    parser.add_argument("--shard", default="researcher")
    parser.add_argument("--data-dir", type=Path, default=None)
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
    spec = DATASETS[args.dataset]
    data = args.data_dir or default_data_dir()
    default = Config.default()
    base = replace(default, available_tools=AvailableTools(),
                   shards={n: sc.model_copy(update={"allow": [*sc.allow, *UNSCOPED_GRANTS]})
                           for n, sc in default.shards.items()})
    pool = load_pool([_resolve(data, f) for f in spec.tools])
    queries, _skipped, _kind = load_queries(_resolve(data, spec.queries), pool, sample=spec.sample)
    embedder = embedder_from_config(base.embedding)
    store = build_catalog(pool, base.store_path.parent / "eval" / f"{spec.name}.db", base, embedder,
                          analyzer=OfflineAnalyzer(base.shards))
    print(f"{spec.name}, shard {args.shard}, budget {base.tool_selection.token_budget} tokens, "
          f"{len(queries)} queries\n")
    print("| task_vectors | Full | Full + Condensed | compile p50 ms |")
    print("|---|---|---|---|")
    try:
        for mode in MODES:
            config = replace(base, tool_selection=base.tool_selection.model_copy(update={"task_vectors": mode}))
            with Compiler(store, config, embedder) as compiler:
                r = _run_compile(compiler, args.shard, queries, pool)
            print(f"| {mode} | {r['recall_full']:.3f} | {r['recall_full_condensed']:.3f} | {r['p50_ms']:.1f} |")
    finally:
        store.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
