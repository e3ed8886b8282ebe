"""The embedder a config asks for (:func:`embedder_from_config`): the one place a runtime is chosen."""

from __future__ import annotations

from ..config import EmbeddingConfig
from .onnx_embedder import OnnxEmbedder
from .protocol import Embedder
from .torch_embedder import SentenceTransformerEmbedder

__all__ = ["embedder_from_config"]


def embedder_from_config(cfg: EmbeddingConfig, *, bulk_in_child: bool = False) -> Embedder:
    """The embedder ``embedding.runtime`` and ``embedding.precision`` ask for; nothing is imported or
    loaded until it is first used. int8 never falls back to torch (see :class:`OnnxEmbedder`).
    ``bulk_in_child``: the bulk model of a sync's pass runs in a child process (for a process that
    lives on after the pass: see :mod:`jit.embedding.bulk_process`)."""
    if cfg.runtime == "torch":
        return SentenceTransformerEmbedder.from_config(cfg)
    return OnnxEmbedder.from_config(cfg, fallback=cfg.runtime == "auto", bulk_in_child=bulk_in_child)
