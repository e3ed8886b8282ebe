"""The vector part of the catalog: the embedding model, the content-hash cache, each tool's vector.

Mixed into :class:`~jit.catalog.store.Store` (which provides ``transaction``, ``_query``,
``_bump``, ``_lock``, ``_errors``, ``_backend`` and ``_scope_sql``). Where the vectors
live is the engine's business (:class:`jit.catalog.backend.Backend`): a sqlite-vec
``vec0`` table of the model's dimension, or float32 bytes in a PostgreSQL ``bytea``
column. Either way :meth:`VectorStore.vector_matrix` reads them in one query into one
float32 matrix, and search runs on it in memory (jit/selection/retrieve.py).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np

from ..errors import StoreError

__all__ = ["VectorStore"]


class VectorStore:
    """Embeddings of the :class:`~jit.catalog.store.Store` (a mixin; see the module docstring)."""

    _backend: Any
    _lock: Any
    scope: frozenset[str] | None

    # ------------------------------------------------------------------ embeddings

    def embedding_model(self) -> tuple[str, int] | None:
        name, dim = self.get_meta("embedding_model"), self.get_meta("embedding_dim")
        return (name, int(dim)) if name and dim else None

    def set_embedding_model(self, model: str, dim: int) -> bool:
        """Declare the embedding model. A change drops every vector and marks all tools
        for re-embedding, so vectors of two models are never mixed. Returns True on change."""
        if self.embedding_model() == (model, dim) and self._has_vec_table():
            return False
        with self.transaction() as c:
            assert self._backend is not None
            self._backend.reset_vectors(c, int(dim))
            c.execute("UPDATE tools SET needs_embedding = 1")
            for key, value in (("embedding_model", model), ("embedding_dim", str(int(dim)))):
                c.execute(
                    "INSERT INTO meta(key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value",
                    (key, value),
                )
            self._bump(c)
        return True

    def _has_vec_table(self) -> bool:
        with self._lock, self._errors("read"):
            assert self._backend is not None
            return self._backend.has_vector_table()

    def _drop_vector(self, c: Any, tool_id: int) -> None:
        assert self._backend is not None
        if self._backend.has_vector_table():
            c.execute("DELETE FROM tool_vectors WHERE tool_id = ?", (tool_id,))
    def cached_vectors(self, model: str, hashes: Iterable[str]) -> dict[str, bytes]:
        hashes = list(dict.fromkeys(hashes))
        out: dict[str, bytes] = {}
        for i in range(0, len(hashes), 500):
            chunk = hashes[i : i + 500]
            marks = ",".join("?" * len(chunk))
            for r in self._query(
                f"SELECT text_hash, vector FROM embedding_cache WHERE model = ? AND text_hash IN ({marks})",
                [model, *chunk],
            ):
                out[r["text_hash"]] = r["vector"]
        return out

    def cache_vectors(self, model: str, rows: Iterable[tuple[str, bytes]]) -> int:
        """Add ``(text_hash, float32 bytes)`` to the embedding cache without giving them to a tool.

        For texts embedded for other uses (the evaluation's baseline texts), so they
        are never embedded twice either. Returns how many rows were offered.
        """
        n = 0
        with self.transaction() as c:
            for thash, vec in rows:
                c.execute(
                    "INSERT INTO embedding_cache(model, text_hash, vector) VALUES (?, ?, ?) ON CONFLICT DO NOTHING",
                    (model, thash, vec),
                )
                n += 1
        return n

    def put_vectors(self, model: str, rows: Iterable[tuple[int, str, bytes]], *, cache: bool = True) -> int:
        """Store ``(tool_id, text_hash, float32 bytes)``; clears ``needs_embedding``."""
        current = self.embedding_model()
        if current is None or current[0] != model:
            raise StoreError(f"embedding model {model!r} is not the catalog's model {current!r}")
        n = 0
        with self.transaction() as c:
            for tool_id, thash, vec in rows:
                if cache:
                    c.execute(
                        "INSERT INTO embedding_cache(model, text_hash, vector) VALUES (?, ?, ?) ON CONFLICT DO NOTHING",
                        (model, thash, vec),
                    )
                c.execute("DELETE FROM tool_vectors WHERE tool_id = ?", (tool_id,))
                c.execute("INSERT INTO tool_vectors(tool_id, embedding) VALUES (?, ?)", (tool_id, vec))
                c.execute("UPDATE tools SET needs_embedding = 0 WHERE id = ?", (tool_id,))
                n += 1
            if n:
                self._bump(c)
        return n

    def vector_matrix(self) -> tuple[np.ndarray, np.ndarray]:
        """The vectors of the tools in scope as ``(ids int64[n], matrix float32[n, dim])`` for in-memory scans."""
        model = self.embedding_model()
        if model is None or not self._has_vec_table():
            return np.zeros(0, dtype=np.int64), np.zeros((0, 0), dtype=np.float32)
        if self.scope is None:
            rows = self._query("SELECT tool_id, embedding FROM tool_vectors ORDER BY tool_id")
        else:
            scope, params = self._scope_sql("t.server")
            rows = self._query("SELECT v.tool_id, v.embedding FROM tool_vectors v JOIN tools t ON t.id = v.tool_id"
                               f" WHERE {scope} ORDER BY v.tool_id", params)
        ids = np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
        mat = np.frombuffer(b"".join(r[1] for r in rows), dtype=np.float32).reshape(len(rows), model[1])
        return ids, mat.copy()
