"""An embedder's optional abilities (jit/embedding/protocol.py): each a protocol, asked in one place.

A harness's own embedder has only ``model_name``, ``dimension`` and ``embed``; the passes
treat it as loaded, with nothing to export and no bulk model. An embedder that has an
ability, by declaring the protocol or by shape alone, gets what the ability is for.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

import numpy as np
from conftest import HashingEmbedder
from test_progress import _check_contract, _pool_tools

from jit.catalog.embedding_pass import embed_ahead, embed_pending
from jit.catalog.store import Store
from jit.embedding.onnx_embedder import OnnxEmbedder
from jit.embedding.protocol import (
    EmbedsInBulk,
    ExportsFirst,
    LoadsLazily,
    NamesItsRuntime,
    bulk_of,
    exports_first,
    is_loaded,
    load_model,
    runtime_note_of,
)
from jit.embedding.query_cache import QueryVectorCache
from jit.embedding.torch_embedder import SentenceTransformerEmbedder
from jit.models import ServerStatus
from jit.progress import ProgressEvent


class _Noted(HashingEmbedder):
    """A bulk pass's embedder that says what runs it."""

    runtime_note = "on the test's bulk model"


class _BulkByShape(HashingEmbedder):
    """A harness's embedder with a bulk model and a lazy load, by shape alone (no jit base class)."""

    def __init__(self) -> None:
        super().__init__()
        self.loaded = False
        self.passes: list[int] = []
        self.bulk_model = _Noted()

    @property
    def dimension(self) -> int:
        self.loaded = True
        return super().dimension

    @contextmanager
    def bulk(self, count: int) -> Iterator[HashingEmbedder]:
        self.passes.append(count)
        yield self.bulk_model


class _TorchLike(HashingEmbedder):
    """A model that loads lazily and has no bulk model: its load is a step the pass shows."""

    def __init__(self, loaded: bool) -> None:
        super().__init__()
        self.loaded = loaded

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        self.loaded = True
        return super().embed(texts)


def test_an_embedder_without_abilities_is_plain() -> None:
    plain = HashingEmbedder()
    assert is_loaded(plain) and not exports_first(plain) and runtime_note_of(plain) is None
    with bulk_of(plain, 10_000) as model:
        assert model is plain
    events: list[ProgressEvent] = []
    load_model(plain, events.append)
    assert events == []
    assert not any(isinstance(plain, ability) for ability in (LoadsLazily, ExportsFirst, EmbedsInBulk,
                                                              NamesItsRuntime))


def test_jits_embedders_declare_their_abilities_and_asking_loads_nothing() -> None:
    onnx, torch = OnnxEmbedder(), SentenceTransformerEmbedder()
    assert isinstance(onnx, LoadsLazily) and isinstance(onnx, ExportsFirst) and isinstance(onnx, EmbedsInBulk)
    assert isinstance(torch, LoadsLazily) and not isinstance(torch, ExportsFirst | EmbedsInBulk)
    cache = QueryVectorCache(onnx)  # query text only: no bulk pass, nothing to load ahead
    assert not isinstance(cache, LoadsLazily | ExportsFirst | EmbedsInBulk)
    assert not is_loaded(onnx) and not is_loaded(torch) and not onnx.loaded and not torch.loaded


def test_a_pass_runs_on_the_bulk_model_of_an_embedder_that_has_one(tmp_path: Path) -> None:
    model = _BulkByShape()
    events: list[ProgressEvent] = []
    tools = _pool_tools(40)
    with Store(tmp_path / "catalog.db") as store:
        store.sync_catalog(tools, status=ServerStatus.CONNECTED)
        report = embed_pending(store, model, progress=events.append)
        texts = len({t.embedding_text() for t in tools})
        assert report.embedded == texts and store.pending_embeddings() == []
    assert model.passes == [texts] and model.bulk_model.texts_embedded == texts
    assert model.texts_embedded == 0  # the pass went to the bulk model, not to the embedder itself
    steps = _check_contract(events)
    assert [name for name, _ in steps] == ["model", "embed"]
    assert "on the test's bulk model" in steps[1][1][0].detail


def test_a_lazy_model_without_a_bulk_model_is_not_begun_ahead(tmp_path: Path) -> None:
    """torch's load takes seconds: the pass loads it as a step of its own, so nothing begins it on a
    thread; loaded already, or with a bulk model (ONNX, under a second), the model begins ahead."""
    with Store(tmp_path / "catalog.db") as store:
        store.sync_catalog(_pool_tools(10), status=ServerStatus.CONNECTED)
        assert embed_ahead(store, _TorchLike(loaded=False)) is None
        for model in (_TorchLike(loaded=True), _BulkByShape()):
            ahead = embed_ahead(store, model)
            assert ahead is not None
            ahead.close()
