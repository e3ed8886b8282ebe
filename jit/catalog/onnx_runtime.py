"""A torch-free runtime for sentence-transformers models: ONNX Runtime and tokenizers.

Importing torch and loading a model through sentence-transformers takes seconds and
hundreds of megabytes; embedding one query needs neither. Here the model's
transformer is exported to ONNX once per model (the only time torch is needed), into
a cache keyed by a fingerprint of the model's files, and every later process loads
that export with ``onnxruntime`` and the model's own ``tokenizers`` tokenizer in a
fraction of a second.

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
  one) to a cosine of :data:`MIN_COSINE`; the first probe's torch vector is stored
  with it and checked again at every load, which with the recorded file sizes
  catches a damaged cache file (it is then exported again).

The graph queries and syncs run is the *fused* one (:data:`FUSED`): the transformer
traced with its eager attention, which onnxruntime's transformer optimizer rewrites into
one ``Attention`` operator per layer (the projections of q, k and v in one product) and
fused layer norms and GELUs: 46 operators instead of 669 for MiniLM-L6, a query ~12 %
faster (long tool texts ~1 %: their time is the products'), a quicker load, the same
vectors (verified as any export is). The plain export (the default attention, unfused)
is what :mod:`jit.catalog.onnx_int8` quantizes: int8 vectors depend on the exact graph,
and these are the ones its scheme was measured on.

Supported: a sentence-transformers model directory whose modules are a Transformer,
a Pooling (mean, CLS or max) and optionally a Normalize. Anything else (a Dense
layer, a hub name with no local directory) is :class:`UnsupportedModel`, and the
caller uses torch.

The cache lives in ``$JIT_CACHE_DIR``, else ``$XDG_CACHE_HOME/jit``, else
``~/.cache/jit`` (``onnx/`` inside). Files are content-addressed and written
through a temporary file and a rename, the metadata last, so concurrent processes
never read half a file: each sees either no export or a complete one.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import shutil
import stat
import tempfile
import threading
import time
import warnings
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from .. import __version__
from ..errors import EmbeddingError
from ..paths import write_atomic

__all__ = [
    "FUSED",
    "MIN_COSINE",
    "PROBE_TEXTS",
    "Export",
    "ExportedModel",
    "ModelLayout",
    "OnnxModel",
    "UnsupportedModel",
    "cache_root",
    "ensure_export",
    "read_layout",
]

log = logging.getLogger(__name__)

#: Bump when the export or its metadata change shape: older exports are then ignored.
#: 2: the fp32 weights are a file of their own beside the graph (:func:`_split_weights`).
EXPORT_FORMAT = 2

#: The variant name of the fused fp32 graph (:func:`ensure_export` with ``fused=True``).
FUSED = "fused"

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

#: Files larger than this are fingerprinted by size and modification time, not content:
#: hashing a model's weights would cost every process start a tenth of a second.
_HASHED_UP_TO = 1 << 20

_POOLING_MODES = ("mean", "cls", "max")

#: Padded tokens per model call at most (see :class:`ExportedModel`).
TOKENS_PER_RUN = 1024


class UnsupportedModel(EmbeddingError):
    """The model is not one this runtime can run (the caller falls back to torch)."""


def cache_root() -> Path:
    """Where jit keeps files it can rebuild: ``$JIT_CACHE_DIR``, ``$XDG_CACHE_HOME/jit`` or ``~/.cache/jit``."""
    if env := os.environ.get("JIT_CACHE_DIR"):
        return Path(env).expanduser()
    base = os.environ.get("XDG_CACHE_HOME")
    return (Path(base).expanduser() if base else Path.home() / ".cache") / "jit"


@dataclass(frozen=True, slots=True)
class ModelLayout:
    """What this runtime needs to know of a sentence-transformers model directory."""

    path: Path
    pooling: str  # one of _POOLING_MODES
    dimension: int

    @property
    def slug(self) -> str:
        """A readable prefix for cache file names (the fingerprint makes them unique)."""
        return re.sub(r"[^A-Za-z0-9._-]+", "-", self.path.name if self.path.name != "model" else
                      f"{self.path.parent.name}-{self.path.name}")[:60]


def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise UnsupportedModel(f"cannot read {path}: {exc}") from exc


def read_layout(path: str | os.PathLike[str]) -> ModelLayout:
    """Check that ``path`` is a model directory this runtime supports, reading only its configs."""
    root = Path(path)
    modules_file = root / "modules.json"
    if not modules_file.is_file():
        raise UnsupportedModel(f"{root} is not a sentence-transformers model directory (no modules.json)")
    modules = sorted(_read_json(modules_file), key=lambda m: m.get("idx", 0))
    kinds = [str(m.get("type", "")).rsplit(".", 1)[-1] for m in modules]
    if kinds not in (["Transformer", "Pooling"], ["Transformer", "Pooling", "Normalize"]):
        raise UnsupportedModel(f"modules {kinds} of {root}: only Transformer, Pooling[, Normalize] is supported")
    if modules[0].get("path", ""):
        raise UnsupportedModel(f"{root}: the transformer must be at the model's top level")
    if not (root / "tokenizer.json").is_file():
        raise UnsupportedModel(f"{root} has no tokenizer.json (a fast tokenizer is needed)")
    pooling = _read_json(root / modules[1].get("path", "1_Pooling") / "config.json")
    mode = pooling.get("pooling_mode")
    if mode is None:
        chosen = [k for k, v in pooling.items() if k.startswith("pooling_mode_") and v is True]
        mode = {"pooling_mode_mean_tokens": "mean", "pooling_mode_cls_token": "cls",
                "pooling_mode_max_tokens": "max"}.get(chosen[0]) if len(chosen) == 1 else None
    if mode not in _POOLING_MODES:
        raise UnsupportedModel(f"{root}: pooling {pooling} is not one of {_POOLING_MODES}")
    if pooling.get("include_prompt") is False:
        raise UnsupportedModel(f"{root}: pooling that excludes the prompt is not supported")
    dimension = pooling.get("word_embedding_dimension") or pooling.get("embedding_dimension")
    if not isinstance(dimension, int):
        raise UnsupportedModel(f"{root}: the pooling config names no word_embedding_dimension")
    return ModelLayout(root, mode, dimension)


def fingerprint(layout: ModelLayout) -> str:
    """A digest of the model's files (small ones by content, weights by size and mtime) and the export format."""
    digest = hashlib.sha256(f"jit-onnx-export:{EXPORT_FORMAT}".encode())
    for file in sorted(p for p in layout.path.rglob("*") if p.is_file()):
        rel = file.relative_to(layout.path)
        if any(part.startswith(".") for part in rel.parts):
            continue
        st = file.stat()
        digest.update(f"\0{rel.as_posix()}\0{st.st_size}\0".encode())
        if st.st_size <= _HASHED_UP_TO:
            digest.update(hashlib.sha256(file.read_bytes()).digest())
        else:
            digest.update(str(st.st_mtime_ns).encode())
    return digest.hexdigest()[:32]


# ---------------------------------------------------------------------------- the runtime


@dataclass(frozen=True, slots=True)
class Export:
    """A cached model's files and metadata, as :func:`_read_export` found them (or as staged)."""

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
    onnxruntime, :class:`jit.catalog.openvino_bulk.OpenVinoModel` on OpenVINO.
    """

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
                    (end - start + 1) * lengths[order[end]] <= TOKENS_PER_RUN:
                end += 1
            rows = order[start:end]
            yield (rows, *self._feeds([encodings[i] for i in rows], int(lengths[rows[-1]])))
            start = end

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
    """An exported model loaded into onnxruntime. ``run`` is thread-safe (onnxruntime sessions are)."""

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


def _split_weights(single: Path, weights_file: str) -> Path:
    """The graph of the one-file export ``single`` with its weights moved to ``weights_file`` beside it;
    returns the new graph's path.

    onnxruntime maps a weights file into memory instead of reading it: a process loading the
    model peaks at ~108 MB instead of ~191 MB (the one-file model is read whole, then its
    weights copied out of it) and loads in ~0.12 s instead of ~0.21 s, same vectors. The
    location inside the graph is relative: the two files are renamed into the cache together."""
    import onnx

    model = onnx.load(str(single))
    graph = single.with_name("graph.onnx")
    onnx.save_model(model, str(graph), save_as_external_data=True, all_tensors_to_one_file=True,
                    location=weights_file, size_threshold=1024)
    os.chmod(graph.parent / weights_file, stat.S_IMODE(graph.stat().st_mode))  # onnx makes it owner-only
    single.unlink()
    return graph


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

    On an otherwise idle 2-core machine two threads against one: 164 against 87 tool
    texts/s, 5.3 against 8.4 ms for a query (under heavy load from other processes
    the two were even). Past 4 threads the small model's matrices scale poorly.
    """
    from ..process import usable_cpus

    return usable_cpus()


# ---------------------------------------------------------------------------- the cache


def meta_path_of(layout: ModelLayout, fp: str, variant: str = "") -> Path:
    """Where the metadata of the model's export (or of a ``variant`` derived from it) is cached."""
    return cache_root() / "onnx" / f"{layout.slug}-{fp}{'-' + variant if variant else ''}.json"


def _read_export(meta_path: Path, fp: str, **expected: Any) -> Export | None:
    """The cached model that ``meta_path`` describes, or None if there is none (or one of another
    format, model or ``expected`` metadata); a damaged one is a :class:`EmbeddingError`."""
    try:
        meta = json.loads(meta_path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        raise EmbeddingError(f"unreadable export metadata {meta_path}: {exc}") from exc
    if meta.get("format") != EXPORT_FORMAT or meta.get("fingerprint") != fp or \
            any(meta.get(key) != value for key, value in expected.items()):
        return None
    export = Export(meta, meta_path.parent / meta["onnx_file"], meta_path.parent / meta["tokenizer_file"])
    files = [(export.onnx, meta["onnx_size"]), (export.tokenizer, meta["tokenizer_size"])]
    if "weights_file" in meta:
        files.append((meta_path.parent / meta["weights_file"], meta["weights_size"]))
    for file, size in files:
        try:
            actual = file.stat().st_size
        except OSError as exc:
            raise EmbeddingError(f"export file {file} is missing: {exc}") from exc
        if actual != size:
            raise EmbeddingError(f"export file {file} has {actual} bytes, {size} expected (damaged)")
    return export


def load_cached(meta_path: Path, fp: str, *, threads: int | None, rebuild: str, **expected: Any) -> OnnxModel | None:
    """The cached model ``meta_path`` describes, loaded and checked on its stored probe vector.

    None when the cache has none, or a damaged one: that is logged (``rebuild`` says
    what the caller does next) and its metadata removed, so the caller builds it again.
    """
    try:
        export = _read_export(meta_path, fp, **expected)
        if export is None:
            return None
        model = OnnxModel(export, threads=threads)
        cosine = check_probe(model)
        if cosine >= MIN_COSINE:
            return model
        raise EmbeddingError(f"the probe's vector moved (cosine {cosine:.6f}) since it was cached")
    except Exception as exc:  # noqa: BLE001 - onnxruntime raises its own types for a bad file
        log.warning("embedding: the cached ONNX model %s is damaged (%s); %s", meta_path.name, exc, rebuild)
        meta_path.unlink(missing_ok=True)
        return None


def fsync(path: Path) -> None:
    """Flush ``path`` to disk before it is renamed into place (a crash must not leave a short file)."""
    with open(path, "rb") as f:
        os.fsync(f.fileno())


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


#: Held while a model is loaded from the cache or built into it (re-entrant: int8 builds on fp32).
export_lock = threading.RLock()


def cache_directory() -> Path:
    """The cache's ``onnx/`` directory, created if need be; an :class:`EmbeddingError` naming it and
    the remedy when it cannot be (a ``$JIT_CACHE_DIR`` under a file, a home directory not writable).
    A cache that exists but is read-only is fine to load from: only an export needs to write."""
    directory = cache_root() / "onnx"
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise EmbeddingError(f"the ONNX model cache {directory} cannot be created ({exc.strerror or exc}): "
                             "set JIT_CACHE_DIR to a writable directory") from exc
    return directory


def require_runtime() -> None:
    try:
        import onnxruntime  # noqa: F401
        import tokenizers  # noqa: F401
    except ImportError as exc:
        raise UnsupportedModel(f"the ONNX runtime needs onnxruntime and tokenizers: {exc}") from exc


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
            failed = _failed_before(meta)
            if failed is not None:
                log.info("embedding: no fused graph of %s (it failed before: %s); running the plain export",
                         layout.path, failed)
            else:
                try:
                    return _export(layout, fp, threads=threads, fused=True)
                except Exception as exc:  # noqa: BLE001 - the eager trace or fusion failed: the plain one may not
                    log.warning("embedding: no fused graph of %s (%s); running the plain export", layout.path, exc)
                    if not isinstance(exc, OSError):  # a full disk, say, may pass: try again next time
                        _remember_failure(meta, exc)
        model = load_cached(meta_path_of(layout, fp), fp, threads=threads, rebuild="exporting it again")
        return model if model is not None else _export(layout, fp, threads=threads)


def _failure_path(meta: Path) -> Path:
    return meta.with_suffix(".failed")


def _failed_before(meta: Path) -> str | None:
    """Why making the export ``meta`` describes failed in an earlier process of this jit (None: it
    did not, or another jit tried). Exporting imports torch and takes seconds: a process must not
    pay that at every start for a graph that cannot be made."""
    try:
        record = json.loads(_failure_path(meta).read_text(encoding="utf-8"))
        return str(record["reason"]) if record.get("jit") == __version__ else None
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None


def _remember_failure(meta: Path, exc: Exception) -> None:
    record = {"jit": __version__, "reason": f"{type(exc).__name__}: {exc}"[:2000]}
    try:
        write_atomic(_failure_path(meta), lambda f: f.write(json.dumps(record).encode("utf-8")))
    except OSError as error:
        log.debug("could not record the failed export in %s: %s", _failure_path(meta), error)


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


#: Files of the cache no metadata names are removed once this old (seconds): an export in
#: progress renames its model files into place before its metadata, and a slow one can take a while.
ORPHAN_AGE = 3600.0


def prune_cache(directory: Path, model_path: Path, fp: str, *, now: float | None = None) -> list[Path]:
    """Remove the exports a new export of ``model_path`` (fingerprint ``fp``) made obsolete; return what went.

    An export is obsolete when its model directory is gone (a deleted virtualenv, an
    uninstalled model package) or when it is an earlier export of ``model_path`` itself (its
    files changed since: a reinstall gives new modification times, so a new fingerprint). Each
    is ~90 MB, and without this every virtualenv a machine ever had left one behind. The
    metadata goes first, so no reader finds an export whose files are going; then every file
    no remaining metadata names (int8 models derived from an obsolete export included), and
    files or staging directories left by a process killed mid-export once :data:`ORPHAN_AGE`
    old. Best effort: a file that cannot be removed is logged and kept, the export stands.
    """
    now = time.time() if now is None else now
    removed: list[Path] = []
    kept: set[str] = set()
    doomed: set[str] = set()
    for meta_path in sorted(directory.glob("*.json")):
        if meta_path.name.endswith(".tokenizer.json"):
            continue
        try:
            meta = json.loads(meta_path.read_text(encoding="utf-8"))
            source = Path(str(meta["model_path"]))
            obsolete = not source.is_dir() or (source == model_path and meta.get("fingerprint") != fp)
        except (OSError, ValueError, KeyError, TypeError):
            continue  # not an export's metadata, or one being replaced: leave it alone
        files = {str(meta.get(key)) for key in ("onnx_file", "weights_file", "tokenizer_file")}
        if obsolete and _remove(meta_path):
            removed.append(meta_path)
            doomed |= files
        else:
            kept |= files
    for path in sorted(directory.iterdir()):
        staging = path.is_dir() and path.name.startswith((".export-", ".int8-"))
        if path.name in kept or not (staging or path.suffix in (".onnx", ".weights")
                                     or path.name.endswith(".tokenizer.json")):
            continue
        try:
            old = now - path.stat().st_mtime >= ORPHAN_AGE
        except OSError:
            continue
        if (path.name in doomed or old) and _remove(path):
            removed.append(path)
    if removed:
        log.info("embedding: removed %d cached ONNX file(s) of models no longer installed or since changed",
                 len(removed))
    return removed


def _remove(path: Path) -> bool:
    try:
        if path.is_dir():
            shutil.rmtree(path)
        else:
            path.unlink(missing_ok=True)
        return True
    except OSError as exc:
        log.warning("embedding: could not remove the obsolete cache file %s: %s", path, exc)
        return False
