"""The default embedder: jit's tool-trained MiniLM from its own package, offline; the base MiniLM by name."""

from __future__ import annotations

import numpy as np
import pytest

from jit.config import BASE_EMBEDDING_MODEL, DEFAULT_EMBEDDING_MODEL
from jit.embedding.protocol import Embedder
from jit.embedding.torch_embedder import SentenceTransformerEmbedder
from jit.errors import EmbeddingError


def test_default_model_is_offline_minilm_with_unit_vectors(embedder):
    assert isinstance(embedder, Embedder)
    assert (embedder.model_name, embedder.dimension) == (DEFAULT_EMBEDDING_MODEL, 384)
    vecs = embedder.embed(["read a file", "read a file", "book a flight to Paris"])
    assert vecs.shape == (3, 384) and vecs.dtype == np.float32
    assert np.allclose(np.linalg.norm(vecs, axis=1), 1.0, atol=1e-5)
    assert np.allclose(vecs[0], vecs[1])
    assert float(vecs[0] @ vecs[2]) < 0.5


def test_both_shipped_models_load_by_name_from_their_packages_and_differ():
    """The trained default and the base model it was trained from: each from its package's files
    (no hub), the same dimension, other vectors."""
    from jit.embedding.torch_embedder import base_model_path, model_path, packaged_model_path

    assert model_path(DEFAULT_EMBEDDING_MODEL, None).endswith(DEFAULT_EMBEDDING_MODEL)
    assert packaged_model_path(BASE_EMBEDDING_MODEL) == base_model_path() and packaged_model_path("x/y") is None
    assert model_path("x/y", None) == "x/y" and model_path(DEFAULT_EMBEDDING_MODEL, "/m") == "/m"
    texts = ["list the open pull requests", "create a pull request"]
    tuned = SentenceTransformerEmbedder().embed(texts)
    base = SentenceTransformerEmbedder(model=BASE_EMBEDDING_MODEL).embed(texts)
    assert tuned.shape == base.shape == (2, 384)
    assert 0.8 < float((tuned * base).sum(axis=1).min()) < 0.9999


def test_missing_shipped_weights_are_an_embedding_error_that_says_to_reinstall(tmp_path, monkeypatch):
    from jit.embedding import torch_embedder

    monkeypatch.setattr(torch_embedder, "TOOLS_MODEL_DIR", tmp_path / DEFAULT_EMBEDDING_MODEL)
    with pytest.raises(EmbeddingError, match="model files are missing .* reinstall jit-mcp"):
        torch_embedder.model_path(DEFAULT_EMBEDDING_MODEL, None)


def test_empty_batch_needs_no_model_call(embedder):
    assert embedder.embed([]).shape == (0, 384)


@pytest.mark.slow  # imports sentence-transformers (and torch) to try the load
def test_a_model_that_cannot_load_is_an_embedding_error(tmp_path):
    broken = SentenceTransformerEmbedder(model="missing", path=str(tmp_path / "no-such-model"))
    with pytest.raises(EmbeddingError, match="cannot load embedding model 'missing'"):
        broken.embed(["x"])


class CountingEmbedder:
    def __init__(self, inner) -> None:
        self.inner = inner
        self.calls: list[list[str]] = []

    model_name = property(lambda self: self.inner.model_name)
    dimension = property(lambda self: self.inner.dimension)

    def embed(self, texts):
        self.calls.append(list(texts))
        return self.inner.embed(texts)


def test_query_cache_embeds_each_distinct_text_once(embedder):
    from jit.embedding.query_cache import QueryVectorCache

    counting = CountingEmbedder(embedder)
    cache = QueryVectorCache(counting, size=3)
    first = cache.embed(["fix the parser", "run the tests", "fix the parser"])
    again = cache.embed(["run the tests", "fix the parser"])
    assert counting.calls == [["fix the parser", "run the tests"]]
    assert np.allclose(first[0], again[1]) and np.allclose(first[1], again[0]) and first.shape == (3, 384)
    assert np.allclose(first[0], embedder.embed(["fix the parser"])[0], atol=1e-6)
    cache.embed(["a", "b"])  # evicts the least recently used ("run the tests")
    cache.embed(["fix the parser", "run the tests"])
    assert counting.calls[-1] == ["run the tests"]
    assert cache.embed([]).shape == (0, 384)
