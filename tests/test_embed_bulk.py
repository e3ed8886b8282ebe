"""Bulk embedding (jit/embedding/openvino_bulk.py): a sync's many new tools on OpenVINO in bfloat16.

Everything is real: the MiniLM export (in the session's cache, see conftest.py), onnxruntime,
OpenVINO's CPU plugin and a SQLite catalog of LiveMCPBench's 527 tool definitions. Where the
CPU has no native bfloat16, the tests expect what jit does there: onnxruntime embeds the pass.
"""

from __future__ import annotations

import json
import logging
import os
import sys
import threading
import weakref

import numpy as np
import pytest

from jit.catalog.embedding_pass import embed_pending
from jit.catalog.store import Store
from jit.config import DEFAULT_EMBEDDING_MODEL, EmbeddingConfig
from jit.config_files import load_config
from jit.embedding import bulk_process as bulk_process_module
from jit.embedding import openvino_bulk
from jit.embedding.bulk_process import BulkProcess, bulk_process
from jit.embedding.factory import embedder_from_config
from jit.embedding.onnx_embedder import OnnxEmbedder
from jit.embedding.onnx_runtime import MIN_COSINE
from jit.embedding.openvino_bulk import BULK_MIN, OpenVinoModel
from jit.errors import ConfigError, EmbeddingError
from jit.models import ServerStatus


def _native_bf16() -> bool:
    try:
        import openvino as ov
    except ImportError:  # not a dependency off x86-64 Linux: the pass stays on onnxruntime
        return False
    return "BF16" in ov.Core().get_property("CPU", "OPTIMIZATION_CAPABILITIES")


#: What a bulk pass runs on this machine: OpenVINO in bfloat16, or (no native bfloat16) onnxruntime.
EXPECTED = "openvino-bf16" if _native_bf16() else None


@pytest.fixture(scope="module")
def fp32() -> OnnxEmbedder:
    """The default model on onnxruntime, never bulk: the reference vectors."""
    emb = OnnxEmbedder(fallback=False, bulk_runtime="off")
    emb.embed(["load"])
    return emb


def _cosines(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return (a * b).sum(axis=1)


@pytest.mark.slow
def test_a_sync_of_many_new_tools_embeds_them_in_bulk_with_the_models_vectors(tmp_path, fp32, livemcpbench_tools):
    """527 real tools: the pass goes to the bulk model, the catalog keeps its model's name, every
    vector is within the cosine any export is held to of onnxruntime's fp32 one, and a query
    embedded afterwards is onnxruntime's fp32 vector (the bulk model served the pass alone)."""
    emb = OnnxEmbedder(fallback=False)
    with Store(tmp_path / "catalog.db") as store:
        store.sync_catalog(livemcpbench_tools, status=ServerStatus.CONNECTED)
        texts = {tid: text for tid, text, _h in store.pending_embeddings()}
        assert len(set(texts.values())) >= BULK_MIN
        report = embed_pending(store, emb)
        assert emb.last_bulk == EXPECTED
        assert report.embedded == len(set(texts.values())) and store.pending_embeddings() == []
        assert store.embedding_model() == (DEFAULT_EMBEDDING_MODEL, 384)
        ids, matrix = store.vector_matrix()
    reference = fp32.embed([texts[i] for i in ids])
    assert _cosines(matrix, reference).min() >= MIN_COSINE
    query = "open an issue about the flaky parser test"
    assert np.array_equal(emb.embed([query]), fp32.embed([query]))


@pytest.mark.slow
def test_the_bulk_model_is_dropped_after_its_pass_and_serves_threads_at_once(fp32):
    if EXPECTED is None:
        pytest.skip("this CPU has no native bfloat16: no bulk model is loaded")
    emb = OnnxEmbedder(fallback=False)
    texts = [f"tool number {i}: read the file at the given path and return {i} lines" for i in range(40)]

    def one_pass() -> tuple[weakref.ref, np.ndarray, list[np.ndarray]]:
        with emb.bulk(BULK_MIN) as bulk:
            assert isinstance(bulk.model, OpenVinoModel) and bulk.model_name == emb.model_name
            alone = bulk.embed(texts)
            results: list[np.ndarray] = []
            threads = [threading.Thread(target=lambda: results.append(bulk.embed(texts))) for _ in range(3)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            return weakref.ref(bulk.model), alone, results

    model, alone, results = one_pass()
    assert model() is None  # its ~200 MB are not kept by the embedder
    assert len(results) == 3 and all(np.array_equal(r, alone) for r in results)
    assert _cosines(alone, fp32.embed(texts)).min() >= MIN_COSINE
    assert emb.texts_embedded == 4 * len(texts)


@pytest.mark.slow
def test_the_streams_each_compute_whole_batches_put_back_in_their_rows(livemcpbench_tools, monkeypatch):
    """run() keeps every stream busy with a batch; each batch's vectors land in its own rows, as
    one request running the batches one after the other computes them, and a batch that fails
    fails the call (after the others are done: nothing is left running)."""
    if EXPECTED is None:
        pytest.skip("this CPU has no native bfloat16: no bulk model is loaded")
    model = OpenVinoModel(OnnxEmbedder(fallback=False)._load().export, threads=2)
    assert model.compiled.get_property("NUM_STREAMS") == 2
    texts = [f"{t.name}: {t.description}" for t in livemcpbench_tools[:300]]
    batches = list(model._batches(texts, 64))
    assert len(batches) > 4 and len({len(rows) for rows, _f, _m in batches}) > 1  # many batches, of many widths
    request = model.compiled.create_infer_request()
    one_by_one = np.zeros((len(texts), model.dimension), dtype=np.float32)
    for rows, feeds, mask in batches:
        one_by_one[rows] = model.pooled(np.asarray(request.infer(feeds)[0], dtype=np.float32), mask)
    assert np.array_equal(model.run(texts), one_by_one)

    pooled, calls = model.pooled, []

    def failing(hidden, mask):
        calls.append(len(mask))
        if len(calls) == 2:
            raise ValueError("the second batch fails")
        return pooled(hidden, mask)

    monkeypatch.setattr(model, "pooled", failing)
    with pytest.raises(ValueError, match="the second batch fails"):
        model.run(texts)
    assert 2 <= len(calls) <= len(batches)


def _gone(pid: int) -> bool:
    """The process has exited and been waited for (no zombie either)."""
    return not os.path.exists(f"/proc/{pid}")


@pytest.mark.slow
def test_in_a_child_process_the_pass_has_the_same_vectors_and_the_child_ends_with_it(livemcpbench_tools):
    """jit serve's way (bulk_in_child): the same vectors as the bulk model in process, bit for bit,
    and the child that computed them has exited once the pass is over."""
    if EXPECTED is None:
        pytest.skip("this CPU has no native bfloat16: no bulk model is loaded")
    texts = [f"{t.name}: {t.description}" for t in livemcpbench_tools[:300]]
    inside, child = OnnxEmbedder(fallback=False), OnnxEmbedder(fallback=False, bulk_in_child=True)
    with inside.bulk(len(texts)) as bulk:  # the same calls: a call's texts are batched together
        reference = np.concatenate([bulk.embed(texts[:100]), bulk.embed(texts[100:])])
    with child.bulk(len(texts)) as bulk:
        assert child.last_bulk == "openvino-bf16-child" and isinstance(bulk.model, BulkProcess)
        assert bulk.runtime_note == "bf16 on OpenVINO in a child process"
        vecs = np.concatenate([bulk.embed(texts[:100]), bulk.embed(texts[100:]), bulk.embed([])])
        pid = bulk.model.pid
        assert not _gone(pid)
    assert _gone(pid)
    assert np.array_equal(vecs, reference) and child.texts_embedded == len(texts)


@pytest.mark.slow
def test_a_child_that_dies_or_refuses_is_a_clear_error_or_a_logged_fallback(caplog, monkeypatch):
    """A child killed mid-pass fails the next request with an EmbeddingError that says so; a
    child whose probe vectors miss the tolerance, or that exits before answering, is logged and
    the pass stays on onnxruntime."""
    if EXPECTED is None:
        pytest.skip("this CPU has no native bfloat16: no bulk model is loaded")
    emb = OnnxEmbedder(fallback=False, bulk_in_child=True)
    with emb.bulk(BULK_MIN) as bulk:
        bulk.embed(["read a file"])
        os.kill(bulk.model.pid, 9)
        with pytest.raises(EmbeddingError, match="bulk embedding process (exited|failed).*-9"):
            bulk.embed(["write a file"])
        pid = bulk.model.pid
    assert _gone(pid)

    class Skewed:
        """onnxruntime's model, its vectors turned around: no bulk model can match them."""

        def __init__(self, model):
            self.export, self.dimension, self._model = model.export, model.dimension, model

        def run(self, texts):
            return -self._model.run(texts)

    with caplog.at_level(logging.INFO, logger="jit.embedding.bulk_process"):
        assert bulk_process(Skewed(emb._load())) is None
    assert "off by a cosine" in caplog.text

    caplog.clear()
    monkeypatch.setattr(bulk_process_module.sys, "executable", "/bin/false")  # a child that exits at once
    with caplog.at_level(logging.INFO, logger="jit.embedding.bulk_process"), emb.bulk(BULK_MIN) as model:
        assert model is emb and emb.last_bulk is None  # the pass stays on onnxruntime
    assert "bulk embedding process failed to start" in caplog.text and "exit code 1" in caplog.text


def test_few_texts_int8_and_bulk_off_stay_on_the_query_runtime_without_loading_anything():
    for emb, count in ((OnnxEmbedder(), BULK_MIN - 1), (OnnxEmbedder(precision="int8"), 10_000),
                       (OnnxEmbedder(bulk_runtime="off"), 10_000)):
        with emb.bulk(count) as model:
            assert model is emb
        assert emb.last_bulk is None and not emb.loaded


@pytest.mark.slow
def test_without_openvino_or_with_vectors_off_the_pass_runs_on_onnxruntime(monkeypatch, caplog):
    """No ``openvino`` package, or a bulk model whose probe vectors miss the tolerance: logged,
    and the pass is embedded by the query runtime itself."""
    emb = OnnxEmbedder(fallback=False)
    monkeypatch.setitem(sys.modules, "openvino", None)  # import openvino raises ImportError
    with caplog.at_level(logging.INFO, logger="jit.embedding.openvino_bulk"), emb.bulk(BULK_MIN) as model:
        assert model is emb and emb.last_bulk is None
    assert "no OpenVINO" in caplog.text
    monkeypatch.undo()  # the package is back
    if EXPECTED is None:
        return
    caplog.clear()
    monkeypatch.setattr(openvino_bulk, "MIN_COSINE", 1.000001)  # no vectors can be that close
    with caplog.at_level(logging.INFO, logger="jit.embedding.openvino_bulk"), emb.bulk(BULK_MIN) as model:
        assert model is emb and emb.last_bulk is None
    assert "bfloat16 vectors" in caplog.text and "off by a cosine" in caplog.text


def test_the_bulk_runtime_key(tmp_path):
    assert embedder_from_config(EmbeddingConfig()).bulk_runtime == "auto"
    assert embedder_from_config(EmbeddingConfig(bulk_runtime="off")).bulk_runtime == "off"
    path = tmp_path / "config.json"
    path.write_text(json.dumps({"embedding": {"bulk_runtime": "off"}}))
    assert load_config(path).embedding.bulk_runtime == "off"
    path.write_text(json.dumps({"embedding": {"bulk_runtime": "gpu"}}))
    with pytest.raises(ConfigError, match="embedding.bulk_runtime"):
        load_config(path)
