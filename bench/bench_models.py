"""Query embedding time of two embedding models, paired: one task at a time, the models alternating.

    HF_HUB_OFFLINE=1 python -m bench.bench_models [--models jit-tools-MiniLM-L6-v1 all-MiniLM-L6-v2]

Each model on the ONNX runtime (its export made first, outside the timing), warmed with one text;
then ``--rounds`` rounds, each embedding LiveMCPBench's first ``--tasks`` tasks one at a time with
every model in turn, so both meet the same machine load. Prints p50 and p95 per model and writes
them to ``bench/results/models.json``. The tasks are read from ``$JIT_DATA_DIR`` (else ``../shared/data``).
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

import numpy as np

from jit.config import BASE_EMBEDDING_MODEL, DEFAULT_EMBEDDING_MODEL
from jit.embedding.onnx_embedder import OnnxEmbedder
from jit.evaluation.datasets import default_data_dir

RESULTS = Path(__file__).resolve().parent / "results" / "models.json"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--models", nargs="+", default=[DEFAULT_EMBEDDING_MODEL, BASE_EMBEDDING_MODEL])
    parser.add_argument("--tasks", type=int, default=40)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    with (default_data_dir() / "livemcpbench" / "queries.jsonl").open(encoding="utf-8") as fh:
        tasks = [json.loads(line)["query"] for line in fh][:args.tasks]
    models = {name: OnnxEmbedder(model=name, fallback=False) for name in args.models}
    for model in models.values():
        model.embed(["warm up"])
    times: dict[str, list[float]] = {name: [] for name in models}
    for _ in range(args.rounds):
        for task in tasks:
            for name, model in models.items():
                started = time.perf_counter()
                model.embed([task])
                times[name].append((time.perf_counter() - started) * 1000)
    report = {name: {"p50_ms": round(statistics.median(t), 2), "p95_ms": round(float(np.percentile(t, 95)), 2),
                     "embeddings": len(t)} for name, t in times.items()}
    report["tasks"] = {"set": "livemcpbench", "count": len(tasks), "rounds": args.rounds}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=1) + "\n")
    for name, figures in report.items():
        print(name, figures)


if __name__ == "__main__":
    main()
