"""Bulk embedding: the catalog's exported graph on OpenVINO, in bfloat16 where the CPU computes it.

A sync embeds its new tools by the thousand, and on a CPU that time is the model's
matrix products: onnxruntime's fp32 runs them near the CPU's fp32 peak. A CPU with
native bfloat16 products (AVX512_BF16 or AMX) does twice the work per instruction, and
OpenVINO's CPU plugin uses them for the products while keeping softmax, layer norms and
accumulation in float32: through the same fused graph, tokenizer, batches and pooling,
nearly twice onnxruntime's texts per second, with vectors whose cosine to the fp32 ones
stays above 0.9999 (docs/benchmarks.md, "A sync's new tools are embedded in bfloat16",
gives the figures and the commands). That is inside
:data:`~jit.embedding.onnx_runtime.MIN_COSINE`, the tolerance by which any export is
accepted as the model's own vectors, so the catalog keeps its model's identity (its
``model_name``): the queries, embedded in fp32 by onnxruntime, are compared with
these vectors as with any other, and nothing is re-embedded when a sync runs on
another machine. A bulk model that misses the tolerance on the probes is not used.
The vectors are close, not equal: where tools tie on a whole-number final score their
order can change, so selections differ at the budget's edge (125 of the 376 golden
selections, mostly in Minimal and Condensed), while ``jit eval`` moved by at most 0.003
but for one figure, a gold tool from rank 20 to 21 (docs/benchmarks.md, "A sync's new tools are
embedded in bfloat16").
``embedding.bulk_runtime: off`` keeps every vector fp32.

Only bulk work comes here: OpenVINO with the model loaded holds much more memory
than onnxruntime does, so the process that answers queries keeps its onnxruntime model
and loads this one for a pass of many texts (:data:`BULK_MIN`), then drops it. What
dropping it gives back is not all: OpenVINO's libraries and thread pools stay, so
``jit serve``, a process that lives as long as its client, runs it in a child process
(jit/embedding/bulk_process.py). A CPU without native bfloat16 gains too little from
OpenVINO's fp32 to pay that, and keeps onnxruntime; so does a machine without the ``openvino``
package (a dependency of jit on x86-64 Linux only, where this was measured).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..process import usable_cpus
from .onnx_runtime import MIN_COSINE, PROBE_TEXTS, Export, ExportedModel, OnnxModel, probe_cosine

__all__ = ["BULK_MIN", "OpenVinoModel", "bulk_model", "open_bulk"]

log = logging.getLogger(__name__)

#: Texts a pass must embed before the bulk model is loaded: loading it takes a fraction of a
#: second, which a pass of this many tool texts repays.
BULK_MIN = 256

#: OpenVINO's name for the CPU capability the bulk model needs.
_NATIVE_BF16 = "BF16"


class OpenVinoModel(ExportedModel):
    """An export compiled by OpenVINO's CPU plugin at ``precision`` (``bf16`` or ``f32``), the texts
    handled as :class:`~jit.embedding.onnx_runtime.ExportedModel` does. ``run`` is thread-safe.

    The plugin runs one stream per thread (``threads`` single-threaded streams) and ``run``
    keeps them all busy with batches: each batch is computed on one thread whole, so its
    vectors are those of a batch run alone (bit for bit, as one stream of ``threads``
    threads computes them). That is faster than one stream of all the threads, most of all
    with a Python thread busy beside them (a sync's analysis), because no thread of a stream
    waits at a barrier for one the Python thread preempted (docs/benchmarks.md, "The bulk
    model runs one single-threaded stream per core").
    """

    def __init__(self, export: Export, *, threads: int | None = None, precision: str = "bf16",
                 core: Any | None = None) -> None:
        import openvino as ov

        super().__init__(export)
        self.precision = precision
        #: What ran a pass (``OnnxEmbedder.last_bulk``), and what a progress line says of it.
        self.label, self.note = f"openvino-{precision}", f"{precision} on OpenVINO"
        self.streams = threads or usable_cpus()
        core = core if core is not None else ov.Core()
        self.compiled = core.compile_model(str(export.onnx), "CPU", {
            "INFERENCE_PRECISION_HINT": precision,
            "PERFORMANCE_HINT": "THROUGHPUT",
            "NUM_STREAMS": self.streams,
            "INFERENCE_NUM_THREADS": self.streams,  # one thread a stream
        })

    def run(self, texts: Sequence[str], batch_size: int = 64) -> np.ndarray:
        out = np.zeros((len(texts), self.dimension), dtype=np.float32)
        # This call's own requests, one a stream, taken in turn: a request's batch is pooled here,
        # before the request takes another. No callback: OpenVINO's threads never run Python.
        requests = [self.compiled.create_infer_request() for _ in range(self.streams)]
        running: list[tuple[np.ndarray, np.ndarray] | None] = [None] * self.streams

        def pool(slot: int) -> None:
            job, running[slot] = running[slot], None
            if job is not None:
                requests[slot].wait()
                rows, mask = job
                out[rows] = self.pooled(np.asarray(requests[slot].get_output_tensor(0).data, dtype=np.float32), mask)

        try:
            for n, (rows, feeds, mask) in enumerate(self._batches(texts, batch_size)):
                slot = n % self.streams
                pool(slot)
                requests[slot].start_async(feeds)
                running[slot] = (rows, mask)
            for slot in range(self.streams):
                pool(slot)
        finally:
            for request in requests:  # a failed call leaves nothing running
                request.wait()
        return out

    def close(self) -> None:
        """Drop the compiled model now, whoever still holds this object (the pass is over)."""
        self.compiled = None


def bulk_model(model: OnnxModel, *, threads: int | None = None) -> OpenVinoModel | None:
    """``model``'s export compiled by OpenVINO in bfloat16, or None (logged) when that would not pay
    or not hold: no ``openvino`` package, a CPU without native bfloat16, a graph OpenVINO cannot
    compile, or vectors of :data:`PROBE_TEXTS` (in one mixed batch and one by one) further than
    :data:`MIN_COSINE` from ``model``'s."""
    bulk, level, why = open_bulk(model.export, model.run(list(PROBE_TEXTS)), threads=threads)
    log.log(level, "embedding: %s", why)
    return bulk


def open_bulk(export: Export, reference: np.ndarray, *, threads: int | None = None
              ) -> tuple[OpenVinoModel | None, int, str]:
    """``export`` compiled by OpenVINO in bfloat16 and checked against ``reference`` (the fp32
    vectors of :data:`PROBE_TEXTS`), or None; with the logging level and line that say which."""
    try:
        import openvino as ov
    except ImportError as exc:
        return None, logging.INFO, f"no OpenVINO ({exc}); bulk embedding runs on onnxruntime"
    try:
        core = ov.Core()
        capabilities = core.get_property("CPU", "OPTIMIZATION_CAPABILITIES")
        if _NATIVE_BF16 not in capabilities:
            return None, logging.INFO, (f"this CPU has no native bfloat16 ({', '.join(capabilities)}); "
                                        "bulk embedding runs on onnxruntime")
        bulk = OpenVinoModel(export, threads=threads, precision="bf16", core=core)
        cosine, _alone = probe_cosine(bulk, reference)
    except Exception as exc:  # noqa: BLE001 - OpenVINO raises its own types; onnxruntime still serves
        return None, logging.WARNING, (f"OpenVINO cannot run {export.onnx.name} ({exc}); "
                                       "bulk embedding runs on onnxruntime")
    if cosine < MIN_COSINE:
        return None, logging.WARNING, (f"OpenVINO's bfloat16 vectors of {export.onnx.name} are off by a cosine "
                                       f"of {cosine:.6f} (< {MIN_COSINE}); bulk embedding runs on onnxruntime")
    return bulk, logging.DEBUG, f"bulk model on OpenVINO bf16 (probe min cosine {cosine:.6f})"
