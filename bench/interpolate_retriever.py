"""A trained retriever's weights moved only part of the way from all-MiniLM-L6-v2's (WiSE-FT).

A model fine-tuned on one kind of query gains on that kind and may lose elsewhere; a model whose
every weight is ``base + alpha × (tuned − base)`` often keeps most of the gain and loses less
(Wortsman et al., "Robust fine-tuning of zero-shot models", CVPR 2022). The interpolated model is
as fast as either: one set of weights. ::

    python -m bench.train_retriever --out /tmp/tuned        # the fine-tune: 8 min on 2 cores
    python -m bench.interpolate_retriever --tuned /tmp/tuned --fp16 --out jit/embedding/jit-tools-MiniLM-L6-v1
    jit eval livemcpbench --compare-model all-MiniLM-L6-v2  # beside the model it started from

The second line writes the model jit ships (the default ``embedding.model``; docs/quality.md, "A
retriever trained for tools").

``alpha`` is 0.5 unless ``--alpha`` says otherwise: the method's own default, fixed before the model
was measured on any evaluation set. It is not chosen on the source the fine-tune held out (``--hold-out`` of
``bench.train_retriever``, ToolAlpaca by default): that source is one-call queries like the training
ones, where the fully tuned model is best (R@5 rises with alpha all the way to 1), while the point of
stopping short is the sets unlike the training data, which no training source stands for; and it is
not chosen on an evaluation set. The held-out source's figures at each of ``--alphas`` are measured
and recorded in ``interpolation.json`` in the written directory, with the fine-tune's own record
(``training.json`` of ``bench.train_retriever``).
"""

from __future__ import annotations

import argparse
import json
import shutil
import time
from pathlib import Path
from typing import Any

from jit.embedding.torch_embedder import base_model_path

from .train_retriever import DATA, INFERENCE_MAX_SEQ, load, read_rows, retrieval_scores, save


def interpolate(ours: dict[str, Any], theirs: dict[str, Any], alpha: float) -> dict[str, Any]:
    """The state dict ``base + alpha × (tuned − base)`` of the base's and the tuned model's state
    dicts, parameter by parameter (integer buffers, such as position ids, are the base model's)."""
    import torch

    if ours.keys() != theirs.keys():
        raise SystemExit("the tuned model is not all-MiniLM-L6-v2's architecture: its parameters differ")
    out = {}
    for name, value in ours.items():
        other = theirs[name].to(value.dtype)
        if other.shape != value.shape:
            raise SystemExit(f"parameter {name}: shape {tuple(other.shape)} in the tuned model, "
                             f"{tuple(value.shape)} in the base")
        out[name] = value + alpha * (other - value) if torch.is_floating_point(value) else value.clone()
    return out


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--tuned", type=Path, required=True, help="a model directory bench.train_retriever wrote")
    parser.add_argument("--out", type=Path, required=True, help="the model directory written")
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--hold-out", default=None,
                        help="the source measured at each alpha (default: the one the fine-tune held out)")
    parser.add_argument("--alphas", type=float, nargs="*", default=[0.0, 0.25, 0.5, 0.75, 1.0],
                        help="the alphas measured on the held-out source (none: measure only --alpha)")
    parser.add_argument("--alpha", type=float, default=0.5, help="the alpha written")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--fp16", action="store_true", help="save the weights in half precision")
    args = parser.parse_args(argv)

    import torch

    torch.set_num_threads(args.threads)
    started = time.perf_counter()
    trained = json.loads((args.tuned / "training.json").read_text())
    hold_out = args.hold_out or trained["args"]["hold_out"]
    tools = {t["id"]: t for t in read_rows(args.data / "tools.jsonl.gz")}
    held = [p for p in read_rows(args.data / "pairs.jsonl.gz") if p["source"] == hold_out]
    if not 0.0 <= args.alpha <= 1.0:
        raise SystemExit(f"--alpha {args.alpha}: give a value from 0 (the base model) to 1 (the tuned one)")
    base = load(base_model_path(), INFERENCE_MAX_SEQ)
    tuned = load(str(args.tuned), INFERENCE_MAX_SEQ)
    original = {k: v.clone() for k, v in base.state_dict().items()}
    theirs = tuned.state_dict()
    # The fine-tune's own record (its arguments, its checks on the held-out source) travels with the
    # weights, without the machine's paths.
    training = {**trained, "args": {k: v for k, v in trained["args"].items() if k not in ("data", "out")}}
    report: dict[str, Any] = {"alpha": args.alpha, "hold_out": hold_out, "measured": {}, "training": training}
    for alpha in sorted(set(args.alphas) | {args.alpha}) if held else []:
        base.load_state_dict(interpolate(original, theirs, alpha))
        report["measured"][str(alpha)] = found = retrieval_scores(base, held, tools)
        print(f"alpha {alpha}: {hold_out} {found}", flush=True)
    base.load_state_dict(interpolate(original, theirs, args.alpha))
    save(base, args.out, args.fp16)
    # The tokenizer is the base model's, unchanged: its slow-tokenizer files too, which the save leaves
    # out, so that a loader without the fast tokenizer (tokenizer.json) reads the same vocabulary.
    for name in ("vocab.txt", "special_tokens_map.json"):
        if not (args.out / name).exists() and (Path(base_model_path()) / name).is_file():
            shutil.copyfile(Path(base_model_path()) / name, args.out / name)
    report["seconds"] = round(time.perf_counter() - started)
    (args.out / "interpolation.json").write_text(json.dumps(report, indent=1) + "\n")
    print(json.dumps(report), flush=True)


if __name__ == "__main__":
    main()
