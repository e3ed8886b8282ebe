"""How far jit's offline token estimate is from real BPE tokenizers.

    python -m bench.token_error

Needs ``bpe-openai`` (the ``bench`` extra): OpenAI's o200k_base and cl100k_base
vocabularies, embedded, no download. Claude's tokenizer is not public; these are
the closest offline references. Texts: every tool definition (compact JSON of
name, description, input_schema) and its one-line summary, for LiveMCPBench and
the first 1,500 StableToolBench tools. Writes bench/results/token_error.json.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from jit.evaluation.datasets import default_data_dir
from jit.selection.render import summary_line
from jit.selection.tokens import EstimateCounter, compact_json

RESULTS = Path(__file__).parent / "results"


def main() -> None:
    import bpe_openai

    data = default_data_dir()
    rows = [json.loads(line) for line in (data / "livemcpbench/tools.jsonl").read_text().splitlines()]
    rows += [json.loads(line) for line in (data / "stabletoolbench/tools.jsonl").read_text().splitlines()][:1500]
    texts = []
    for r in rows:
        texts.append(compact_json({k: r.get(k) for k in ("name", "description", "input_schema")}))
        texts.append(f"- {r['server']}__{r['name']}: {summary_line(r.get('description') or '')}")
    est = EstimateCounter()
    out = {"texts": len(texts)}
    for enc_name in ("o200k_base", "cl100k_base"):
        enc = bpe_openai.get_encoding(enc_name)
        real = np.array([len(enc.encode(t)) for t in texts], dtype=float)
        for label, pred in (("estimate", np.array([est.count_text(t) for t in texts], dtype=float)),
                            ("chars/4", np.array([len(t) / 4 for t in texts]))):
            err = np.abs(pred - real) / np.maximum(real, 1)
            out[f"{label} vs {enc_name}"] = {
                "mean_abs_rel_err": round(float(err.mean()), 4),
                "p95_abs_rel_err": round(float(np.percentile(err, 95)), 4),
                "total_ratio": round(float(pred.sum() / real.sum()), 4),
                "undercount_share": round(float((pred < real).mean()), 4),
            }
    for k, v in out.items():
        print(k, v)
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "token_error.json").write_text(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
