"""The plain retrievers jit is measured against (as docs/quality.md defines them), and
the ranking metrics that score them and jit alike.

Every ranker scores the whole pool for one query (higher is better); :class:`TieBreak`
turns scores into a ranking, breaking ties by a fixed random permutation of the pool
(``numpy.random.default_rng(0)``), never by file order, which would favour whichever
pool file came first.

* ``climpt``: cosine of raw term-frequency vectors of lowercase whitespace tokens, no
  IDF (the word-level matching of simple command registries).
* ``bm25``: Okapi BM25, k1=1.2, b=0.75, IDF ``ln(1 + (N - df + 0.5) / (df + 0.5))``, over
  :func:`bm25_tokens` (in :mod:`jit.text`), unique query terms. Scored by ``bm25s`` (method ``lucene``, whose
  IDF is exactly that one; its term-frequency part omits Okapi's constant ``k1 + 1``
  factor, which changes no ranking).
* ``dense``: cosine of normalised embeddings by the configured model (``embedding.model``; jit-tools-MiniLM-L6-v1
  by default).

Text of a tool, for all three: ``server name description`` (:func:`base_text`).
Token cost of showing tools to a model: characters / 4 of their compact JSON
definitions (:func:`definition_chars`), an English-text rule of thumb that undercounts
CJK text, so a lower bound rather than a tokenizer count.
"""

from __future__ import annotations

import json
import math
import statistics
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from ..embedding.protocol import Embedder
from ..errors import EvaluationError
from ..models import ToolDef
from ..text import bm25_tokens, whitespace_tokens

__all__ = [
    "BM25Ranker",
    "CHARS_PER_TOKEN",
    "CURVE_KS",
    "ClimptRanker",
    "DenseRanker",
    "MethodResult",
    "Ranker",
    "TieBreak",
    "base_text",
    "definition_chars",
    "first_ranks",
    "hit_at_1",
    "list_chars",
    "ndcg_at",
    "recall_at",
    "reciprocal_rank",
]

#: Ranks whose recall is reported, and the depths of the recall-vs-tokens curves.
REPORT_KS = (5, 10, 20)
CURVE_KS = (5, 10, 20, 50, 100)
NDCG_K = 10
#: The chars/4 token estimate of the evaluation (docs/quality.md).
CHARS_PER_TOKEN = 4
BM25_K1 = 1.2
BM25_B = 0.75
#: Queries embedded per model call by :class:`DenseRanker`.
QUERY_BATCH = 256


def base_text(tool: ToolDef) -> str:
    """``server name description``: the tool text every baseline ranks on."""
    return f"{tool.server} {tool.name} {tool.description}"


def definition_chars(tool: ToolDef) -> int:
    """Characters of the tool's compact JSON definition ``{name, description, input_schema}``."""
    payload = {"name": tool.name, "description": tool.description, "input_schema": tool.input_schema}
    return len(json.dumps(payload, ensure_ascii=False, separators=(",", ":")))


def list_chars(chars: Sequence[int] | np.ndarray) -> int:
    """Characters of the JSON list of definitions whose own lengths are ``chars``
    (brackets and separating commas included), without serialising it again."""
    n = len(chars)
    return int(np.sum(chars)) + 2 + max(n - 1, 0)


class TieBreak:
    """Turns a score vector into a ranking; equal scores keep a fixed random order."""

    def __init__(self, size: int, seed: int = 0) -> None:
        #: A random rank for each pool index: lower wins a tie.
        self.priority = np.random.default_rng(seed).permutation(size).astype(np.int64)

    def order(self, scores: np.ndarray) -> np.ndarray:
        """Pool indices, best first: by score descending, then by the fixed permutation."""
        if len(scores) != len(self.priority):
            raise EvaluationError(f"scores for {len(scores)} tools given to a tie-break over {len(self.priority)}")
        return np.lexsort((self.priority, -np.asarray(scores, dtype=np.float64)))


class Ranker(Protocol):
    """Scores every tool of the pool for each query."""

    name: str

    def scores(self, queries: Sequence[str]) -> Iterator[np.ndarray]:
        """One float array of pool length per query, in query order."""
        ...


class ClimptRanker:
    """Cosine of raw term-frequency vectors over lowercase whitespace tokens."""

    name = "climpt"

    def __init__(self, texts: Sequence[str]) -> None:
        self._size = len(texts)
        # Inverted index: token -> (doc indices, term frequencies); dot products are
        # accumulated per query token, so no pool x vocabulary matrix is ever built.
        postings: dict[str, tuple[list[int], list[int]]] = {}
        norms = np.zeros(len(texts), dtype=np.float64)
        for i, text in enumerate(texts):
            tf = Counter(whitespace_tokens(text))
            norms[i] = np.sqrt(sum(v * v for v in tf.values()))
            for tok, v in tf.items():
                docs, freqs = postings.setdefault(tok, ([], []))
                docs.append(i)
                freqs.append(v)
        self._postings = {t: (np.asarray(d, dtype=np.int64), np.asarray(f, dtype=np.float64))
                          for t, (d, f) in postings.items()}
        self._norms = np.where(norms > 0, norms, 1.0)

    def scores(self, queries: Sequence[str]) -> Iterator[np.ndarray]:
        for query in queries:
            out = np.zeros(self._size, dtype=np.float64)
            qtf = Counter(whitespace_tokens(query))
            qnorm = np.sqrt(sum(v * v for v in qtf.values()))
            for tok, v in qtf.items():
                hit = self._postings.get(tok)
                if hit is not None:
                    out[hit[0]] += v * hit[1]
            yield out / self._norms / qnorm if qnorm else out


class BM25Ranker:
    """Okapi BM25 (k1=1.2, b=0.75) over :func:`bm25_tokens`, scored by ``bm25s``."""

    name = "bm25"

    def __init__(self, texts: Sequence[str], *, k1: float = BM25_K1, b: float = BM25_B) -> None:
        try:
            import bm25s
        except ImportError as exc:  # pragma: no cover - a dependency of jit
            raise EvaluationError("the BM25 baseline needs the 'bm25s' package") from exc
        self._size = len(texts)
        # float64 scores: float32 rounding would create ties that the exact formula does not have.
        self._index = bm25s.BM25(k1=k1, b=b, method="lucene", dtype="float64")
        self._index.index([bm25_tokens(t) for t in texts], show_progress=False)

    def scores(self, queries: Sequence[str]) -> Iterator[np.ndarray]:
        vocab = self._index.vocab_dict
        for query in queries:
            # Unique query terms; words the pool never uses score nothing.
            ids = [vocab[t] for t in dict.fromkeys(bm25_tokens(query)) if t in vocab and t != ""]
            if not ids:
                yield np.zeros(self._size, dtype=np.float64)
                continue
            yield np.asarray(self._index.get_scores_from_ids(ids), dtype=np.float64)


class DenseRanker:
    """Cosine of normalised embeddings (``matrix`` rows are the pool's vectors)."""

    name = "dense"

    def __init__(self, matrix: np.ndarray, embedder: Embedder) -> None:
        self._matrix = np.asarray(matrix, dtype=np.float32)
        self._embedder = embedder

    def scores(self, queries: Sequence[str]) -> Iterator[np.ndarray]:
        for i in range(0, len(queries), QUERY_BATCH):
            vecs = self._embedder.embed(list(queries[i : i + QUERY_BATCH]))
            for v in vecs:
                yield (self._matrix @ v).astype(np.float64)


# --------------------------------------------------------------------------- metrics
#
# A query's gold is a list of groups (pool indices); a group is hit when any member is.
# Every metric is a function of the 1-based rank at which each group is first hit.


def first_ranks(order: Sequence[int], groups: Sequence[Sequence[int]]) -> list[int | None]:
    """1-based rank at which each group is first hit in ``order`` (best first); None: never."""
    members = {m for g in groups for m in g}
    rank: dict[int, int] = {}
    for r, idx in enumerate(order, 1):
        if idx in members and idx not in rank:
            rank[idx] = r
            if len(rank) == len(members):
                break
    return [min((rank[m] for m in g if m in rank), default=None) for g in groups]


def recall_at(ranks: Sequence[int | None], k: int) -> float:
    """Share of groups first hit within the top ``k``."""
    return sum(1 for r in ranks if r is not None and r <= k) / len(ranks)


def hit_at_1(ranks: Sequence[int | None]) -> float:
    """1.0 when the first tool belongs to some group."""
    return 1.0 if any(r == 1 for r in ranks) else 0.0


def reciprocal_rank(ranks: Sequence[int | None]) -> float:
    """1 / rank of the first tool in any group (0 when no group is hit)."""
    hit = [r for r in ranks if r is not None]
    return 1.0 / min(hit) if hit else 0.0


def ndcg_at(ranks: Sequence[int | None], k: int = NDCG_K) -> float:
    """Binary-gain nDCG@k: a rank earns gain 1 when it is the first hit of a group
    (a tool in two groups earns it once); ideal is ``min(#groups, k)`` hits on top."""
    gains = {r for r in ranks if r is not None and r <= k}
    dcg = sum(1.0 / math.log2(r + 1) for r in gains)
    ideal = sum(1.0 / math.log2(i + 1) for i in range(1, min(len(ranks), k) + 1))
    return dcg / ideal


@dataclass
class MethodResult:
    """Ranking metrics of one method over a run, with its recall-vs-tokens curve."""

    name: str
    kind: str  # "baseline" or "jit"
    #: Ranking length when the method returns a top-k only (None: the whole pool).
    depth: int | None = None
    ranks: list[list[int | None]] = field(default_factory=list)
    #: Per query, characters of the top-k definitions for each k of CURVE_KS.
    curve_chars: list[dict[int, int]] = field(default_factory=list)
    #: Per query, the group recall of the longest ranking prefix that fits the token budget.
    budget_recall: list[float] = field(default_factory=list)
    seconds: float = 0.0

    def add(self, order: Sequence[int], groups: Sequence[Sequence[int]], chars: np.ndarray,
            budget_tokens: int) -> None:
        """Score one query: ``order`` is the ranking (pool indices, best first; -1 for a
        tool outside the pool) and ``chars`` the definition size of each ranked tool."""
        ranks = first_ranks(order, groups)
        self.ranks.append(ranks)
        self.curve_chars.append({k: list_chars(chars[:k]) for k in CURVE_KS if k <= len(order)})
        # Prefix i (0-based) holds tools 0..i: its JSON list costs their sum + 2 brackets + i commas.
        cum = np.cumsum(chars) + 2 + np.arange(len(chars))
        fit = int(np.searchsorted(cum, budget_tokens * CHARS_PER_TOKEN, side="right"))
        self.budget_recall.append(recall_at(ranks, fit) if fit else 0.0)

    def summary(self) -> dict[str, Any]:
        """Means over the queries: R@k, Hit@1, MRR, nDCG@10, R@budget, top-10 tokens, curve."""
        n = len(self.ranks)
        out: dict[str, Any] = {"method": self.name, "kind": self.kind, "queries": n}
        for k in REPORT_KS:
            out[f"R@{k}"] = statistics.fmean(recall_at(r, k) for r in self.ranks)
        out["Hit@1"] = statistics.fmean(hit_at_1(r) for r in self.ranks)
        out["MRR"] = statistics.fmean(reciprocal_rank(r) for r in self.ranks)
        out[f"nDCG@{NDCG_K}"] = statistics.fmean(ndcg_at(r, NDCG_K) for r in self.ranks)
        out["R@budget"] = statistics.fmean(self.budget_recall)
        out["top10_tokens"] = statistics.fmean(c.get(10, 0) for c in self.curve_chars) / CHARS_PER_TOKEN
        out["curve"] = [
            {"k": k, "recall": statistics.fmean(recall_at(r, k) for r in self.ranks),
             "tokens": statistics.fmean(c[k] for c in self.curve_chars) / CHARS_PER_TOKEN}
            for k in CURVE_KS if all(k in c for c in self.curve_chars)
        ]
        out["ms_per_query"] = 1000.0 * self.seconds / n if n else 0.0
        if self.depth is not None:
            out["depth"] = self.depth
        return out
