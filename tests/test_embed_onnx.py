"""The torch-free embedding runtime (jit/embedding/onnx_*.py), and a sync that loads no model for nothing.

The ONNX tests export the real MiniLM once per session into the session's cache
(``JIT_CACHE_DIR``, set by conftest.py) and compare it with sentence-transformers.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import shutil
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from jit.catalog.store import Store
from jit.config import DEFAULT_EMBEDDING_MODEL, AvailableTools, Config, EmbeddingConfig, HarnessTool
from jit.config_files import load_config
from jit.embedding import onnx_cache, onnx_export
from jit.embedding.factory import embedder_from_config
from jit.embedding.onnx_cache import read_layout
from jit.embedding.onnx_embedder import OnnxEmbedder
from jit.embedding.onnx_export import FUSED
from jit.embedding.onnx_runtime import MIN_COSINE, UnsupportedModel
from jit.embedding.torch_embedder import SentenceTransformerEmbedder, packaged_model_path
from jit.errors import ConfigError, EmbeddingError
from jit.pipeline import sync

#: The files of the default model (jit's own package).
MODEL_DIR = packaged_model_path(DEFAULT_EMBEDDING_MODEL)
#: Texts of every shape a catalog holds: empty, whitespace, one word, non-Latin, and long
#: enough (~600 tokens) that truncation at the model's 256 tokens decides the vector.
TEXTS = [
    "", "   ", "x", "read a file", "Book a FLIGHT to Paris!!", "  padded on both sides  ",
    "émoji 🎉, 中文, кириллица and ünïcödé", "line one\n\tline two\r\n",
    "create_issue: Open a new issue in a GitHub repository with a title, a body and labels. " * 25,
    "search_web(query: string, max_results: integer) Search the web and return the top results.",
]


@pytest.fixture(scope="module")
def onnx_embedder() -> OnnxEmbedder:
    """The default model on onnxruntime, with no fallback: a failed export fails the test."""
    emb = OnnxEmbedder(fallback=False)
    emb.embed(["load"])
    assert emb.runtime == "onnx"
    return emb


def cosines(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return (a * b).sum(axis=1)


@pytest.mark.slow
def test_onnx_vectors_are_torch_vectors(onnx_embedder, embedder):
    reference = embedder.embed(TEXTS)
    assert onnx_embedder.model_name == embedder.model_name and onnx_embedder.dimension == 384
    together = onnx_embedder.embed(TEXTS)
    assert together.shape == (len(TEXTS), 384) and together.dtype == np.float32
    assert np.allclose(np.linalg.norm(together, axis=1), 1.0, atol=1e-5)
    assert cosines(together, reference).min() >= MIN_COSINE
    one_by_one = np.concatenate([onnx_embedder.embed([t]) for t in TEXTS])
    assert cosines(one_by_one, reference).min() >= MIN_COSINE
    # Small batches of mixed lengths: sorted by length inside, returned in the caller's order.
    small = OnnxEmbedder(batch_size=3, fallback=False)
    shuffled = [TEXTS[i] for i in (8, 0, 3, 9, 1, 6, 2, 7, 5, 4)]
    assert cosines(small.embed(shuffled), embedder.embed(shuffled)).min() >= MIN_COSINE
    assert small.embed([]).shape == (0, 384)


@pytest.mark.slow
def test_texts_of_unlike_length_run_apart(onnx_embedder, monkeypatch):
    """A compile embeds its task with its steps' short texts: they are not padded to the task's
    length (each batch stops where more padding costs more than another call), and every vector
    is the one the text gets alone, bit for bit."""
    model = onnx_embedder._load()
    task = ("Find the open pull requests in the jit repository that touch the retrieval index, "
            "review each of them and leave a comment on the ones that break the benchmark")
    steps = ["review each of them", "leave a comment", "find the open pull requests"]
    shapes: list[tuple[int, int]] = []
    infer = model._infer

    def counted(feeds):
        shapes.append(feeds["input_ids"].shape)
        return infer(feeds)

    monkeypatch.setattr(model, "_infer", counted)
    together = model.run([task, *steps])
    widths = [len(model.tokenizer.encode(t).ids) for t in [task, *steps]]
    assert sorted(shapes) == [(1, widths[0]), (3, max(widths[1:]))]
    alone = np.concatenate([model.run([t]) for t in [task, *steps]])
    assert np.array_equal(together, alone)


def _meta_files(cache: Path) -> list[Path]:
    """The metadata of the fp32 graph the embedder runs, the fused one (the plain export an int8
    model is quantized from, made by another test, has no ``variant``; an int8 model has a ``scheme``)."""
    return sorted(p for p in (cache / "onnx").glob("*.json")
                  if not p.name.endswith(".tokenizer.json") and json.loads(p.read_text()).get("variant") == FUSED)


@pytest.mark.slow
def test_the_embedder_runs_the_fused_graph(onnx_embedder):
    """onnxruntime's transformer optimizer rewrote each layer's attention into one operator (with
    the projections of q, k and v in one product), and the norms and GELUs: MiniLM-L6's 669
    operators become 46. The vectors are torch's (test_onnx_vectors_are_torch_vectors)."""
    import onnx

    (meta,) = _meta_files(onnx_cache.cache_root())
    info = json.loads(meta.read_text())
    assert info["fused_operators"]["Attention"] == 6 and info["probe_min_cosine"] >= MIN_COSINE
    graph = onnx.load(str(meta.parent / info["onnx_file"]), load_external_data=False).graph
    ops = [n.op_type for n in graph.node]
    assert ops.count("Attention") == 6 and "Softmax" not in ops and len(ops) < 100


def test_an_optimizer_that_fails_leaves_the_graph_as_traced(tmp_path, monkeypatch, caplog):
    """The fusion is an optimisation: when onnxruntime's optimizer fails, the traced graph is kept
    (and verified like any export), and the failure is logged."""
    import onnxruntime.transformers.optimizer as optimizer

    def broken(*args, **kwargs):
        raise RuntimeError("no pattern for this graph")

    monkeypatch.setattr(optimizer, "optimize_model", broken)
    graph = tmp_path / "model.onnx"
    graph.write_bytes(b"as traced")
    config = type("Config", (), {"model_type": "bert", "num_attention_heads": 12, "hidden_size": 384})()
    with caplog.at_level(logging.WARNING, logger="jit.embedding.onnx_export"):
        assert onnx_export._fuse(graph, config) == {}
    assert graph.read_bytes() == b"as traced" and "no pattern for this graph" in caplog.text


@pytest.mark.slow
def test_no_fused_graph_falls_back_to_the_plain_export(onnx_embedder, embedder, tmp_path, monkeypatch, caplog):
    """A fused graph that cannot be made to match is logged, and the plain export serves: same vectors."""
    shutil.copytree(onnx_cache.cache_root(), tmp_path / "cache")
    monkeypatch.setenv("JIT_CACHE_DIR", str(tmp_path / "cache"))
    for meta in _meta_files(tmp_path / "cache"):
        meta.unlink()
    export = onnx_export._export
    tried: list[bool] = []

    def no_fusion(*args, fused=False, **kwargs):
        if fused:
            tried.append(True)
            raise UnsupportedModel("the fused graph does not match sentence-transformers")
        return export(*args, **kwargs)

    monkeypatch.setattr(onnx_export, "_export", no_fusion)
    with caplog.at_level(logging.WARNING, logger="jit.embedding.onnx_export"):
        plain = OnnxEmbedder(fallback=False)
        vecs = plain.embed(TEXTS)
    assert plain.runtime == "onnx" and "no fused graph" in caplog.text and "does not match" in caplog.text
    assert cosines(vecs, embedder.embed(TEXTS)).min() >= MIN_COSINE
    assert not _meta_files(tmp_path / "cache")
    # A later process does not pay for the export again: the failure is remembered, for this jit.
    (failure,) = (tmp_path / "cache" / "onnx").glob("*.failed")
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="jit.embedding.onnx_export"):
        again = OnnxEmbedder(fallback=False)
        assert cosines(again.embed(TEXTS), vecs).min() >= MIN_COSINE
    assert tried == [True] and "it failed before" in caplog.text and "does not match" in caplog.text
    # Another jit (an upgrade) tries again.
    failure.write_text(json.dumps({"jit": "0.0.0", "reason": "old"}), encoding="utf-8")
    OnnxEmbedder(fallback=False).embed(TEXTS)
    assert tried == [True, True]


@pytest.mark.slow
def test_a_second_load_reuses_the_export(onnx_embedder, monkeypatch):
    cache = onnx_cache.cache_root()
    (meta,) = _meta_files(cache)
    stamp = meta.stat().st_mtime_ns

    def refuse(*args, **kwargs):
        raise AssertionError("exported again although the cache holds a good export")

    monkeypatch.setattr(onnx_export, "_export", refuse)
    again = OnnxEmbedder(fallback=False)
    assert np.allclose(again.embed(TEXTS[:4]), onnx_embedder.embed(TEXTS[:4]), atol=1e-6)
    assert again.runtime == "onnx" and meta.stat().st_mtime_ns == stamp
    info = json.loads(meta.read_text())
    assert info["probe_min_cosine"] >= MIN_COSINE and info["dimension"] == 384 and info["max_length"] == 256
    # The weights beside the graph, which onnxruntime maps instead of reading (a lower peak at load).
    weights = meta.parent / info["weights_file"]
    assert weights.stat().st_size == info["weights_size"] > 50 * info["onnx_size"]
    assert weights.stat().st_mode & 0o777 == (meta.parent / info["onnx_file"]).stat().st_mode & 0o777


@pytest.mark.slow
@pytest.mark.parametrize("damage", ["truncated", "garbage"])
@pytest.mark.parametrize("file", ["onnx_file", "weights_file"])
def test_a_damaged_export_is_exported_again(onnx_embedder, embedder, tmp_path, monkeypatch, caplog, damage, file):
    """A half-written or overwritten model file (the graph or its weights) is noticed at load,
    logged, and replaced."""
    shutil.copytree(onnx_cache.cache_root(), tmp_path / "cache")
    monkeypatch.setenv("JIT_CACHE_DIR", str(tmp_path / "cache"))
    (meta,) = _meta_files(tmp_path / "cache")
    model_file = meta.parent / json.loads(meta.read_text())[file]
    size = model_file.stat().st_size
    data = model_file.read_bytes()
    model_file.write_bytes(data[: size // 2] if damage == "truncated" else bytes(size))
    with caplog.at_level(logging.WARNING, logger="jit.embedding.onnx_cache"):
        fresh = OnnxEmbedder(fallback=False)
        vecs = fresh.embed(TEXTS)
    assert "is damaged" in caplog.text and "exporting it again" in caplog.text
    assert fresh.runtime == "onnx" and model_file.stat().st_size == size
    # The new model names its files where they are now, not in the staging directory, which is
    # gone: a bulk model (jit/embedding/openvino_bulk.py) compiles the graph again from them.
    export = fresh._load().export
    assert export.onnx == meta.parent / export.meta["onnx_file"] and export.onnx.is_file()
    assert export.tokenizer == meta.parent / export.meta["tokenizer_file"] and export.tokenizer.is_file()
    assert cosines(vecs, embedder.embed(TEXTS)).min() >= MIN_COSINE
    assert len(_meta_files(tmp_path / "cache")) == 1


@pytest.mark.slow
def test_auto_falls_back_to_torch_for_a_model_it_cannot_run(tmp_path, embedder, caplog):
    """No tokenizer.json (sentence-transformers builds one from vocab.txt): torch runs it, same vectors."""
    model = tmp_path / "minilm-without-tokenizer-json"
    shutil.copytree(MODEL_DIR, model, ignore=shutil.ignore_patterns("tokenizer.json"))
    with pytest.raises(UnsupportedModel, match="no tokenizer.json"):
        read_layout(model)
    with caplog.at_level(logging.WARNING, logger="jit.embedding.onnx_embedder"):
        auto = embedder_from_config(EmbeddingConfig(path=str(model)))
        vecs = auto.embed(TEXTS[:5])
    assert auto.runtime == "torch" and "through torch" in caplog.text
    assert cosines(vecs, embedder.embed(TEXTS[:5])).min() >= MIN_COSINE


def test_runtime_onnx_refuses_a_model_it_cannot_run(tmp_path):
    (tmp_path / "modules.json").write_text(json.dumps([
        {"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
        {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"},
        {"idx": 2, "name": "2", "path": "2_Dense", "type": "sentence_transformers.models.Dense"},
    ]))
    onnx = embedder_from_config(EmbeddingConfig(path=str(tmp_path), runtime="onnx"))
    with pytest.raises(EmbeddingError, match="only Transformer, Pooling"):
        onnx.embed(["x"])
    assert onnx.runtime is None


def test_the_runtime_key_chooses_the_embedder(tmp_path):
    assert isinstance(embedder_from_config(EmbeddingConfig(runtime="torch")), SentenceTransformerEmbedder)
    auto, onnx = (embedder_from_config(EmbeddingConfig(runtime=r)) for r in ("auto", "onnx"))
    assert isinstance(auto, OnnxEmbedder) and auto.fallback and not onnx.fallback
    # Same model, same identity in the catalog, whichever runtime: switching re-embeds nothing.
    assert {e.model_name for e in (auto, onnx, embedder_from_config(EmbeddingConfig(runtime="torch")))} == {
        DEFAULT_EMBEDDING_MODEL}
    path = tmp_path / "config.json"
    path.write_text(json.dumps({"embedding": {"runtime": "torch"}}))
    assert load_config(path).embedding.runtime == "torch"
    path.write_text(json.dumps({"embedding": {"runtime": "gpu"}}))
    with pytest.raises(ConfigError, match="embedding.runtime"):
        load_config(path)


def test_importing_the_embedders_loads_no_model_runtime():
    import subprocess
    import sys

    code = ("import sys, jit, jit.embedding.factory, jit.embedding.query_cache, jit.catalog.embedding_pass, "
            "jit.pipeline; "
            "print(sorted(m for m in ('torch', 'onnxruntime', 'tokenizers', 'sentence_transformers', 'openvino') "
            "if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    assert out.stdout.strip() == "[]"


# ------------------------------------------------------------------ a sync with nothing to embed loads no model


def _harness_config(base: Path, *names: str) -> Config:
    tools = [HarnessTool(name=n, description=f"{n.replace('_', ' ')} in the workspace") for n in names]
    return replace(Config.default(base), available_tools=AvailableTools(tools=tools))


def test_a_sync_with_nothing_new_to_embed_never_loads_the_model(tmp_path, hashing_embedder):
    """The real default embedder is handed to every sync after the first: it must stay unloaded.

    The first sync embeds with the hashing stand-in under the default model's name,
    so the catalog's vectors belong to the default model as far as the store knows.
    """
    from conftest import HashingEmbedder

    stand_in = HashingEmbedder(model_name=DEFAULT_EMBEDDING_MODEL)
    empty = Config.default(tmp_path)
    with Store(empty.store_path) as store:
        lazy = embedder_from_config(empty.embedding)
        report = asyncio.run(sync(empty, store, lazy))  # a fresh catalog with no tools at all
        assert report.embedding.embedded == 0 and not lazy.loaded

        config = _harness_config(tmp_path, "read_file", "write_file")
        assert asyncio.run(sync(config, store, stand_in)).embedding.embedded == 2
        lazy = embedder_from_config(config.embedding)
        report = asyncio.run(sync(config, store, lazy))  # nothing new
        assert report.embedding.embedded == 0 and not lazy.loaded

        # A tool dropped and added back: its text is in the content-hash cache, so no model either.
        asyncio.run(sync(_harness_config(tmp_path, "read_file"), store, lazy))
        report = asyncio.run(sync(config, store, lazy))
        assert report.embedding.cached == 1 and report.embedding.embedded == 0 and not lazy.loaded
        assert len(store.vector_matrix()[0]) == 2 and store.pending_embeddings() == []


def _fake_export(cache: Path, slug: str, fp: str, model_path: Path, *, int8: bool = False) -> list[Path]:
    """An export's metadata and files as :func:`onnx_export._export` lays them out (contents aside)."""
    scheme = "-int8-dq-pc" if int8 else ""
    files = {"onnx_file": f"{slug}-{fp}{scheme}-aaaa.onnx", "tokenizer_file": f"{slug}-{fp}-bbbb.tokenizer.json"}
    if not int8:
        files["weights_file"] = f"{slug}-{fp}-aaaa.weights"
    for name in files.values():
        (cache / name).write_bytes(b"x")
    meta = cache / f"{slug}-{fp}{scheme}.json"
    meta.write_text(json.dumps({"format": 2, "fingerprint": fp, "model_path": str(model_path), **files}))
    return [meta, *(cache / name for name in files.values())]


def test_a_new_export_removes_the_exports_it_made_obsolete(tmp_path, caplog):
    """Every virtualenv (or reinstall) of the model gave an export of its own, ~90 MB each, never removed:
    a new export removes those of model directories that are gone and its own model's earlier ones."""
    cache = tmp_path / "onnx"
    cache.mkdir()
    live, other_live = tmp_path / "venv" / "model", tmp_path / "venv2" / "model"
    live.mkdir(parents=True)
    other_live.mkdir(parents=True)
    current = _fake_export(cache, "m", "f1", live)
    reinstalled = _fake_export(cache, "m", "f0", live)  # the same directory's files before a reinstall
    gone = _fake_export(cache, "m", "f2", tmp_path / "deleted-venv" / "model")
    gone_int8 = _fake_export(cache, "m", "f2", tmp_path / "deleted-venv" / "model", int8=True)
    elsewhere = _fake_export(cache, "m", "f3", other_live)  # another virtualenv still installed
    elsewhere_int8 = _fake_export(cache, "m", "f3", other_live, int8=True)
    orphan_old, orphan_new = cache / "m-f9-cccc.weights", cache / "m-f8-dddd.onnx"
    orphan_old.write_bytes(b"x")
    orphan_new.write_bytes(b"x")  # perhaps another process's export, its metadata not yet written
    staging = cache / ".export-abc"
    staging.mkdir()
    (staging / "model.onnx").write_bytes(b"x")
    unrelated = cache / "notes.txt"
    unrelated.write_text("kept")
    hour_ago = onnx_cache.ORPHAN_AGE + 1
    for path in (orphan_old, staging):
        stamp = path.stat().st_mtime - hour_ago
        os.utime(path, (stamp, stamp))

    with caplog.at_level(logging.INFO, logger="jit.embedding.onnx_cache"):
        removed = onnx_cache.prune_cache(cache, live, "f1")

    assert set(removed) == {*reinstalled, *gone, *gone_int8, orphan_old, staging}
    assert all(p.exists() for p in (*current, *elsewhere, *elsewhere_int8, orphan_new, unrelated))
    assert not any(p.exists() for p in removed)
    assert "removed 12 cached ONNX file(s)" in caplog.text
    # Nothing more to do the second time.
    assert onnx_cache.prune_cache(cache, live, "f1") == []


def test_pruning_the_cache_never_fails_an_export(tmp_path, monkeypatch, caplog):
    """A file that cannot be removed is logged and kept."""
    cache = tmp_path / "onnx"
    cache.mkdir()
    gone = _fake_export(cache, "m", "f2", tmp_path / "deleted")

    def refuse(self, missing_ok=False):
        raise PermissionError("read-only")

    monkeypatch.setattr(Path, "unlink", refuse)
    with caplog.at_level(logging.WARNING, logger="jit.embedding.onnx_cache"):
        assert onnx_cache.prune_cache(cache, tmp_path / "live", "f1") == []
    assert "could not remove the obsolete cache file" in caplog.text
    assert all(p.exists() for p in gone)


def test_an_unusable_cache_directory_is_named_with_the_remedy(tmp_path, monkeypatch):
    """``$JIT_CACHE_DIR`` under a file read as "the cached ONNX model … is damaged … exporting it again",
    then an ``[Errno 20]``: the cache directory is named, with what to do (under ``auto`` the model
    then runs on torch, with this message in the warning)."""
    blocker = tmp_path / "a-file"
    blocker.write_text("x")
    monkeypatch.setenv("JIT_CACHE_DIR", str(blocker / "cache"))
    with pytest.raises(EmbeddingError, match=r"the ONNX model cache .*a-file/cache/onnx cannot be created "
                                             r"\(Not a directory\): set JIT_CACHE_DIR to a writable directory"):
        OnnxEmbedder(fallback=False).embed(["x"])


@pytest.mark.slow
def test_a_cache_directory_that_cannot_be_written_is_named_with_the_remedy(tmp_path, monkeypatch):
    """A cache directory that exists but refuses new files (read-only, full) fails the export with a
    message naming it, not a bare ``[Errno 13]``; loading an export already there needs no write."""
    monkeypatch.setenv("JIT_CACHE_DIR", str(tmp_path / "cache"))

    def refuse(*args, **kwargs):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(onnx_export.tempfile, "TemporaryDirectory", refuse)
    with pytest.raises(EmbeddingError, match=r"cannot write the ONNX export into .*cache/onnx "
                                             r"\(Permission denied\): set JIT_CACHE_DIR"):
        OnnxEmbedder(fallback=False).embed(["x"])
