"""A second stage over retrieval's best candidates: a logistic model over features one vector
misses, which reorders them (``tool_selection.rerank``; docs/quality.md, "A second stage").

:meth:`~jit.selection.retrieve.RetrievalIndex.score` gives every candidate one hybrid score. The
second stage reads, for its ``top`` best, what that score mixes away: the dense cosine and the
BM25 of the whole task and of its best clause apart, how many of the tool name's words the task
says, whether it says the name's verb as its own action or only as the name of a thing
(:func:`~jit.selection.step_words.noun_uses`: "my local checkout" asks for no ``git_checkout``),
and how well the name says one of the task's clauses (:func:`~jit.selection.step_words.name_fit`).

The model (:data:`WEIGHTS`, ``rerank.json`` beside this module) is trained by
``python -m bench.train_reranker`` on ``bench/data/retriever_train`` only, none of the sets jit
is measured on. It only reorders: the candidates keep the set of vector scores they had, handed
out again in the model's order, so the tiers' thresholds mean what they meant.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np

from ..text import search_tokens
from .retrieve import RetrievalIndex, VectorScores
from .step_words import VERBS, leading_capability, name_fit, noun_uses

__all__ = ["FEATURES", "WEIGHTS", "Reranker", "features", "load_reranker"]

#: The features, in the order the model's weights are stored. Left out because they lowered the
#: held-out sources' recall (bench/train_reranker.py): the distance to the best score, the rank
#: overall and within the server, the server's share of the candidates, the server named in the
#: task, the capability of the name's verb.
FEATURES = (
    "vector",        # the first stage's hybrid score, 0..1
    "dense_best",    # best cosine over the task and its clauses
    "dense_task",    # cosine with the whole task
    "lexical_best",  # best normalised BM25 over the task and its clauses
    "lexical_task",  # normalised BM25 of the whole task
    "name_share",    # share of the name's words (server's left out) the task says
    "name_fit",      # best name_fit over the task and its clauses
    "verb_said",     # the name's first word is a word the task or a clause opens with
    "verb_noun",     # the name's first word is an action verb the task says only as a name
)

#: The shipped model's file.
WEIGHTS = Path(__file__).with_name("rerank.json")

_VERB_CAPS = {search_tokens(v)[0]: c for v, c in VERBS.items() if search_tokens(v)}


@dataclass(frozen=True)
class _Clause:
    """A query as :func:`~jit.selection.step_words.name_fit` reads a step."""

    text: str
    capability: str


@dataclass(frozen=True)
class _Task:
    """What the features read of a task once, whatever the candidate."""

    words: frozenset[str]
    openers: frozenset[str]
    nouns: frozenset[str]
    clauses: tuple[_Clause, ...]


@lru_cache(maxsize=256)
def _task(queries: tuple[str, ...]) -> _Task:
    openers = set()
    clauses = []
    for q in queries:
        toks = search_tokens(q, drop_stopwords=True)
        if toks:
            openers.add(toks[0])
        clauses.append(_Clause(q, leading_capability(q) or ""))
    return _Task(frozenset(search_tokens(queries[0], drop_stopwords=True)), frozenset(openers),
                 noun_uses(queries[0]), tuple(clauses))


@lru_cache(maxsize=1 << 14)
def _name_words(server: str, name: str) -> tuple[str, ...]:
    """A tool name's search words, its server's left out (as :func:`name_fit` reads a name)."""
    own = set(search_tokens(server))
    return tuple(w for w in search_tokens(name, drop_stopwords=True) if w not in own)


def features(scores: VectorScores, rows: np.ndarray, index: RetrievalIndex) -> np.ndarray:
    """The :data:`FEATURES` of the candidates ``rows`` (indices into ``scores``' arrays) of
    ``index``, one row each."""
    task = _task(tuple(scores.queries))
    out = np.zeros((len(rows), len(FEATURES)), dtype=np.float32)
    out[:, 0] = scores.vector[rows] / 100.0
    out[:, 1] = scores.dense[rows]
    out[:, 2] = scores.dense_task[rows]
    out[:, 3] = scores.lexical[rows]
    out[:, 4] = scores.lexical_task[rows]
    for i, r in enumerate(scores.rows[rows].tolist()):
        server, name = index.heads[r]
        words = _name_words(server, name)
        if words:
            out[i, 5] = sum(w in task.words for w in words) / len(words)
            out[i, 7] = words[0] in task.openers
            out[i, 8] = words[0] in _VERB_CAPS and words[0] in task.nouns and words[0] not in task.openers
        out[i, 6] = max(name_fit(name, server, c) for c in task.clauses)
    return out


@dataclass(frozen=True)
class Reranker:
    """A logistic model over :data:`FEATURES`, standardised by ``mean``/``scale``, applied to the
    ``top`` best candidates of the first stage."""

    top: int
    mean: np.ndarray
    scale: np.ndarray
    weights: np.ndarray
    bias: float

    def logits(self, x: np.ndarray) -> np.ndarray:
        return ((x - self.mean) / self.scale) @ self.weights + self.bias

    def apply(self, scores: VectorScores, index: RetrievalIndex) -> VectorScores:
        """``scores`` with the vector scores of its ``top`` best candidates handed out again in
        the model's order (the same values, another order); the other candidates unchanged."""
        first = np.lexsort((scores.rows, -scores.vector))[: self.top]
        if len(first) < 2:
            return scores
        logit = self.logits(features(scores, first, index))
        order = first[np.lexsort((np.arange(len(first)), -logit))]
        vector = scores.vector.copy()
        vector[order] = scores.vector[first]  # already best first
        return VectorScores(scores.rows, vector, scores.dense, scores.lexical, scores.queries,
                            scores.dense_task, scores.lexical_task)

    def to_json(self) -> dict:
        return {"features": list(FEATURES), "top": self.top, "mean": self.mean.tolist(),
                "scale": self.scale.tolist(), "weights": self.weights.tolist(), "bias": self.bias}

    @classmethod
    def from_json(cls, data: dict) -> Reranker:
        if list(data["features"]) != list(FEATURES):
            raise ValueError(f"the model's features {data['features']} are not this jit's {list(FEATURES)}")
        return cls(int(data["top"]), np.asarray(data["mean"], dtype=np.float32),
                   np.asarray(data["scale"], dtype=np.float32), np.asarray(data["weights"], dtype=np.float32),
                   float(data["bias"]))


@lru_cache(maxsize=1)
def load_reranker() -> Reranker:
    """The shipped model (:data:`WEIGHTS`)."""
    return Reranker.from_json(json.loads(WEIGHTS.read_text()))
