"""The model's ONNX export quantized to int8: faster on a CPU, but other vectors.

Dynamic quantization (``onnxruntime.quantization.quantize_dynamic``) stores the
weights of every weight MatMul as int8, one scale per output channel, and quantizes
their inputs to uint8 at run time. On the two-core benchmark VMs that roughly halves a query's
time. The vectors are not the fp32 model's: on real tool texts their cosine to
fp32 is 0.98–0.999 (mean 0.993), so an int8 model is a model of its own
(:data:`SCHEME` is part of the embedder's ``model_name``). A catalog embedded in
fp32 is re-embedded before int8 queries are compared with it, and the reverse.

The per-channel scales are what keep the vectors close: with one scale per tensor
(onnxruntime's default) the mean cosine to fp32 was 0.95, the worst 0.88. The
matrix products of two activations (attention scores) stay in float; so do the
embeddings, a lookup that quantization would not speed up.

The quantized model is cached beside the fp32 export it is made from, as its own
artifact (metadata ``<slug>-<fingerprint>-<SCHEME>.json``). It is kept only if its
vectors on :data:`~jit.embedding.onnx_runtime.PROBE_TEXTS` are within
:data:`MIN_COSINE_INT8` of the fp32 export's (one mixed batch and one by one); its
own vector for the first probe is stored and checked again at every load, as the
fp32 export's is, so a damaged file is noticed and quantized again. Quantizing
needs only onnxruntime and onnx, no torch (unless the fp32 export must be made
first), and takes about a second.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import tempfile
from pathlib import Path
from typing import Any

from ..paths import write_atomic
from .onnx_cache import EXPORT_FORMAT, ModelLayout, export_lock, fingerprint, fsync, load_cached, meta_path_of
from .onnx_export import ensure_export
from .onnx_runtime import (
    PROBE_TEXTS,
    Export,
    OnnxModel,
    UnsupportedModel,
    probe_cosine,
    quiet_onnxruntime,
    require_runtime,
)

__all__ = ["MIN_COSINE_INT8", "SCHEME", "ensure_int8"]

log = logging.getLogger(__name__)

#: The quantization recipe's name: part of the model identity and of the cache file's
#: name. Give the recipe a new name when :data:`_QUANTIZE` changes, since the vectors change too.
SCHEME = "int8-dq-pc"

#: ``quantize_dynamic``'s arguments for :data:`SCHEME` (the weight type is added at call time).
_QUANTIZE: dict[str, Any] = {
    "op_types_to_quantize": ["MatMul"],
    "per_channel": True,
    "reduce_range": False,
    "extra_options": {"MatMulConstBOnly": True},
}

#: Minimum cosine between the int8 model's vectors and the fp32 export's on the probes.
#: The worst probe measured 0.973 (the empty text), real tool texts 0.978 at worst; this
#: catches a broken quantization, it does not promise quality (the evaluation measures that).
MIN_COSINE_INT8 = 0.95


def ensure_int8(layout: ModelLayout, *, threads: int | None = None) -> OnnxModel:
    """The model's int8 export loaded, quantizing the fp32 export first when the cache has none.

    A quantized model that does not match the fp32 export on the probes is refused
    (:class:`UnsupportedModel`) and nothing is cached. Its batches are packed as full as they fit
    (no :attr:`~jit.embedding.onnx_runtime.ExportedModel.run_cost`): dynamic quantization scales a
    batch's activations as a whole, so a text's vector depends on its batch, and how texts are
    batched stays what the catalog's vectors were made with.
    """
    require_runtime()
    fp = fingerprint(layout)
    meta_path = meta_path_of(layout, fp, SCHEME)
    with export_lock:
        model = load_cached(meta_path, fp, threads=threads, rebuild="quantizing it again", scheme=SCHEME)
        model = model if model is not None else _quantize(layout, fp, meta_path, threads=threads)
    model.run_cost = None
    return model


def _quantize(layout: ModelLayout, fp: str, meta_path: Path, *, threads: int | None) -> OnnxModel:
    """Quantize the fp32 export, verify it against the fp32 export on the probes, and cache it."""
    try:
        from onnxruntime.quantization import QuantType, quantize_dynamic
    except ImportError as exc:
        raise UnsupportedModel(f"quantizing to int8 needs onnxruntime's quantization tools and onnx: {exc}") from exc
    source = ensure_export(layout, threads=threads)
    reference = source.run(list(PROBE_TEXTS))
    directory = meta_path.parent
    log.info("embedding: quantizing the ONNX export of %s to int8 (once per model)", layout.path)
    with tempfile.TemporaryDirectory(dir=directory, prefix=".int8-") as tmp:
        staged = Export({}, Path(tmp) / "model.onnx", directory / source.meta["tokenizer_file"])
        with quiet_onnxruntime():
            quantize_dynamic(directory / source.meta["onnx_file"], staged.onnx, weight_type=QuantType.QInt8,
                             **_QUANTIZE)
        digest = hashlib.sha256(staged.onnx.read_bytes()).hexdigest()[:16]
        staged.meta.update({key: source.meta[key] for key in (
            "fingerprint", "model_path", "pooling", "dimension", "inputs", "max_length", "pad_id",
            "tokenizer_file", "tokenizer_size")})
        staged.meta.update({
            "format": EXPORT_FORMAT, "scheme": SCHEME, "source_onnx_file": source.meta["onnx_file"],
            "onnx_file": f"{layout.slug}-{fp}-{SCHEME}-{digest}.onnx", "onnx_size": staged.onnx.stat().st_size,
            "versions": {**source.meta.get("versions", {}), "onnxruntime": _ort_version()},
        })
        model = OnnxModel(staged, threads=threads)
        cosine, alone = probe_cosine(model, reference)
        if cosine < MIN_COSINE_INT8:
            raise UnsupportedModel(f"the int8 model of {layout.path} is too far from its fp32 export "
                                   f"(min cosine {cosine:.4f} < {MIN_COSINE_INT8})")
        # Its own vector, not fp32's: at load the int8 model must reproduce itself exactly.
        staged.meta["probe_vector"] = [float(x) for x in alone[0]]
        staged.meta["probe_min_cosine_fp32"] = cosine
        fsync(staged.onnx)
        os.replace(staged.onnx, directory / staged.meta["onnx_file"])
        model.export = Export(staged.meta, directory / staged.meta["onnx_file"], staged.tokenizer)  # where it is now
    write_atomic(meta_path, lambda f: f.write(json.dumps(staged.meta, indent=1).encode("utf-8")))
    log.info("embedding: int8 model of %s verified (min cosine %.4f to fp32)", layout.path, cosine)
    return model


def _ort_version() -> str:
    import onnxruntime

    return str(onnxruntime.__version__)

