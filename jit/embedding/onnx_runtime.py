"""A torch-free runtime for sentence-transformers models: ONNX Runtime and tokenizers.

Importing torch and loading a model through sentence-transformers takes seconds and
hundreds of megabytes; embedding one query needs neither. The model's transformer is
exported to ONNX once per model (:mod:`jit.embedding.onnx_export`, the only time torch
is needed) into a cache keyed by a fingerprint of the model's files
(:mod:`jit.embedding.onnx_cache`), and every later process loads that export here, with
``onnxruntime`` and the model's own ``tokenizers`` tokenizer, in a fraction of a second.

The vectors are the catalog's vectors, so the runtime is not part of the model's
identity (a catalog embedded through torch is queried through ONNX without
re-embedding):

- the tokenizer is the one sentence-transformers configured for the model (its
  normalizer, special tokens and truncation at the model's ``max_seq_length``),
  saved beside the export; batches are padded to their longest text as
  sentence-transformers does;
- pooling (mean, CLS or max, from the model's ``1_Pooling/config.json``) and L2
  normalisation run in numpy, in float32;
- an export is kept only if it matches sentence-transformers on :data:`PROBE_TEXTS`
  (short, long past truncation, empty, non-Latin; in one mixed batch and one by
  one) to a cosine of :data:`MIN_COSINE` (:func:`probe_cosine`); the first probe's
  torch vector is stored with it and checked again at every load (:func:`check_probe`).

Supported: a sentence-transformers model directory whose modules are a Transformer,
a Pooling (mean, CLS or max) and optionally a Normalize. Anything else (a Dense
layer, a hub name with no local directory) is :class:`UnsupportedModel`, and the
caller uses torch.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import EmbeddingError

__all__ = [
    "MIN_COSINE",
    "PROBE_TEXTS",
    "Export",
    "ExportedModel",
    "OnnxModel",
    "UnsupportedModel",
    "check_probe",
    "probe_cosine",
    "quiet_onnxruntime",
    "require_runtime",
]

#: Minimum cosine between an export's vectors and sentence-transformers' on the probes.
MIN_COSINE = 0.9999

#: Texts an export is verified on: the first is checked again at every load.
PROBE_TEXTS: tuple[str, ...] = (
    "read a file from the local disk",
    "",
    "Book a FLIGHT to Paris!!",
    "émoji 🎉, 中文 и кириллица",
    "search the web for recent news articles about a topic and return the top results " * 30,
    "   leading and trailing spaces   ",
)

#: Padded tokens per model call at most (see :class:`ExportedModel`).
TOKENS_PER_RUN = 1024
#: What one more onnxruntime call costs beyond its tokens, in tokens: a batch takes a longer text
#: only if the padding that adds to the batch's texts is at most this (or an eighth of the batch).
#: A compile embeds its task (~40 word pieces) with its steps' short texts (~10): padded to the
#: task in one batch, its texts cost the model 1.5 times the CPU they do in batches of like length
#: (docs/benchmarks.md, "A compile's texts run in batches of like length").
RUN_COST_TOKENS = 8


class UnsupportedModel(EmbeddingError):
    """The model is not one this runtime can run (the caller falls back to torch)."""


@dataclass(frozen=True, slots=True)
class Export:
    """A model's export: its files and metadata, as the cache holds them
    (:func:`jit.embedding.onnx_cache.load_cached`) or as an export stages them."""

    meta: dict[str, Any]
    onnx: Path
    tokenizer: Path


class ExportedModel:
    """An exported model's text side: texts in, unit float32 vectors out; :meth:`_infer` runs the graph.

    Texts are tokenized together, sorted by token length and run in batches padded
    to their longest member, then put back in order: with tool descriptions from a
    few tokens to the truncation limit, unsorted batches of 64 spend most of their
    time on padding (3x slower on real tool texts). A batch holds at most
    ``batch_size`` texts and :data:`TOKENS_PER_RUN` padded tokens: on a CPU, big
    batches gain nothing and their activations fall out of cache (batches of 16
    ran ~15% faster than 64 on 2 cores). :class:`OnnxModel` runs the graph on
    onnxruntime, :class:`jit.embedding.openvino_bulk.OpenVinoModel` on OpenVINO.
    With :attr:`run_cost` set, a batch also stops where its next text would add more padding
    than another call costs (:data:`RUN_COST_TOKENS`).
    """

    #: One more call's cost in tokens (:data:`RUN_COST_TOKENS`); None: batches as full as fit.
    run_cost: int | None = None

    def __init__(self, export: Export) -> None:
        from tokenizers import Tokenizer

        meta = export.meta
        self.export = export
        self.meta = meta
        self.dimension = int(meta["dimension"])
        self.pooling = str(meta["pooling"])
        self.inputs: list[str] = list(meta["inputs"])
        self.tokenizer = Tokenizer.from_file(str(export.tokenizer))
        self.tokenizer.no_padding()
        self.tokenizer.enable_truncation(int(meta["max_length"]))
        self.pad_id = int(meta["pad_id"])

    def run(self, texts: Sequence[str], batch_size: int = 64) -> np.ndarray:
        out = np.zeros((len(texts), self.dimension), dtype=np.float32)
        for rows, feeds, mask in self._batches(texts, batch_size):
            out[rows] = self.pooled(self._infer(feeds), mask)
        return out

    def pooled(self, hidden: np.ndarray, mask: np.ndarray) -> np.ndarray:
        """One batch's unit vectors from its last hidden state and attention mask."""
        return _pool(hidden, mask, self.pooling)

    def _batches(self, texts: Sequence[str], batch_size: int
                 ) -> Iterator[tuple[np.ndarray, dict[str, np.ndarray], np.ndarray]]:
        """``texts`` as the graph's padded batches: each batch's rows in ``texts``, its feeds and its
        attention mask (for the pooling)."""
        if not texts:
            return
        encodings = self.tokenizer.encode_batch(list(texts))
        lengths = np.fromiter((len(e.ids) for e in encodings), dtype=np.int64, count=len(encodings))
        order = np.argsort(lengths, kind="stable")
        start = 0
        while start < len(order):
            # Sorted ascending, so the batch's last text is its longest: grow while it fits.
            end = start + 1
            while end < len(order) and end - start < batch_size and \
                    (end - start + 1) * lengths[order[end]] <= TOKENS_PER_RUN and \
                    not self._wasteful(end - start, int(lengths[order[end - 1]]), int(lengths[order[end]])):
                end += 1
            rows = order[start:end]
            yield (rows, *self._feeds([encodings[i] for i in rows], int(lengths[rows[-1]])))
            start = end

    def _wasteful(self, count: int, width: int, longer: int) -> bool:
        """Whether a batch of ``count`` texts padded to ``width`` had better stop before a text of
        ``longer`` tokens than pad them all to it (:attr:`run_cost`)."""
        if self.run_cost is None:
            return False
        return count * (longer - width) > max(self.run_cost, count * width // 8)

    def _feeds(self, encodings: list[Any], width: int) -> tuple[dict[str, np.ndarray], np.ndarray]:
        n = len(encodings)
        ids = np.full((n, width), self.pad_id, dtype=np.int64)
        mask = np.zeros((n, width), dtype=np.int64)
        types = np.zeros((n, width), dtype=np.int64)
        for row, enc in enumerate(encodings):
            k = len(enc.ids)
            ids[row, :k] = enc.ids
            mask[row, :k] = enc.attention_mask
            types[row, :k] = enc.type_ids
        feeds = {"input_ids": ids, "attention_mask": mask, "token_type_ids": types}
        return {name: feeds[name] for name in self.inputs}, mask

    def _infer(self, feeds: dict[str, np.ndarray]) -> np.ndarray:
        """The graph's last hidden state for one padded batch."""
        raise NotImplementedError


class OnnxModel(ExportedModel):
    """An exported model loaded into onnxruntime. ``run`` is thread-safe (onnxruntime sessions are).

    Its batches stop where padding costs more than a call (:attr:`~ExportedModel.run_cost`): a
    text's vector is the same bit for bit in any batch (tests/test_onnx_embedder.py)."""

    run_cost = RUN_COST_TOKENS

    def __init__(self, export: Export, *, threads: int | None = None) -> None:
        import onnxruntime as ort

        super().__init__(export)
        options = ort.SessionOptions()
        options.intra_op_num_threads = threads or _default_threads()
        options.inter_op_num_threads = 1
        # Idle pool threads spinning for work slow everything else on a small machine
        # (the compile's own scan, other processes) more than they speed the next run.
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        options.log_severity_level = 3
        self.session = ort.InferenceSession(str(export.onnx), options, providers=["CPUExecutionProvider"])

    def _infer(self, feeds: dict[str, np.ndarray]) -> np.ndarray:
        return self.session.run(None, feeds)[0]


def probe_cosine(model: ExportedModel, reference: np.ndarray) -> tuple[float, np.ndarray]:
    """The least cosine between ``model``'s vectors of :data:`PROBE_TEXTS` and ``reference``'s,
    the probes run in one mixed batch and one by one (padding must change nothing), and the
    one-by-one vectors."""
    together = model.run(list(PROBE_TEXTS))
    alone = np.concatenate([model.run([t]) for t in PROBE_TEXTS])
    return float(min((together * reference).sum(axis=1).min(), (alone * reference).sum(axis=1).min())), alone


def check_probe(model: ExportedModel) -> float:
    """The cosine between the model's vector for the first probe and the one stored at export."""
    stored = np.asarray(model.meta["probe_vector"], dtype=np.float32)
    return float(model.run([PROBE_TEXTS[0]])[0] @ stored)


def require_runtime() -> None:
    try:
        import onnxruntime  # noqa: F401
        import tokenizers  # noqa: F401
    except ImportError as exc:
        raise UnsupportedModel(f"the ONNX runtime needs onnxruntime and tokenizers: {exc}") from exc


@contextmanager
def quiet_onnxruntime() -> Iterator[None]:
    """Keep onnxruntime's Python tools (the quantizer, the transformer optimizer) out of the logs.

    They log a line per tensor or pattern, through the root logger (``logging.info``: the
    first such call installs a stderr handler on a process that has none, and a ``jit sync``
    would print their notes, and later every library's warnings) or through loggers named
    after their modules (``fusion_base``), whose records reach the root's handlers. So the
    filter sits on the root and on each of its handlers.
    """
    root = logging.getLogger()
    guard = logging.NullHandler()  # root has a handler, so logging.info() installs none

    def not_onnxruntime(record: logging.LogRecord) -> bool:
        return "onnxruntime" not in record.pathname

    root.addHandler(guard)
    filtered = [root, *root.handlers]
    for f in filtered:
        f.addFilter(not_onnxruntime)
    try:
        yield
    finally:
        for f in filtered:
            f.removeFilter(not_onnxruntime)
        root.removeHandler(guard)


def _pool(hidden: np.ndarray, mask: np.ndarray, mode: str) -> np.ndarray:
    """Pool token states as sentence-transformers' Pooling does, then L2-normalise (as its Normalize)."""
    weights = mask[:, :, None].astype(np.float32)
    if mode == "cls":
        vecs = hidden[:, 0]
    elif mode == "max":
        vecs = np.where(weights > 0, hidden, np.float32(-1e9)).max(axis=1)
    else:
        vecs = (hidden * weights).sum(axis=1) / np.maximum(weights.sum(axis=1), np.float32(1e-9))
    norms = np.linalg.norm(vecs, axis=1, keepdims=True)
    return (vecs / np.maximum(norms, np.float32(1e-12))).astype(np.float32, copy=False)


def _default_threads() -> int:
    """onnxruntime's intra-op threads: the CPUs this process may use, at most 4.

    The small model's products gain from a second thread on an otherwise idle machine and
    scale poorly past 4.
    """
    from ..process import usable_cpus

    return usable_cpus()

