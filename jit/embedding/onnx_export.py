"""Exporting a sentence-transformers model to ONNX, once per model and machine, verified against torch.

:func:`ensure_export` gives the model's export loaded into onnxruntime
(:class:`~jit.embedding.onnx_runtime.OnnxModel`), from the cache
(:mod:`jit.embedding.onnx_cache`) or made first: the transformer traced by torch,
checked against sentence-transformers on the probe texts, then renamed into the
cache. Exporting is the only time torch is needed.

The graph queries and syncs run is the *fused* one (:data:`FUSED`): the transformer
traced with its eager attention, which onnxruntime's transformer optimizer rewrites into
one ``Attention`` operator per layer (the projections of q, k and v in one product) and
fused layer norms and GELUs: 46 operators instead of 669 for MiniLM-L6, a query ~12 %
faster (long tool texts ~1 %: their time is the products'), a quicker load, the same
vectors (verified as any export is). The plain export (the default attention, unfused)
is what :mod:`jit.embedding.onnx_int8` quantizes: int8 vectors depend on the exact graph,
and these are the ones its scheme was measured on.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import stat
import tempfile
import warnings
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import EmbeddingError
from ..paths import write_atomic
from .onnx_cache import (
    EXPORT_FORMAT,
    ModelLayout,
    cache_directory,
    export_lock,
    failed_before,
    fingerprint,
    fsync,
    load_cached,
    meta_path_of,
    prune_cache,
    remember_failure,
)
from .onnx_runtime import (
    MIN_COSINE,
    PROBE_TEXTS,
    Export,
    OnnxModel,
    UnsupportedModel,
    probe_cosine,
    quiet_onnxruntime,
    require_runtime,
)

__all__ = ["FUSED", "ensure_export"]

log = logging.getLogger(__name__)

#: The variant name of the fused fp32 graph (:func:`ensure_export` with ``fused=True``).
FUSED = "fused"


def ensure_export(layout: ModelLayout, *, threads: int | None = None, fused: bool = False) -> OnnxModel:
    """The model's export loaded, exporting it first when the cache has none (or a damaged one).

    Exporting needs torch and sentence-transformers and takes seconds; it happens
    once per model and machine. An export that does not match sentence-transformers
    is refused (:class:`UnsupportedModel`), and nothing is cached. ``fused``: the
    :data:`FUSED` graph (its own export, same vectors, faster); if it cannot be made or
    does not match, that is logged and the plain export serves. The failure is remembered
    beside the cache (``<meta>.failed``) so later processes of this jit go straight to the
    plain export, unless it was an ``OSError`` (a full disk may pass).
    """
    require_runtime()
    fp = fingerprint(layout)
    cache_directory()
    with export_lock:  # threads of one process export once; other processes may race (harmless)
        if fused:
            meta = meta_path_of(layout, fp, FUSED)
            model = load_cached(meta, fp, threads=threads, rebuild="exporting it again", variant=FUSED)
            if model is not None:
                return model
            failed = failed_before(meta)
            if failed is not None:
                log.info("embedding: no fused graph of %s (it failed before: %s); running the plain export",
                         layout.path, failed)
            else:
                try:
                    return _export(layout, fp, threads=threads, fused=True)
                except Exception as exc:  # noqa: BLE001 - the eager trace or fusion failed: the plain one may not
                    log.warning("embedding: no fused graph of %s (%s); running the plain export", layout.path, exc)
                    if not isinstance(exc, OSError):  # a full disk, say, may pass: try again next time
                        remember_failure(meta, exc)
        model = load_cached(meta_path_of(layout, fp), fp, threads=threads, rebuild="exporting it again")
        return model if model is not None else _export(layout, fp, threads=threads)


def _export(layout: ModelLayout, fp: str, *, threads: int | None = None, fused: bool = False) -> OnnxModel:
    """Export the transformer with torch, verify it against sentence-transformers, and cache it.

    ``fused``: traced with the eager attention and rewritten by onnxruntime's transformer
    optimizer (:func:`_fuse`), cached as the :data:`FUSED` variant. The files are verified
    where they were written (a temporary directory beside the cache) and only then renamed
    into place, the metadata last: a refused or interrupted export leaves nothing a reader
    could take for an export.
    """
    try:
        import torch
        from sentence_transformers import SentenceTransformer
        from tokenizers import Tokenizer
    except ImportError as exc:
        raise UnsupportedModel(f"exporting to ONNX needs torch and sentence-transformers: {exc}") from exc
    log.info("embedding: exporting %s to ONNX (once per model)", layout.path)
    local_only = os.environ.get("HF_HUB_OFFLINE", "1").strip().lower() not in ("0", "false", "no", "off")
    # The fused graph needs the attention as plain products and a softmax, which the optimizer
    # recognises; the default (sdpa) traces to a pattern it does not.
    st = SentenceTransformer(str(layout.path), device="cpu", local_files_only=local_only,
                             model_kwargs={"attn_implementation": "eager"} if fused else None)
    transformer = st[0]
    hf_tokenizer = transformer.tokenizer
    if not getattr(hf_tokenizer, "is_fast", False):
        raise UnsupportedModel(f"{layout.path}: the tokenizer is not a fast (tokenizers) one")
    max_length = int(hf_tokenizer.model_max_length)
    max_positions = getattr(transformer.auto_model.config, "max_position_embeddings", None)
    if isinstance(max_positions, int) and max_positions > 0:
        max_length = min(max_length, max_positions)
    sample = hf_tokenizer(["a b", "c"], padding=True, truncation=True, return_tensors="pt")
    inputs = [n for n in ("input_ids", "attention_mask", "token_type_ids") if n in sample]

    class Hidden(torch.nn.Module):
        """The transformer's last hidden state from positional inputs (what the exporter traces)."""

        def __init__(self, model: Any) -> None:
            super().__init__()
            self.model = model

        def forward(self, *tensors: Any) -> Any:
            return self.model(**dict(zip(inputs, tensors, strict=True))).last_hidden_state

    reference = np.asarray(st.encode(list(PROBE_TEXTS), normalize_embeddings=True, convert_to_numpy=True,
                                     show_progress_bar=False), dtype=np.float32)
    if reference.shape[1] != layout.dimension:
        raise UnsupportedModel(f"{layout.path}: vectors of dimension {reference.shape[1]}, "
                               f"its pooling config says {layout.dimension}")
    tokenizer = Tokenizer.from_str(hf_tokenizer.backend_tokenizer.to_str())
    tokenizer.no_padding()
    tokenizer.enable_truncation(max_length)
    tokenizer_bytes = tokenizer.to_str().encode("utf-8")
    pad_id = hf_tokenizer.pad_token_id if hf_tokenizer.pad_token_id is not None else 0

    directory = cache_directory()
    try:
        staging = tempfile.TemporaryDirectory(dir=directory, prefix=".export-")
    except OSError as exc:
        raise EmbeddingError(f"cannot write the ONNX export into {directory} ({exc.strerror or exc}): "
                             "set JIT_CACHE_DIR to a writable directory") from exc
    with staging as tmp:
        staged = Export({}, Path(tmp) / "model.onnx", Path(tmp) / "tokenizer.json")
        axes = {name: {0: "batch", 1: "sequence"} for name in [*inputs, "last_hidden_state"]}
        with torch.no_grad(), warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the tracer's notes on Python branches: the probes verify the graph
            torch.onnx.export(
                Hidden(transformer.auto_model).eval(), tuple(sample[n] for n in inputs), str(staged.onnx),
                input_names=inputs, output_names=["last_hidden_state"], dynamic_axes=axes,
                opset_version=17, dynamo=False,  # the TorchScript exporter: no onnxscript needed
            )
        config = transformer.auto_model.config
        del st, transformer  # torch's copy of the model is not needed past this point
        fusion = _fuse(staged.onnx, config) if fused else {}
        staged.tokenizer.write_bytes(tokenizer_bytes)
        onnx_digest = hashlib.sha256(staged.onnx.read_bytes()).hexdigest()[:16]
        variant = f"{FUSED}-" if fused else ""
        weights_file = f"{layout.slug}-{fp}-{variant}{onnx_digest}.weights"
        staged = Export({}, _split_weights(staged.onnx, weights_file), staged.tokenizer)
        staged.meta.update({
            "format": EXPORT_FORMAT, "fingerprint": fp, "model_path": str(layout.path),
            "pooling": layout.pooling, "dimension": layout.dimension, "inputs": inputs,
            "max_length": max_length, "pad_id": int(pad_id),
            "onnx_file": f"{layout.slug}-{fp}-{variant}{onnx_digest}.onnx",
            "onnx_size": staged.onnx.stat().st_size,
            "weights_file": weights_file,
            "weights_size": (staged.onnx.parent / weights_file).stat().st_size,
            "tokenizer_file": f"{layout.slug}-{fp}-{hashlib.sha256(tokenizer_bytes).hexdigest()[:16]}.tokenizer.json",
            "tokenizer_size": len(tokenizer_bytes),
            "probe_vector": [float(x) for x in reference[0]],
            "versions": {"torch": torch.__version__, "onnx_opset": 17},
        })
        if fused:
            staged.meta.update({"variant": FUSED, "fused_operators": fusion})
        model = OnnxModel(staged, threads=threads)
        cosine, _alone = probe_cosine(model, reference)
        if cosine < MIN_COSINE:
            raise UnsupportedModel(f"the ONNX export of {layout.path} does not match sentence-transformers "
                                   f"(min cosine {cosine:.6f} < {MIN_COSINE})")
        staged.meta["probe_min_cosine"] = cosine
        # Content-addressed names: a concurrent export of the same bytes replaces a file with itself.
        # The weights first: the graph names them, and a reader finds the graph through the metadata.
        for src, name in ((staged.onnx.parent / weights_file, weights_file), (staged.onnx, staged.meta["onnx_file"]),
                          (staged.tokenizer, staged.meta["tokenizer_file"])):
            fsync(src)
            os.replace(src, directory / name)
        # The model names its files where they now are (a bulk model compiles the graph again).
        model.export = Export(staged.meta, directory / staged.meta["onnx_file"],
                              directory / staged.meta["tokenizer_file"])
    write_atomic(meta_path_of(layout, fp, FUSED if fused else ""),
                 lambda f: f.write(json.dumps(staged.meta, indent=1).encode("utf-8")))
    log.info("embedding: ONNX export%s of %s verified (min cosine %.6f)", " (fused)" if fused else "", layout.path,
             cosine)
    prune_cache(directory, layout.path, fp)
    return model


def _fuse(single: Path, config: Any) -> dict[str, int]:
    """Rewrite the one-file graph ``single`` in place with onnxruntime's transformer optimizer
    (``config``: the transformer's, for its heads and width); return the fused operators' counts.

    Only the optimizer's fusions are applied (``opt_level=0``): onnxruntime's own graph
    optimizations run at every load anyway. A model the optimizer does not know is tried as
    BERT; an optimizer that is missing or fails leaves the graph as traced (logged): it is
    still verified, and still the same vectors, only slower."""
    try:
        from onnxruntime.transformers.optimizer import MODEL_TYPES, optimize_model

        kind = config.model_type if config.model_type in MODEL_TYPES else "bert"
        with quiet_onnxruntime():
            optimized = optimize_model(str(single), model_type=kind, num_heads=int(config.num_attention_heads),
                                       hidden_size=int(config.hidden_size), opt_level=0, use_gpu=False)
            fused = {op: n for op, n in optimized.get_fused_operator_statistics().items() if n}
            if fused:
                optimized.save_model_to_file(str(single))
    except Exception as exc:  # noqa: BLE001 - the optimizer's many failure modes have one remedy
        log.warning("embedding: onnxruntime's transformer optimizer failed (%s); the graph stays unfused", exc)
        return {}
    return fused


def _split_weights(single: Path, weights_file: str) -> Path:
    """The graph of the one-file export ``single`` with its weights moved to ``weights_file`` beside it;
    returns the new graph's path.

    onnxruntime maps a weights file into memory instead of reading it, where a one-file model is
    read whole and its weights copied out of it: a process loading the model peaks lower and
    loads faster, with the same vectors (docs/benchmarks.md, "The model's weights are mapped,
    not read"). The
    location inside the graph is relative: the two files are renamed into the cache together."""
    import onnx

    model = onnx.load(str(single))
    graph = single.with_name("graph.onnx")
    onnx.save_model(model, str(graph), save_as_external_data=True, all_tensors_to_one_file=True,
                    location=weights_file, size_threshold=1024)
    os.chmod(graph.parent / weights_file, stat.S_IMODE(graph.stat().st_mode))  # onnx makes it owner-only
    single.unlink()
    return graph

