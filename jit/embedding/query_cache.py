"""Query vectors kept in memory (:class:`QueryVectorCache`), so shards spawned for one task embed it once."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Sequence

import numpy as np

from .protocol import Embedder

__all__ = ["QueryVectorCache"]


class QueryVectorCache(Embedder):
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
