"""The model begins a sync's embedding while the analysis runs (jit/catalog/embedding_pass.py, ``EmbedAhead``).

Real SQLite catalogs of LiveMCPBench's tool definitions, jit's offline analyzer and the model's
deterministic stand-in (conftest.py): what is checked is *what* is embedded and stored, in
which order the steps are reported, and that no thread outlives its pass, not the speed
(bench/bench_sync.py measures that).
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest
from conftest import HashingEmbedder
from test_progress import _check_contract, _pool_tools

from jit.analysis.offline_analyzer import OfflineAnalyzer
from jit.catalog import embedding_pass
from jit.catalog.embedding_pass import EmbedAhead, embed_ahead, embed_pending
from jit.catalog.store import Store
from jit.config import DEFAULT_SHARDS, Config
from jit.errors import EmbeddingError
from jit.models import ServerStatus, ToolAnalysis, ToolDef
from jit.pipeline import refresh_catalog
from jit.progress import ProgressEvent


class _WatchedEmbedder(HashingEmbedder):
    """The stand-in model, which says when it has embedded its first chunk and can be made to fail."""

    def __init__(self, fail: bool = False) -> None:
        super().__init__()
        self.fail = fail
        self.first_chunk = threading.Event()
        self.threads: set[str] = set()

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        self.threads.add(threading.current_thread().name)
        if self.fail:
            raise EmbeddingError("the model ran out of memory")
        out = super().embed(texts)
        self.first_chunk.set()
        return out


class _PatientAnalyzer:
    """jit's offline analyzer, which will not finish its first batch before the model has embedded
    a chunk: a sync that embedded only after analyzing would wait here until the test fails."""

    name = "offline"

    def __init__(self, model: _WatchedEmbedder, *, fail: bool = False) -> None:
        self.inner = OfflineAnalyzer(DEFAULT_SHARDS)
        self.model = model
        self.fail = fail

    def analyze(self, tools: Sequence[ToolDef]) -> list[ToolAnalysis]:
        assert self.model.first_chunk.wait(30), "the model did not begin while the analysis ran"
        if self.fail:
            raise RuntimeError("the analyzer crashed")
        return self.inner.analyze(tools)


def _ahead_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "jit-embed-ahead"]


def _vectors(store: Store) -> dict[int, np.ndarray]:
    ids, matrix = store.vector_matrix()
    return dict(zip(ids, matrix, strict=True))


def test_a_sync_embeds_while_it_analyzes_and_reports_the_steps_one_after_the_other(tmp_path: Path) -> None:
    tools = _pool_tools(300)
    model = _WatchedEmbedder()
    events: list[ProgressEvent] = []
    with Store(tmp_path / "ahead.db") as store, Store(tmp_path / "plain.db") as plain:
        for s in (store, plain):
            s.sync_catalog(tools, status=ServerStatus.CONNECTED)
        analysis, report = refresh_catalog(store, Config.default(tmp_path), model, _PatientAnalyzer(model),
                                           progress=events.append)
        embed_pending(plain, HashingEmbedder())  # the same texts, embedded after nothing
        assert report.embedded == len({t.embedding_text() for t in tools}) and analysis.analyzed == len(tools)
        assert model.threads == {"jit-embed-ahead"}
        assert store.pending_embeddings() == [] and store.pending_analysis() == []
        got, want = _vectors(store), _vectors(plain)
        assert got.keys() == want.keys() and all(np.array_equal(got[i], want[i]) for i in got)
    assert [name for name, _ in _check_contract(events)] == ["analyze", "embed"]
    assert not _ahead_threads()


def test_an_analysis_that_fails_stops_the_embedding_it_began(tmp_path: Path) -> None:
    model = _WatchedEmbedder()
    with Store(tmp_path / "catalog.db") as store:
        store.sync_catalog(_pool_tools(200), status=ServerStatus.CONNECTED)
        with pytest.raises(RuntimeError, match="the analyzer crashed"):
            refresh_catalog(store, Config.default(tmp_path), model, _PatientAnalyzer(model, fail=True))
        assert not _ahead_threads()
        assert len(store.pending_embeddings()) == 200  # it wrote nothing: the next sync embeds them all


def test_a_model_that_fails_ahead_fails_the_pass_as_it_would_have(tmp_path: Path) -> None:
    with Store(tmp_path / "catalog.db") as store:
        store.sync_catalog(_pool_tools(50), status=ServerStatus.CONNECTED)
        ahead = embed_ahead(store, _WatchedEmbedder(fail=True))
        assert ahead is not None
        with pytest.raises(EmbeddingError, match="ran out of memory"):
            embed_pending(store, ahead.embedder, ahead=ahead)
        assert not _ahead_threads() and len(store.pending_embeddings()) == 50


def test_a_catalog_changed_after_the_model_began_is_embedded_by_the_pass_itself(tmp_path: Path) -> None:
    model = HashingEmbedder()
    tools = _pool_tools(120)
    with Store(tmp_path / "catalog.db") as store, Store(tmp_path / "plain.db") as plain:
        store.sync_catalog(tools[:100], status=ServerStatus.CONNECTED)
        ahead = embed_ahead(store, model)
        assert ahead is not None and len(ahead.todo) == len({t.embedding_text() for t in tools[:100]})
        store.sync_catalog(tools, status=ServerStatus.CONNECTED)  # another 20 before the pass
        report = embed_pending(store, model, ahead=ahead)
        plain.sync_catalog(tools, status=ServerStatus.CONNECTED)
        embed_pending(plain, HashingEmbedder())
        assert report.embedded == len({t.embedding_text() for t in tools}) and store.pending_embeddings() == []
        got, want = _vectors(store), _vectors(plain)
        assert got.keys() == want.keys() and all(np.array_equal(got[i], want[i]) for i in got)
    assert not _ahead_threads()


def test_the_model_waits_when_its_pass_is_late(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """At most AHEAD_CHUNKS chunks wait for the pass (their vectors are held in memory)."""
    monkeypatch.setattr(embedding_pass, "AHEAD_CHUNKS", 2)
    model = HashingEmbedder()
    with Store(tmp_path / "catalog.db") as store:
        store.sync_catalog(_pool_tools(80), status=ServerStatus.CONNECTED)
        ahead = embed_ahead(store, model, chunk=4)
        assert isinstance(ahead, EmbedAhead) and len(ahead.todo) > 3 * 4
        deadline = time.monotonic() + 10
        while model.texts_embedded < 3 * 4 and time.monotonic() < deadline:
            time.sleep(0.01)
        time.sleep(0.2)  # time to run on, were it not held
        assert model.texts_embedded == 3 * 4  # two chunks queued, the third in hand
        report = embed_pending(store, model, chunk=4, ahead=ahead)
        assert report.embedded == len(ahead.todo) and store.pending_embeddings() == []
    assert not _ahead_threads()


def test_nothing_is_begun_ahead_for_another_model_or_nothing_to_embed(tmp_path: Path) -> None:
    with Store(tmp_path / "catalog.db") as store:
        assert embed_ahead(store, HashingEmbedder()) is None  # no tools
        store.sync_catalog(_pool_tools(10), status=ServerStatus.CONNECTED)
        embed_pending(store, HashingEmbedder())
        assert embed_ahead(store, HashingEmbedder()) is None  # nothing pending
        store.sync_catalog(_pool_tools(20), status=ServerStatus.CONNECTED)
        # A catalog of another model: the pass re-embeds every tool, which only it knows to do.
        assert embed_ahead(store, HashingEmbedder(model_name="another-model")) is None
        assert embed_ahead(store, HashingEmbedder()) is not None


class _LazyModel(HashingEmbedder):
    """The stand-in model, loading on first use (``LoadsLazily``) and embedding passes in bulk
    (``EmbedsInBulk``), as the ONNX embedder does once exported."""

    def __init__(self) -> None:
        super().__init__()
        self._loaded = threading.Event()

    @property
    def loaded(self) -> bool:
        return self._loaded.is_set()

    @property
    def dimension(self) -> int:
        self._loaded.set()
        return super().dimension

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        self._loaded.set()
        return super().embed(texts)

    def bulk(self, count: int) -> contextlib.AbstractContextManager[HashingEmbedder]:
        return contextlib.nullcontext(self)


def test_the_model_the_thread_ahead_loaded_is_reported_as_the_pass_s_load_step(tmp_path: Path) -> None:
    """Which thread loads the model first is timing: the thread embedding ahead often wins while
    the analysis runs. What a sync prints must not depend on it (a first sync always says it
    loaded the model): the pass reports the load as its ``model`` step either way."""
    model = _LazyModel()
    with Store(tmp_path / "lazy.db") as store:
        store.sync_catalog(_pool_tools(40), status=ServerStatus.CONNECTED)
        ahead = embed_ahead(store, model)
        assert ahead is not None and ahead.loads_model
        assert model._loaded.wait(30)  # the thread has loaded it before the pass begins
        events: list[ProgressEvent] = []
        embed_pending(store, model, progress=events.append, ahead=ahead)
    assert [name for name, _ in _check_contract(events)] == ["model", "embed"]
    assert not _ahead_threads()
