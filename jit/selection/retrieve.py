"""Retrieval: from a task to a 0–100 vector score for every tool.

The score mixes dense similarity (the catalog's MiniLM vectors, scanned as one
in-memory float32 matrix) and lexical relevance (an in-memory BM25 index over
tool name, server, description and parameter names), both min-max normalised
per query, weighted by ``tool_selection.lexical_weight``.

Benchmark tasks are multi-step ("a PDF report with a word cloud of trends"
needs a trends tool, a chart tool and a document tool) and one vector for the
whole text finds one step. So the task is also split into clauses
(:func:`split_task`) and a tool keeps its best score over the whole task and
the clauses. A small share of each server's best score is added to its other
tools, because a multi-step task often needs several tools of one server.

Exact mentions of a tool name (``create_issue``, ``github__create_issue``,
``github/create_issue``) or a server name are found by :func:`find_mentions`
and are never missed: the compiler puts them in the candidate set.

The index is built from one catalog snapshot; when ``Store.catalog_version()``
shows that definitions or vectors changed, the catalog view patches it
(:meth:`RetrievalIndex.patched`: only the changed tools tokenised and read).
"""

from __future__ import annotations

import math
import re
from array import array
from collections import Counter, defaultdict
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from itertools import repeat
from typing import Any

import numpy as np

from ..models import StoredTool
from ..process import matrix_product
from ..text import has_camel_hump, search_tokens

__all__ = ["LexicalIndex", "Mentions", "RetrievalIndex", "VectorScores", "find_mentions", "sentence_pieces", "split_task",
           "task_pieces"]

#: A clause's retrieval score counts this much of the whole task's.
CLAUSE_WEIGHT = 0.9
#: Share of a server's best vector score given to its other tools.
SERVER_SHARE = 0.15


def task_pieces(text: str) -> Iterator[str]:
    """A task's pieces in order: its sentences, each cut at ',', 'and', 'then', 'after that',
    'finally' (what :func:`split_task` and the steps' clauses are made of)."""
    for sentence in sentence_pieces(text):
        yield from sentence


def sentence_pieces(text: str) -> Iterator[list[str]]:
    """:func:`task_pieces` sentence by sentence: the pieces of each sentence that has one."""
    for sentence in re.split(r"(?<=[.!?;])\s+|\n+|[。；！？]", text):
        pieces = [piece.strip(" .,;:") for piece in
                  re.split(r",\s*(?:and\s+|then\s+)?|(?<!\s)\s+(?:and then|then|and|after that|finally)\s+", sentence)]
        if any(pieces):
            yield [piece for piece in pieces if piece]


def split_task(text: str, *, max_parts: int = 8) -> list[str]:
    """Clauses of a task: sentences, then parts joined by ';', ',', 'and', 'then'.

    Clauses of fewer than two content words are merged into the previous one;
    the whole task is not included (callers score it separately).
    """
    parts: list[str] = []
    for piece in task_pieces(text):
        if len(search_tokens(piece, drop_stopwords=True)) < 2 and parts:
            parts[-1] = f"{parts[-1]} {piece}"
        else:
            parts.append(piece)
    out = list(dict.fromkeys(parts))
    if len(out) <= 1:
        return []
    return out[:max_parts]


class LexicalIndex:
    """BM25 (k1=1.2, b=0.75) over name (counted twice), server, description and
    parameter text, as postings arrays so a query is one ``np.bincount``.

    The postings are held as one CSR table (``terms[j]``'s rows, term frequencies and
    weights are ``rows[offsets[j]:offsets[j + 1]]`` and so on, rows ascending), with each
    row's length in tokens: :mod:`jit.selection.indexcache` writes them to disk and reads
    them back without tokenising the catalog again, and :meth:`patched` follows a change
    of a few tools without tokenising the others."""

    K1 = 1.2
    B = 0.75

    def __init__(self, texts: Iterable[str]) -> None:
        """The index of ``texts`` (row order), read once: an iterator's texts need not all be held."""
        terms: list[str] = []
        term_id: dict[str, int] = {}
        lengths = array("f")
        term_of, rows, tf = _postings(enumerate(texts), terms, term_id, lengths)
        order = np.argsort(term_of, kind="stable")  # by term, rows ascending within one (read in row order)
        offsets = np.zeros(len(terms) + 1, dtype=np.int64)
        np.cumsum(np.bincount(term_of, minlength=len(terms)), out=offsets[1:])
        self._set(len(lengths), terms, offsets, rows[order], tf[order], np.frombuffer(lengths, dtype=np.float32).copy())

    def _set(self, n: int, terms: list[str], offsets: np.ndarray, rows: np.ndarray, tf: np.ndarray,
             lengths: np.ndarray, weights: np.ndarray | None = None) -> None:
        self.n = n
        self.terms, self.offsets, self.rows, self.tf, self.lengths = terms, offsets, rows, tf, lengths
        self.weights = _bm25(n, offsets, rows, tf, lengths, self.K1, self.B) if weights is None else weights
        self._term = {t: j for j, t in enumerate(terms)}

    @classmethod
    def from_arrays(cls, n: int, terms: list[str], offsets: np.ndarray, rows: np.ndarray, tf: np.ndarray,
                    lengths: np.ndarray, weights: np.ndarray) -> LexicalIndex:
        """An index from the tables of another one (:mod:`jit.selection.indexcache`)."""
        index = cls.__new__(cls)
        index._set(n, terms, offsets, rows, tf, lengths, weights)
        return index

    def patched(self, row_map: np.ndarray, n: int, texts: Mapping[int, str]) -> LexicalIndex:
        """This index after a change of a few documents, as :class:`LexicalIndex` would build it
        from all ``n`` texts, without tokenising the unchanged ones.

        ``row_map[r]`` is the new row of old row ``r`` (ascending where kept), -1 for a document
        gone or changed; ``texts`` the changed and new documents' texts by new row. The weights
        are computed again from the term frequencies and lengths (``n`` and the mean length move
        every one of them) by the same code, so every score is the one a new build gives; only
        the order of the terms may differ."""
        kept = row_map[self.rows] >= 0
        term_of = np.repeat(np.arange(len(self.terms), dtype=np.int64), np.diff(self.offsets))[kept]
        rows, tf = row_map[self.rows[kept]], self.tf[kept]
        lengths = np.zeros(n, dtype=np.float32)
        old = np.flatnonzero(row_map >= 0)
        lengths[row_map[old]] = self.lengths[old]
        terms, term_id = list(self.terms), dict(self._term)
        new_lengths, new_rows = array("f"), sorted(texts)
        add_term, add_row, add_tf = _postings(((row, texts[row]) for row in new_rows), terms, term_id, new_lengths)
        lengths[new_rows] = np.frombuffer(new_lengths, dtype=np.float32)
        if len(add_term):  # merged into the (term, row) order the kept postings are already in
            order = np.lexsort((add_row, add_term))
            add_term, add_row, add_tf = add_term[order], add_row[order], add_tf[order]
            at = np.searchsorted(term_of * n + rows, add_term * n + add_row)
            term_of, rows = np.insert(term_of, at, add_term), np.insert(rows, at, add_row)
            tf = np.insert(tf, at, add_tf)
        df = np.bincount(term_of, minlength=len(terms))
        live = df > 0  # a term no document holds any more is dropped, as a new build would not have it
        if not live.all():
            terms = [t for t, ok in zip(terms, live.tolist(), strict=True) if ok]
            df = df[live]
        offsets = np.zeros(len(terms) + 1, dtype=np.int64)
        np.cumsum(df, out=offsets[1:])
        index = type(self).__new__(type(self))
        index._set(n, terms, offsets, rows, tf, lengths)
        return index

    def scores(self, query: str) -> np.ndarray:
        """BM25 of every document (row order), 0 where no query word occurs."""
        found = [self._term[t] for t in dict.fromkeys(search_tokens(query, drop_stopwords=True)) if t in self._term]
        if not found or not self.n:
            return np.zeros(self.n, dtype=np.float32)
        o = self.offsets
        rows = np.concatenate([self.rows[o[j]:o[j + 1]] for j in found])
        weights = np.concatenate([self.weights[o[j]:o[j + 1]] for j in found])
        return np.bincount(rows, weights=weights, minlength=self.n).astype(np.float32)


def _postings(texts: Iterable[tuple[int, str]], terms: list[str], term_id: dict[str, int],
              lengths: array) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(term, row, tf)`` of each distinct token of each ``(row, text)``, in that order, as three
    arrays; a token new to ``term_id`` is given the next id (``terms`` grows), and each text's
    length in tokens is appended to ``lengths``. Held as C arrays, not Python objects: 100,000
    tools have ~2.4 million postings."""
    term_of, rows, tf = array("q"), array("q"), array("i")
    for row, text in texts:
        toks = search_tokens(text)
        lengths.append(len(toks))
        counts = Counter(toks)
        for t, f in counts.items():
            j = term_id.get(t)
            if j is None:
                j = term_id[t] = len(terms)
                terms.append(t)
            term_of.append(j)
            tf.append(f)
        rows.extend(repeat(row, len(counts)))
    return (np.frombuffer(term_of, dtype=np.int64), np.frombuffer(rows, dtype=np.int64),
            np.frombuffer(tf, dtype=np.int32))


def _bm25(n: int, offsets: np.ndarray, rows: np.ndarray, tf: np.ndarray, lengths: np.ndarray, k1: float,
          b: float) -> np.ndarray:
    """Each posting's BM25 weight, float32: ``idf * tf * (k1 + 1) / (tf + k1 * (1 - b + b * len / avg))``."""
    df = np.diff(offsets)
    avg = float(lengths.mean()) if n else 1.0
    norm = k1 * (1 - b + b * lengths / max(avg, 1e-9))
    # Per term, with the interpreter's log: the same float whichever numpy build runs it.
    idf = np.array([math.log(1 + (n - d + 0.5) / (d + 0.5)) for d in df.tolist()], dtype=np.float64)
    f = tf.astype(np.float32)
    weights = np.repeat(idf.astype(np.float32), df) * f
    weights *= np.float32(k1 + 1)
    weights /= f + norm[rows]
    return weights


def lexical_text(st: StoredTool) -> str:
    t = st.tool
    name = t.name
    return " ".join(p for p in (name, name, t.title or "", t.server, t.description, t.parameter_text()) if p)


@dataclass(frozen=True)
class Mentions:
    """Rows of tools named in a task, and rows of tools whose server is named."""

    tools: frozenset[int]
    servers: frozenset[int]


@dataclass
class VectorScores:
    """Per-candidate retrieval scores (rows of the index, parallel arrays)."""

    rows: np.ndarray  # int64
    vector: np.ndarray  # float32, 0..100
    dense: np.ndarray  # float32, best raw cosine over the queries
    lexical: np.ndarray  # float32, best normalised BM25 over the queries (0..1)
    queries: list[str]
    dense_task: np.ndarray  # float32, raw cosine with the whole task (queries[0])
    lexical_task: np.ndarray  # float32, normalised BM25 of the whole task (0..1)


#: Matrix rows copied at a time when an index is patched (:meth:`RetrievalIndex.patched`): 12 MB.
_COPY_ROWS = 8192

#: How a task names a server's tool: ``server__tool``, ``server/tool``, ``server.tool``, ``server:tool``.
QUALIFIERS = ("__", "/", ".", ":")

class RetrievalIndex:
    """Dense matrix + lexical index over one catalog snapshot, in row order."""

    def __init__(self, rows: Sequence[int], heads: Sequence[tuple[str, str]], texts: Sequence[str],
                 ids: np.ndarray, matrix: np.ndarray, *, model: tuple[str, int] | None = None) -> None:
        """An index over the tools ``rows`` (their ids in row order), from their ``heads``
        (``(server, name)``), their :func:`lexical_text` texts and the catalog's vectors as
        :meth:`~jit.catalog.store_vectors.VectorStore.vector_matrix` reads them (``ids`` ascending,
        ``matrix`` their rows): no definition needs to be held. A tool without a vector gets a zero
        row. When the matrix holds exactly the tools' vectors in their order (every tool embedded)
        it becomes the index's own, not a copy: a 100,000-tool catalog's is 154 MB. ``model``: the
        embedding model (name, dimension) the vectors are of, None when there are none to use."""
        self.model = model
        want = np.asarray(rows, dtype=np.int64)
        if len(want) and len(ids) == len(want) and np.array_equal(ids, want):
            full, has_vector = matrix, np.ones(len(want), dtype=bool)
        else:
            full = np.zeros((len(want), max(matrix.shape[1], 1)), dtype=np.float32)
            pos = np.minimum(np.searchsorted(ids, want), max(len(ids) - 1, 0))
            has_vector = ids[pos] == want if len(ids) else np.zeros(len(want), dtype=bool)
            if has_vector.any():
                full[has_vector] = matrix[pos[has_vector]]
        self._set(heads, full, has_vector, LexicalIndex(texts))

    @classmethod
    def from_arrays(cls, heads: Sequence[tuple[str, str]], matrix: np.ndarray, has_vector: np.ndarray,
                    lexical: LexicalIndex, *, model: tuple[str, int] | None) -> RetrievalIndex:
        """An index over the tools ``heads`` names (``(server, name)``, row order) from its tables,
        kept by :mod:`jit.selection.indexcache`: no definition is needed."""
        index = cls.__new__(cls)
        index.model = model
        index._set(heads, matrix, has_vector, lexical)
        return index

    def patched(self, old_rows: Sequence[int], rows: Sequence[int], heads: Sequence[tuple[str, str]],
                texts: Mapping[int, str], ids: np.ndarray, matrix: np.ndarray) -> RetrievalIndex | None:
        """This index over the tools ``old_rows`` (ids, row order) after a change of a few: over the
        tools ``rows`` (ids ascending) named by ``heads``, where ``texts`` holds the
        :func:`lexical_text` of each tool added or changed (by id) and ``ids``/``matrix`` the vectors
        of those that have one (as :meth:`~jit.catalog.store_vectors.VectorStore.vector_matrix` reads
        them). Every other tool keeps its row of the matrix and its postings: the index equals a new
        build over all the tools (scores bit for bit) without reading or tokenising them again.

        None when the vectors read do not fit this index's matrix (it was built before the catalog
        had any): a new build is then needed."""
        dim = self.matrix.shape[1]
        if len(ids) and matrix.shape[1] != dim:
            return None
        old = np.asarray(old_rows, dtype=np.int64)
        new = np.asarray(rows, dtype=np.int64)
        n = len(new)
        pos = np.minimum(np.searchsorted(new, old), max(n - 1, 0))
        stays = (new[pos] == old) & ~np.isin(old, np.fromiter(texts, dtype=np.int64, count=len(texts))) \
            if n else np.zeros(len(old), dtype=bool)
        row_map = np.where(stays, pos, -1)
        full = np.zeros((n, dim), dtype=np.float32)
        has_vector = np.zeros(n, dtype=bool)
        src = np.flatnonzero(stays)
        dst = row_map[src]
        for k in range(0, len(src), _COPY_ROWS):  # a slice at a time: no copy of the whole matrix besides
            full[dst[k:k + _COPY_ROWS]] = self.matrix[src[k:k + _COPY_ROWS]]
        has_vector[dst] = self.has_vector[src]
        if len(ids):
            at = np.searchsorted(new, ids)
            full[at] = matrix
            has_vector[at] = True
        at_row = {int(r): t for r, t in zip(np.searchsorted(new, list(texts)).tolist(), texts.values(), strict=True)}
        return type(self).from_arrays(heads, full, has_vector, self.lexical.patched(row_map, n, at_row),
                                      model=self.model)

    def _set(self, heads: Sequence[tuple[str, str]], matrix: np.ndarray, has_vector: np.ndarray,
             lexical: LexicalIndex) -> None:
        self.n = len(heads)
        #: ``(server, name)`` of every row (the second stage reads the names: jit.selection.rerank).
        self.heads = heads
        self.matrix = matrix
        self.has_vector = has_vector
        #: How many tools have a vector (counted once per index, not per compile).
        self.vector_count = int(self.has_vector.sum())
        self.all_vectors = self.vector_count == self.n
        self.lexical = lexical
        servers = sorted({server for server, _name in heads})
        self.server_names = servers
        #: The search tokens of every server's name (a step's lexical text keeps them wherever they are).
        self.server_words = frozenset(w for name in servers for w in search_tokens(name))
        index = {s: i for i, s in enumerate(servers)}
        self.server_of = np.fromiter((index[server] for server, _name in heads), dtype=np.int64, count=self.n)
        self._by_name: dict[str, list[int]] = defaultdict(list)
        self._by_server: dict[str, list[int]] = defaultdict(list)
        for row, (server, name) in enumerate(heads):
            self._by_name[name.lower()].append(row)
            self._by_server[server.lower()].append(row)

    def qualified(self, word: str) -> set[int]:
        """Rows of the tools ``word`` (lowercase) names as ``server<sep>tool``, for any of
        :data:`QUALIFIERS` and any split of the word (a server or tool name may hold one too)."""
        found: set[int] = set()
        for sep in QUALIFIERS:
            at = word.find(sep)
            while at > 0:
                server, rows = word[:at], self._by_name.get(word[at + len(sep):])
                if rows and server in self._by_server:
                    found.update(r for r in rows if self.server_names[self.server_of[r]].lower() == server)
                at = word.find(sep, at + 1)
        return found

    def similarities(self, vecs: np.ndarray) -> np.ndarray:
        """The cosine of every tool (rows) with each of ``vecs`` (columns): one pass over the
        matrix for all of them, split over jit's threads when tuned (jit.process). A tool without
        a vector takes its column's lowest cosine. A compile asks it once, for the task's queries
        and its steps' texts together (:meth:`score` takes the queries' columns, the steps theirs)."""
        if not self.vector_count or not len(vecs):
            return np.zeros((self.n, len(vecs)), dtype=np.float32)
        sims = matrix_product(self.matrix, vecs.T)
        if not self.all_vectors:
            sims[~self.has_vector] = sims[self.has_vector].min(axis=0)
        return sims

    def score(
        self,
        query_vecs: np.ndarray,
        queries: Sequence[str],
        *,
        lexical_weight: float,
        pool: int,
        clause_weight: float = CLAUSE_WEIGHT,
        server_share: float = SERVER_SHARE,
        extra_rows: Sequence[int] = (),
        sims: np.ndarray | None = None,
        kept: dict[tuple, tuple[Any, ...]] | None = None,
    ) -> VectorScores:
        """Score the union of the top ``pool`` rows by dense and by lexical relevance
        (plus ``extra_rows``). ``queries[0]`` is the whole task, the rest its clauses,
        whose scores count ``clause_weight`` times.

        ``query_vecs`` holds a vector for the first queries, at least the whole
        task's; a clause without one is matched lexically and takes the whole
        task's dense similarity. ``sims``: their :meth:`similarities` when the caller
        has them already (columns in ``query_vecs``' order), so the matrix is not read again.
        ``kept``: where the rows' scores and the best of each kind are kept for the next call with
        the same ``sims`` and queries (another shard of the task: only ``extra_rows`` differ).
        """
        if self.n == 0:
            z = np.zeros(0, dtype=np.float32)
            return VectorScores(np.zeros(0, dtype=np.int64), z, z, z, list(queries), z, z)
        q = len(queries)
        weights = np.full(q, clause_weight, dtype=np.float32)
        weights[0] = 1.0
        key = (tuple(queries), clause_weight, pool)
        found = None if kept is None else kept.get(key)
        if found is None:
            found = self._best(query_vecs, queries, weights, pool, sims)
            if kept is not None:
                for a in (*found[:3], *found[3], *found[4]):
                    a.flags.writeable = False
                kept[key] = found
        sims, dense_norm, lex_best, lex_cols, best_rows = found
        # Column j of the dense part for query j: its own, or the whole task's.
        dense_col = np.where(np.arange(q) < dense_norm.shape[1], np.arange(q), 0)
        picked = list(best_rows)
        if extra_rows:
            picked.append(np.asarray(list(extra_rows), dtype=np.int64))
        rows = np.unique(np.concatenate(picked))
        lex_norm = np.stack([col[rows] for col in lex_cols], axis=1)
        hybrid = ((1 - lexical_weight) * dense_norm[rows][:, dense_col] + lexical_weight * lex_norm) * weights
        best = hybrid.max(axis=1)
        if server_share > 0:
            # Lift the other tools of a server whose best tool is relevant.
            srv = self.server_of[rows]
            top = np.zeros(len(self.server_names), dtype=np.float32)
            np.maximum.at(top, srv, best)
            best = (1 - server_share) * best + server_share * top[srv]
        return VectorScores(
            rows=rows,
            vector=np.clip(best * 100.0, 0, 100).astype(np.float32),
            dense=sims[rows].max(axis=1).astype(np.float32),
            lexical=lex_best[rows].astype(np.float32),
            queries=list(queries),
            dense_task=sims[rows, 0].astype(np.float32),
            lexical_task=lex_cols[0][rows].astype(np.float32),
        )

    def _best(self, query_vecs: np.ndarray, queries: Sequence[str], weights: np.ndarray, pool: int,
              sims: np.ndarray | None) -> tuple[Any, ...]:
        """What :meth:`score` reads of every row, whatever rows are added: the dense similarities
        and their min-max normalised columns, the best weighted lexical score per row, the lexical
        columns normalised, and the best ``pool`` rows by dense and by lexical relevance."""
        q = len(queries)
        dense_q = min(len(query_vecs), q) if query_vecs.size else 0
        if self.vector_count and dense_q:
            sims = self.similarities(query_vecs[:dense_q]) if sims is None else sims[:, :dense_q]
            lo, hi = sims.min(axis=0), sims.max(axis=0)
            dense_norm = (sims - lo) / np.maximum(hi - lo, 1e-6)
        else:
            sims = np.zeros((self.n, 1), dtype=np.float32)
            dense_norm = sims
        # Lexical scores one query at a time (contiguous columns: a reduction across a few
        # columns of an (n, q) array costs more than the scores themselves at 100k tools).
        lex_cols = []
        for text in queries:
            col = self.lexical.scores(text)
            lex_cols.append(col / np.maximum(col.max(), np.float32(1e-6)))
        lex_best = lex_cols[0] * weights[0]
        for j in range(1, q):
            np.maximum(lex_best, lex_cols[j] * weights[j], out=lex_best)
        dense_best = (dense_norm * weights[: dense_norm.shape[1]]).max(axis=1)
        k = min(pool, self.n)
        lex_top = np.argpartition(-lex_best, k - 1)[:k]
        # Rows no query word matches are not lexical candidates (argpartition would pad with them).
        return (sims, dense_norm, lex_best, tuple(lex_cols),
                (np.argpartition(-dense_best, k - 1)[:k], lex_top[lex_best[lex_top] > 0]))

    def mentions(self, text: str) -> Mentions:
        return find_mentions(text, self)


_MENTION = re.compile(r"[`'\"]?[A-Za-z0-9][A-Za-z0-9_.:/\-]*[A-Za-z0-9][`'\"]?")


def _distinctive(name: str) -> bool:
    """A name unlikely to be an ordinary word: has a separator, a digit or camelCase."""
    return bool(re.search(r"[_\-./:0-9]", name)) or has_camel_hump(name)


def find_mentions(text: str, index: RetrievalIndex) -> Mentions:
    """Tools and servers named in ``text``.

    A tool is mentioned by ``server__tool`` / ``server/tool`` / ``server.tool``,
    or by its bare name when that name cannot be an ordinary word (it holds
    ``_``, ``-``, a digit or camelCase) or is quoted. A server is mentioned by
    its name as a whole word.
    """
    tools: set[int] = set()
    servers: set[int] = set()
    for m in _MENTION.finditer(text):
        raw = m.group()
        quoted = raw[0] in "`'\"" and raw[-1] == raw[0]
        word = raw.strip("`'\"")
        low = word.lower()
        named = index.qualified(low)
        if named:
            tools.update(named)
            continue
        if low in index._by_name and (quoted or _distinctive(word)):
            tools.update(index._by_name[low])
        if low in index._by_server:
            servers.update(index._by_server[low])
    return Mentions(frozenset(tools), frozenset(servers))
