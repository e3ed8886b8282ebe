"""The vector part of the catalog: the embedding model, the content-hash cache, each tool's vector.

Mixed into :class:`~jit.catalog.store.Store` (which provides ``transaction``, ``_query``,
``_bump``, ``_lock``, ``_errors``, ``_backend``, ``_conn``, ``_depth`` and ``_scope_sql``). Where the vectors
live is the engine's business (:class:`jit.catalog.backend.Backend`): a sqlite-vec
``vec0`` table of the model's dimension, or float32 bytes in a PostgreSQL ``bytea``
column. Either way :meth:`VectorStore.vector_matrix` reads them, a batch at a time, into one
float32 matrix, and search runs on it in memory (jit/selection/retrieve.py).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np

from ..errors import StoreError

__all__ = ["VectorStore"]

#: Vectors read from the catalog per fetch (:meth:`VectorStore.vector_matrix`).
_READ_BATCH = 2048


class VectorStore:
    """Embeddings of the :class:`~jit.catalog.store.Store` (a mixin; see the module docstring)."""

    _backend: Any
    _conn: Any
    _depth: int
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

    def vector_matrix(self, ids: Iterable[int] | None = None) -> tuple[np.ndarray, np.ndarray]:
        """The vectors of the tools in scope as ``(ids int64[n], matrix float32[n, dim])`` for in-memory scans,
        ids ascending; with ``ids``, only those of these tools (a view following a change of a few).

        Read a batch at a time into one matrix: holding every row and a joined copy of their
        bytes besides the matrix would take three times its size (~470 MB at 100,000 tools)."""
        model = self.embedding_model()
        if model is None or not self._has_vec_table():
            return np.zeros(0, dtype=np.int64), np.zeros((0, 0), dtype=np.float32)
        if ids is not None:
            return self._vectors_of(sorted(set(ids)), model[1])
        if self.scope is None:
            source, params = "tool_vectors v", []
        else:
            scope, params = self._scope_sql("t.server")
            source = f"tool_vectors v JOIN tools t ON t.id = v.tool_id WHERE {scope}"
        dim = model[1]

        def read() -> tuple[np.ndarray, np.ndarray]:
            # The count sizes the matrix; rows a writer adds meanwhile grow it, fewer trim it.
            size = int(self._conn.execute(f"SELECT count(*) FROM {source}", params).fetchone()[0])
            ids, mat, n = np.empty(size, dtype=np.int64), np.empty((size, dim), dtype=np.float32), 0
            # Not ORDER BY: SQLite sorts a vec0 scan in a temporary B-tree holding every row (~160 MB
            # at 100,000 tools). The scan comes in the order the vectors were written, which is id
            # order until a tool is embedded again; the rows are put in id order below if not.
            cursor = self._conn.execute(f"SELECT v.tool_id, v.embedding FROM {source}", params)
            while batch := cursor.fetchmany(_READ_BATCH):
                if n + len(batch) > len(ids):
                    grow = max(n + len(batch), 2 * len(ids))
                    ids, mat = np.resize(ids, grow), np.resize(mat, (grow, dim))
                ids[n:n + len(batch)] = [r[0] for r in batch]
                mat[n:n + len(batch)] = np.frombuffer(b"".join(r[1] for r in batch), dtype=np.float32
                                                      ).reshape(len(batch), dim)
                n += len(batch)
            if n != len(ids):
                ids, mat = ids[:n].copy(), mat[:n].copy()
            if n > 1 and not bool(np.all(ids[1:] > ids[:-1])):
                order = np.argsort(ids, kind="stable")
                ids = ids[order]
                _permute_rows(mat, order)
            return ids, mat

        with self._lock, self._errors("read"):
            return read() if self._depth else self._backend.read(read)

    def _vectors_of(self, ids: list[int], dim: int) -> tuple[np.ndarray, np.ndarray]:
        def read() -> dict[int, bytes]:
            return dict(self._backend.vector_rows(self._conn, ids))

        with self._lock, self._errors("read"):
            found = read() if self._depth else self._backend.read(read)
        have = [i for i in ids if i in found]
        mat = np.frombuffer(b"".join(found[i] for i in have), dtype=np.float32).reshape(len(have), dim).copy()
        return np.array(have, dtype=np.int64), mat


def _permute_rows(mat: np.ndarray, order: np.ndarray) -> None:
    """``mat[:] = mat[order]`` in place, one row of scratch instead of a copy of the matrix.

    A vector written again (a re-embedded tool) comes last in a vec0 scan, so a catalog's
    scan is rarely in id order after a sync; its 100,000 rows are 154 MB."""
    moved = np.flatnonzero(order != np.arange(len(order)))
    done = np.zeros(len(order), dtype=bool)
    for start in moved.tolist():
        if done[start]:
            continue
        first, k = mat[start].copy(), start
        while True:  # along the cycle: row k takes row order[k]
            done[k] = True
            nxt = int(order[k])
            if nxt == start:
                mat[k] = first
                break
            mat[k] = mat[nxt]
            k = nxt
