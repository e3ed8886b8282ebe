"""``jit eval`` with retrieval's lexical part reading the task through ``step_words.action_free``.

The steps' lexical matching drops what a step says only as names of things (a verb said as a
noun, an address, a quoted title: :func:`jit.selection.step_words.action_free`); retrieval's BM25
reads the task as it is. This runs ``jit eval`` (the same arguments) with
:meth:`~jit.selection.retrieve.RetrievalIndex.score` given the task and its clauses through
``action_free`` for their BM25 (their vectors are the task's own), to compare with a plain
``jit eval`` run (docs/quality.md, "Verbs said as names, in retrieval's lexical part"). ::

    python -m bench.eval_action_free livemcpbench --out /tmp/action-free
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Any

import numpy as np

from jit.evaluation.evaluate import main as evaluate
from jit.selection.retrieve import RetrievalIndex, VectorScores
from jit.selection.step_words import action_free


def main(argv: Sequence[str] | None = None) -> int:
    plain = RetrievalIndex.score

    def score(self: RetrievalIndex, query_vecs: np.ndarray, queries: Sequence[str], **kw: Any) -> VectorScores:
        return plain(self, query_vecs, [action_free(q, self.server_words) or q for q in queries], **kw)

    RetrievalIndex.score = score  # type: ignore[method-assign]
    try:
        return evaluate(argv)
    finally:
        RetrievalIndex.score = plain  # type: ignore[method-assign]


if __name__ == "__main__":
    sys.exit(main())
