"""What an embedder is (:class:`Embedder`), and what the passes ask of one before it embeds.

An embedder turns texts into unit float32 vectors of a fixed dimension under a
``model_name``; the catalog stores vectors under that name, so two embedders with the
same name must give the same vectors. :func:`exports_first` and :func:`load_model` are
what sync, serve and compile ask before the model's first use, so they can say what
they wait for.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

import numpy as np

from ..progress import ProgressCallback, Step

__all__ = ["FIRST_EXPORT_NOTE", "Embedder", "exports_first", "load_model"]


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


#: What a first load says when the model must be exported first (:func:`exports_first`).
FIRST_EXPORT_NOTE = "the first time on this machine it is exported to ONNX (about ten seconds, once)"


def exports_first(embedder: Embedder) -> bool:
    """Whether loading ``embedder``'s model exports it to ONNX first (~10 s, once per machine), which
    sync, serve and compile say before they go quiet (about 1 ms to tell: the model files' fingerprint)."""
    exported = getattr(embedder, "exported", None)
    return exported is not None and not exported()


def load_model(embedder: Embedder, progress: ProgressCallback | None = None) -> None:
    """Load ``embedder``'s model now, as the step ``model`` (``loading the embedding model``), unless
    it is loaded already (or loads nothing: an embedder without a ``loaded`` attribute).

    Loading takes about half a second from the cache, but the first time on a machine the
    model is exported to ONNX first (about ten seconds, :mod:`jit.embedding.onnx_export`), and
    torch takes seconds to import: a sync says what it waits for instead of going quiet."""
    if getattr(embedder, "loaded", True):
        return
    detail = f"model {embedder.model_name}" + ("; first use here: exporting it to ONNX, ~10 s"
                                               if exports_first(embedder) else "")
    with Step(progress, "model", "loading the embedding model", None, detail=detail):
        embedder.dimension  # noqa: B018 - the property loads the model
