"""The int8 model (jit/embedding/onnx_int8.py): its own artifact, its own identity, never fp32 vectors under its name.

The model tests quantize the real MiniLM once per session in the session's cache
(``JIT_CACHE_DIR``, set by conftest.py), after exporting it to ONNX if no other
test has yet.
"""

from __future__ import annotations

import asyncio
import json
import logging
import shutil
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from jit.catalog.store import Store
from jit.config import DEFAULT_EMBEDDING_MODEL, AvailableTools, Config, EmbeddingConfig, HarnessTool
from jit.config_files import load_config
from jit.embedding import onnx_cache, onnx_export, onnx_int8
from jit.embedding.factory import embedder_from_config
from jit.embedding.onnx_embedder import OnnxEmbedder
from jit.embedding.onnx_int8 import MIN_COSINE_INT8, SCHEME
from jit.embedding.onnx_runtime import MIN_COSINE
from jit.errors import ConfigError, EmbeddingError
from jit.pipeline import sync
from tests.test_embed_onnx import MODEL_DIR

TEXTS = [
    "", "read a file", "Book a FLIGHT to Paris!!", "émoji 🎉, 中文, кириллица and ünïcödé",
    "create_issue: Open a new issue in a GitHub repository with a title, a body and labels. " * 25,
    "search_web(query: string, max_results: integer) Search the web and return the top results.",
]


@pytest.fixture(scope="module")
def fp32() -> OnnxEmbedder:
    emb = OnnxEmbedder(fallback=False)
    emb.embed(["load"])
    return emb


@pytest.fixture(scope="module")
def int8(fp32) -> OnnxEmbedder:
    """The int8 model, quantized from the fp32 export the ``fp32`` fixture made."""
    emb = OnnxEmbedder(precision="int8")
    emb.embed(["load"])
    assert emb.runtime == "onnx"
    return emb


def cosines(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return (a * b).sum(axis=1)


def _int8_meta(cache: Path) -> Path:
    (meta,) = (cache / "onnx").glob(f"*-{SCHEME}.json")
    return meta


def test_int8_is_a_model_of_its_own(tmp_path):
    fp32, int8 = (embedder_from_config(EmbeddingConfig(precision=p)) for p in ("fp32", "int8"))
    assert fp32.model_name == DEFAULT_EMBEDDING_MODEL and int8.model_name == f"{DEFAULT_EMBEDDING_MODEL}+{SCHEME}"
    # runtime auto: fp32 may fall back to torch (same vectors); int8 may not (torch's are fp32's).
    assert isinstance(int8, OnnxEmbedder) and fp32.fallback and not int8.fallback
    path = tmp_path / "config.json"
    path.write_text(json.dumps({"embedding": {"precision": "int8"}}))
    assert load_config(path).embedding.precision == "int8"
    path.write_text(json.dumps({"embedding": {"precision": "int8", "runtime": "torch"}}))
    with pytest.raises(ConfigError, match="int8 runs on onnxruntime"):
        load_config(path)
    with pytest.raises(EmbeddingError, match="unknown precision"):
        OnnxEmbedder(precision="int4")


@pytest.mark.slow
def test_int8_is_quantized_from_the_plain_export_not_the_fused_one(int8, fp32):
    """Dynamic int8 vectors depend on the exact graph (quantizing the eager-attention trace moved
    them by up to 0.006 in cosine): the scheme's vectors are those of the plain export."""
    meta = json.loads(_int8_meta(onnx_cache.cache_root()).read_text())
    plain = json.loads(Path(onnx_cache.meta_path_of(onnx_cache.read_layout(MODEL_DIR),
                                                     meta["fingerprint"])).read_text())
    assert "variant" not in plain and meta["source_onnx_file"] == plain["onnx_file"]
    assert f"-{onnx_export.FUSED}-" not in meta["source_onnx_file"]


@pytest.mark.slow
def test_int8_vectors_are_near_fp32_but_not_fp32(int8, fp32):
    reference = fp32.embed(TEXTS)
    together = int8.embed(TEXTS)
    assert together.shape == (len(TEXTS), 384) and together.dtype == np.float32
    assert np.allclose(np.linalg.norm(together, axis=1), 1.0, atol=1e-5)
    near = cosines(together, reference)
    assert near.min() >= MIN_COSINE_INT8 and near.min() < MIN_COSINE  # close, and not the same vectors
    alone = np.concatenate([int8.embed([t]) for t in TEXTS])
    assert cosines(alone, reference).min() >= MIN_COSINE_INT8
    info = json.loads(_int8_meta(onnx_cache.cache_root()).read_text())
    assert info["scheme"] == SCHEME and info["probe_min_cosine_fp32"] >= MIN_COSINE_INT8
    assert info["source_onnx_file"] != info["onnx_file"]


@pytest.mark.slow
def test_a_second_load_reuses_the_int8_model(int8, monkeypatch):
    meta = _int8_meta(onnx_cache.cache_root())
    stamp = meta.stat().st_mtime_ns

    def refuse(*args, **kwargs):
        raise AssertionError("quantized again although the cache holds a good int8 model")

    monkeypatch.setattr(onnx_int8, "_quantize", refuse)
    again = OnnxEmbedder(precision="int8", threads=1)  # one thread: the stored probe must still match
    assert cosines(again.embed(TEXTS), int8.embed(TEXTS)).min() >= MIN_COSINE
    assert meta.stat().st_mtime_ns == stamp


@pytest.mark.slow
@pytest.mark.parametrize("damage", ["truncated", "garbage", "missing"])
def test_a_damaged_int8_model_is_quantized_again(int8, tmp_path, monkeypatch, caplog, damage):
    shutil.copytree(onnx_cache.cache_root(), tmp_path / "cache")
    monkeypatch.setenv("JIT_CACHE_DIR", str(tmp_path / "cache"))
    meta = _int8_meta(tmp_path / "cache")
    model_file = meta.parent / json.loads(meta.read_text())["onnx_file"]
    data = model_file.read_bytes()
    if damage == "missing":
        model_file.unlink()
    else:
        model_file.write_bytes(data[: len(data) // 2] if damage == "truncated" else bytes(len(data)))
    with caplog.at_level(logging.WARNING, logger="jit.embedding.onnx_cache"):
        fresh = OnnxEmbedder(precision="int8")
        vecs = fresh.embed(TEXTS)
    assert "is damaged" in caplog.text and "quantizing it again" in caplog.text
    assert model_file.read_bytes() == data  # quantization is deterministic: the same file again
    assert cosines(vecs, int8.embed(TEXTS)).min() >= MIN_COSINE
    assert _int8_meta(tmp_path / "cache") == meta


@pytest.mark.slow
def test_int8_never_falls_back_to_torch(tmp_path):
    """A model onnxruntime cannot run is an error in int8, not fp32 vectors under the int8 name."""
    model = tmp_path / "minilm-without-tokenizer-json"
    shutil.copytree(MODEL_DIR, model, ignore=shutil.ignore_patterns("tokenizer.json"))
    auto = embedder_from_config(EmbeddingConfig(path=str(model), precision="int8"))
    with pytest.raises(EmbeddingError, match="no tokenizer.json"):
        auto.embed(["x"])
    assert auto.runtime is None


def _harness_config(base: Path, embedding: EmbeddingConfig, *names: str) -> Config:
    tools = [HarnessTool(name=n, description=f"{n.replace('_', ' ')} in the workspace") for n in names]
    return replace(Config.default(base), available_tools=AvailableTools(tools=tools), embedding=embedding)


@pytest.mark.slow
def test_switching_precision_re_embeds_the_catalog(int8, fp32, tmp_path):
    """fp32 → int8 re-embeds every tool with int8 vectors; back to fp32 takes the cached fp32 ones."""
    names = ("read_file", "write_file", "search_web")
    fp32_config = _harness_config(tmp_path, EmbeddingConfig(), *names)
    int8_config = _harness_config(tmp_path, EmbeddingConfig(precision="int8"), *names)
    with Store(fp32_config.store_path) as store:
        first = asyncio.run(sync(fp32_config, store, embedder_from_config(fp32_config.embedding)))
        assert first.embedding.embedded == 3 and store.embedding_model() == (DEFAULT_EMBEDDING_MODEL, 384)
        ids, fp32_vectors = store.vector_matrix()

        switched = asyncio.run(sync(int8_config, store, embedder_from_config(int8_config.embedding)))
        assert switched.embedding.model_changed and switched.embedding.embedded == 3
        assert store.embedding_model() == (int8.model_name, 384) and store.pending_embeddings() == []
        ids8, int8_vectors = store.vector_matrix()
        assert list(ids8) == list(ids)
        by_id = store.tools_by_id([int(i) for i in ids])
        texts = [by_id[int(i)].tool.embedding_text() for i in ids]
        assert cosines(int8_vectors, int8.embed(texts)).min() >= MIN_COSINE
        assert cosines(int8_vectors, fp32_vectors).max() < MIN_COSINE  # the fp32 vectors are gone

        back = asyncio.run(sync(fp32_config, store, embedder_from_config(fp32_config.embedding)))
        assert back.embedding.model_changed and back.embedding.embedded == 0 and back.embedding.cached == 3
        assert np.array_equal(store.vector_matrix()[1], fp32_vectors)
