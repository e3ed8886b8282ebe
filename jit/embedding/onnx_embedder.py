"""The embedding model on onnxruntime (:class:`OnnxEmbedder`): ``embedding.runtime`` ``auto`` and ``onnx``.

The default runtime: no torch in the process, the model loaded in under a second from
its ONNX export (:mod:`jit.embedding.onnx_export`, cached by :mod:`jit.embedding.onnx_cache`,
run by :mod:`jit.embedding.onnx_runtime`), or the int8 model (:mod:`jit.embedding.onnx_int8`).
A sync's many new tools go to :meth:`OnnxEmbedder.bulk` (OpenVINO in bfloat16 where the CPU
computes it, ``embedding.bulk_runtime``: :mod:`jit.embedding.openvino_bulk`, in a child
process for ``jit serve``: :mod:`jit.embedding.bulk_process`).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

import numpy as np

from ..config import DEFAULT_EMBEDDING_MODEL, EmbeddingConfig
from ..errors import EmbeddingError
from .bulk_process import bulk_process
from .onnx_cache import fingerprint, meta_path_of, read_layout
from .onnx_export import FUSED, ensure_export
from .onnx_int8 import SCHEME as INT8_SCHEME
from .onnx_int8 import ensure_int8
from .onnx_runtime import OnnxModel
from .openvino_bulk import BULK_MIN, bulk_model
from .protocol import BulkModel, Embedder, EmbedsInBulk, ExportsFirst, LoadsLazily, NamesItsRuntime
from .torch_embedder import SentenceTransformerEmbedder, model_path

__all__ = ["OnnxEmbedder"]

log = logging.getLogger(__name__)


class OnnxEmbedder(Embedder, LoadsLazily, ExportsFirst, EmbedsInBulk):
    """The model run by onnxruntime + tokenizers (:mod:`jit.embedding.onnx_runtime`), loaded lazily.

    In fp32, the same vectors as :class:`SentenceTransformerEmbedder` (so the same
    ``model_name``: switching runtimes re-embeds nothing), without importing torch:
    a new process loads the model in well under a second, where torch takes
    seconds. The first load on a machine exports the model (torch, once) into
    the cache. Texts are embedded in batches of similar token length, by the fused graph
    (:data:`~jit.embedding.onnx_export.FUSED`).

    With ``precision="int8"`` the export is quantized (:mod:`jit.embedding.onnx_int8`):
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
    bfloat16 where the CPU computes it natively (:mod:`jit.embedding.openvino_bulk`); with
    ``bulk_in_child`` (a process that lives on after the pass, ``jit serve``), that model runs in a
    child process that exits after the pass (:mod:`jit.embedding.bulk_process`).
    """

    def __init__(self, model: str = DEFAULT_EMBEDDING_MODEL, path: str | None = None, batch_size: int = 64,
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
        path = model_path(self._name, self._path)
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
                path = model_path(self._name, self._path)
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
        model: BulkModel | None = None
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


class _BulkEmbedder(Embedder, NamesItsRuntime):
    """:meth:`OnnxEmbedder.bulk`'s embedder on OpenVINO: the owner's name, dimension and count."""

    def __init__(self, owner: OnnxEmbedder, model: BulkModel) -> None:
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
