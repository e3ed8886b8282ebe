"""The second stage over retrieval's best candidates (jit.selection.rerank, ``tool_selection.rerank``)."""

from __future__ import annotations

import numpy as np
import pytest
from compiler_fixtures import build_store, write_config
from pydantic import ValidationError

from jit.config import ToolSelectionConfig
from jit.selection import compiler as compiler_module
from jit.selection.compiler import Compiler
from jit.selection.rerank import FEATURES, WEIGHTS, Reranker, features, load_reranker
from jit.selection.retrieve import RetrievalIndex


def _index(hashing_embedder, heads: list[tuple[str, str, str]]) -> RetrievalIndex:
    texts = [f"{s} {n} {d}" for s, n, d in heads]
    matrix = hashing_embedder.embed(texts)
    return RetrievalIndex(list(range(len(heads))), [(s, n) for s, n, _ in heads], texts,
                          np.arange(len(heads), dtype=np.int64), matrix)


GIT = [("git", "git_checkout", "Switch branches or restore working tree files"),
       ("git", "git_status", "Show the working tree status"),
       ("git", "git_diff", "Show changes between commits"),
       ("fs", "read_file", "Read a file from disk")]


def _features(index: RetrievalIndex, embedder, task: str) -> dict[tuple[str, str], dict[str, float]]:
    scores = index.score(embedder.embed([task]), [task], lexical_weight=0.4, pool=10)
    first = np.lexsort((scores.rows, -scores.vector))
    x = features(scores, first, index)
    return {index.heads[int(scores.rows[i])]: dict(zip(FEATURES, row.tolist(), strict=True))
            for i, row in zip(first.tolist(), x, strict=True)}


def test_a_verb_the_task_says_as_a_name_is_told_from_the_verb_it_opens_with(hashing_embedder):
    index = _index(hashing_embedder, GIT)
    named = _features(index, hashing_embedder, "fix the failing test in my local checkout")[("git", "git_checkout")]
    assert named["verb_noun"] == 1 and named["verb_said"] == 0
    said = _features(index, hashing_embedder, "checkout the release branch")[("git", "git_checkout")]
    assert said["verb_said"] == 1 and said["verb_noun"] == 0
    assert said["name_share"] == 1 and said["name_fit"] == 1  # "checkout": the name's one word besides its server's


def _by(feature: str, weight: float, top: int = 3) -> Reranker:
    """A model that looks at one feature only."""
    w = np.zeros(len(FEATURES), dtype=np.float32)
    w[FEATURES.index(feature)] = weight
    return Reranker(top, np.zeros(len(FEATURES), dtype=np.float32), np.ones(len(FEATURES), dtype=np.float32), w, 0.0)


def test_the_second_stage_reorders_its_top_candidates_and_hands_them_the_same_scores(hashing_embedder):
    index = _index(hashing_embedder, GIT)
    task = "show the working tree"
    scores = index.score(hashing_embedder.embed([task]), [task], lexical_weight=0.4, pool=10)
    first = np.lexsort((scores.rows, -scores.vector))
    out = _by("vector", -1.0).apply(scores, index)  # the first stage's order, upside down within the top 3
    top = first[:3]
    assert np.array_equal(out.vector[top[::-1]], scores.vector[top])
    assert np.array_equal(out.vector[first[3:]], scores.vector[first[3:]])  # below the top: untouched
    assert np.array_equal(out.rows, scores.rows) and np.array_equal(out.dense, scores.dense)


def test_the_shipped_model_is_over_these_features_and_reads_back_as_written():
    model = load_reranker()
    assert model.weights.shape == (len(FEATURES),) and model.top >= 2
    assert Reranker.from_json(model.to_json()).to_json() == model.to_json()
    assert WEIGHTS.stat().st_size < 4096
    bad = {**model.to_json(), "features": list(FEATURES[:-1])}
    with pytest.raises(ValueError, match="features"):
        Reranker.from_json(bad)


def test_the_rerank_key_takes_off_or_model_only():
    assert ToolSelectionConfig().rerank == "off"
    assert ToolSelectionConfig(rerank="model").rerank == "model"
    with pytest.raises(ValidationError):
        ToolSelectionConfig(rerank="on")


def test_rank_follows_the_second_stage_only_when_the_config_asks_for_it(tmp_path, hashing_embedder, monkeypatch):
    reversed_top = _by("vector", -1.0, top=5)
    monkeypatch.setattr(compiler_module, "load_reranker", lambda: reversed_top)
    task = "read a file and search files for a pattern"
    ranked = {}
    for mode in ("off", "model"):
        root = tmp_path / mode
        root.mkdir()
        config = write_config(root, rerank=mode)
        with build_store(root / "catalog.db", config, hashing_embedder) as store, \
                Compiler(store, config, hashing_embedder) as compiler:
            ranked[mode] = [(st.tool.server, st.tool.name, score) for st, score in compiler.rank(task, k=5)]
    off, model = ranked["off"], ranked["model"]
    assert [head[:2] for head in model] == [head[:2] for head in off][::-1]
    assert [s for *_, s in model] == [s for *_, s in off]  # the same scores, handed out in the model's order
