"""The retrieval index on disk, so a new process does not rebuild it.

Building a :class:`~jit.selection.retrieve.RetrievalIndex` means reading every
vector out of SQLite and tokenising every tool's text: 2 s at 10,000 tools and
17 s at 100,000 on the benchmark machine, paid again by every ``jit compile``
and every ``jit serve`` start. The index is a pure function of the catalog's
tools (their ids, definitions and vectors, in row order), so it is written once
next to the catalog and read back when the same tools are asked for again:

    .jit/catalog.db          the catalog
    .jit/catalog.db.index/   <key>.npz and <key>.npy, per recent tool set

The vectors are a plain ``.npy`` mapped into memory rather than read (100,000
tools hold 150 MB of them; pages are read as a scan first touches them), the
rest (lexical index with its term frequencies and lengths, which rows have a
vector, the model) an ``.npz`` written after it. A process holding an index
patches it when a few tools change (:meth:`RetrievalIndex.patched`) and writes
the result here under its new key.

The key is a digest of what the index is made of (format version, embedding
model, and per tool its id, definition hash, vector text hash and whether it
awaits a vector): any change to the catalog that could change the index
changes the key, so a stale file is never read, only left to be pruned. Files
are written to a temporary name and renamed (:func:`jit.paths.write_atomic`), so a
reader never sees half of one; an unreadable file is treated as missing (and logged), never as an error:
the index is rebuilt from the catalog, which stays the only source of truth.
"""

from __future__ import annotations

import hashlib
import logging
import os
import time
import zipfile
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np

from ..models import ToolState
from ..paths import write_atomic
from .retrieve import LexicalIndex, RetrievalIndex

__all__ = ["IndexCache", "index_key"]

log = logging.getLogger(__name__)

#: Bumped whenever what is stored, or how an index is built from the catalog, changes.
FORMAT = 3
#: Index files kept per catalog (configs that share a catalog see different tool sets).
KEEP = 4


def index_key(model: tuple[str, int] | None, rows: Sequence[int], states: Mapping[int, ToolState]) -> str:
    """A digest of everything an index over ``rows`` is built from (see the module docstring); ``model``
    the embedding model (name, dimension) whose vectors it holds, None for none."""
    name, dim = model if model is not None else (None, 0)
    h = hashlib.blake2b(digest_size=16)
    h.update(f"{FORMAT}\0{name}\0{dim}\0{len(rows)}".encode())
    for i in rows:
        state = states[i]
        h.update(f"\0{i}\0{state.definition_hash}\0{state.text_hash}\0{state.needs_embedding}".encode())
    return h.hexdigest()


class IndexCache:
    """Index files of one catalog; a no-op for an in-memory catalog."""

    def __init__(self, catalog_path: str) -> None:
        self.directory = None if catalog_path == ":memory:" else Path(f"{catalog_path}.index")

    def load(self, key: str, heads: Sequence[tuple[str, str]]) -> RetrievalIndex | None:
        """The index stored under ``key`` over the tools ``heads`` names (``(server, name)``, row
        order), or None."""
        if self.directory is None:
            return None
        path = self.directory / f"{key}.npz"
        try:
            with np.load(path, allow_pickle=False) as data:
                n = int(data["n"])
                terms = bytes(data["terms"]).decode("utf-8").split("\n") if int(data["term_count"]) else []
                if n != len(heads) or len(terms) != int(data["term_count"]):
                    raise ValueError("the file does not match its key")
                lexical = LexicalIndex.from_arrays(n, terms, data["offsets"], data["rows"], data["tf"],
                                                   data["lengths"], data["weights"])
                has_vector = data["has_vector"]
                shape = tuple(int(d) for d in data["shape"])
                name, _, dim = bytes(data["model"]).decode("utf-8").rpartition("\0")
                model = (name, int(dim)) if dim else None
            matrix = np.load(path.with_suffix(".npy"), mmap_mode="r", allow_pickle=False)
            if matrix.shape != shape or matrix.dtype != np.float32 or len(has_vector) != n:
                raise ValueError("the vectors do not match the index")
        except FileNotFoundError:
            return None
        except (OSError, ValueError, KeyError, EOFError, UnicodeDecodeError, zipfile.BadZipFile) as exc:
            log.warning("ignoring the unreadable retrieval index %s (%s); rebuilding it", path, exc)
            return None
        try:
            os.utime(path)  # recently used: pruned last
        except OSError:
            pass
        return RetrievalIndex.from_arrays(heads, matrix, has_vector, lexical, model=model)

    def save(self, key: str, index: RetrievalIndex) -> None:
        """Write ``index`` under ``key`` (atomically) and prune the oldest files. A catalog
        directory that cannot be written to costs the next process a rebuild, nothing more."""
        if self.directory is None:
            return
        lex = index.lexical
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
            # The vectors first: a reader takes the .npz as the sign that both are complete.
            write_atomic(self.directory / f"{key}.npy", lambda f: np.save(f, np.asarray(index.matrix, np.float32)),
                         durable=False)
            write_atomic(self.directory / f"{key}.npz", lambda f: np.savez(
                f, n=np.int64(index.n), shape=np.array(index.matrix.shape, dtype=np.int64),
                has_vector=index.has_vector,
                term_count=np.int64(len(lex.terms)),
                terms=np.frombuffer("\n".join(lex.terms).encode("utf-8"), dtype=np.uint8),
                offsets=lex.offsets, rows=lex.rows, tf=lex.tf, lengths=lex.lengths, weights=lex.weights,
                model=np.frombuffer(f"{index.model[0]}\0{index.model[1]}".encode() if index.model else b"",
                                    dtype=np.uint8)), durable=False)
            files = sorted(self.directory.glob("*.npz"), key=lambda p: p.stat().st_mtime, reverse=True)
            kept = {p.stem for p in files[:KEEP]}
            for old in files[KEEP:]:
                old.unlink(missing_ok=True)
            for vectors in self.directory.glob("*.npy"):
                if vectors.stem not in kept and vectors.stat().st_mtime < time.time() - 60:  # not one being written
                    vectors.unlink(missing_ok=True)
        except OSError as exc:
            log.warning("could not keep the retrieval index in %s: %s", self.directory, exc)
