"""The retrieval index on disk (jit/selection/indexcache.py): written by one compiler, read by
the next, never read when stale, rebuilt (and the selection unchanged) when damaged."""

from __future__ import annotations

import logging

import compiler_fixtures
import numpy as np
from compiler_fixtures import assert_same_index, build_store, write_config

from jit.models import ToolDef
from jit.selection import retrieve
from jit.selection.compiler import Compiler
from jit.selection.indexcache import IndexCache
from jit.selection.task import TaskContext
from jit.selection.tokens import EstimateCounter

TASK = "Fix the failing unit test in parser.py, then open a GitHub issue describing the bug"


def compile_once(store, config, embedder):
    with Compiler(store, config, embedder, token_counter=EstimateCounter()) as compiler:
        ts = compiler.compile(TaskContext(shard="coder", task=TASK))
        return [(s.name, s.tier, s.final) for s in ts.tools], compiler.catalog.snapshot().index


def test_a_new_compiler_reads_the_index_another_wrote(tmp_path, embedder, monkeypatch):
    config = write_config(tmp_path)
    store = build_store(tmp_path / "own.db", config, embedder)
    try:
        first, built = compile_once(store, config, embedder)
        files = list(IndexCache(store.path).directory.glob("*.npz"))
        assert len(files) == 1
        # The next compiler must not tokenise the catalog again.
        monkeypatch.setattr(retrieve.LexicalIndex, "__init__", lambda *a: (_ for _ in ()).throw(AssertionError))
        second, read = compile_once(store, config, embedder)
        assert second == first
        assert np.array_equal(read.matrix, built.matrix) and read.lexical.terms == built.lexical.terms
    finally:
        store.close()


def test_a_changed_catalog_gets_a_new_file_and_a_damaged_one_is_rebuilt(tmp_path, embedder, caplog):
    config = write_config(tmp_path)
    store = build_store(tmp_path / "own.db", config, embedder)
    try:
        first, _ = compile_once(store, config, embedder)
        directory = IndexCache(store.path).directory
        (path,) = directory.glob("*.npz")
        path.write_bytes(path.read_bytes()[:100])  # a half-written file
        with caplog.at_level(logging.WARNING, logger="jit.selection.indexcache"):
            again, _ = compile_once(store, config, embedder)
        assert again == first
        assert "unreadable retrieval index" in caplog.text
        kept = [st.tool for st in store.tools() if st.tool.server == "fs"]
        store.sync_tools("fs", [*kept, ToolDef(server="fs", name="grep", description="Search files by pattern.")])
        compile_once(store, config, embedder)
        assert len(list(directory.glob("*.npz"))) == 2  # the old tool set's file is kept, not read
    finally:
        store.close()


def _change_fs(store, embedder):
    """Another process's sync: fs's first tool rewritten (and embedded again), its last removed,
    one tool added."""
    from jit.catalog.embedding_pass import embed_pending

    kept = [st.tool for st in store.tools() if st.tool.server == "fs"]
    changed = ToolDef(server="fs", name=kept[0].name, description=kept[0].description + " Faster, zstd.",
                      input_schema=kept[0].input_schema)
    store.sync_tools("fs", [changed, *kept[1:-1], ToolDef(server="fs", name="grep",
                                                          description="Search files by pattern.")])
    embed_pending(store, embedder)  # the rewritten tool's vector now comes last in the table
    return {kept[0].name, kept[-1].name, "grep"}


def test_after_a_change_the_index_is_patched_equal_to_a_new_build(tmp_path, embedder, monkeypatch):
    """A compiler holding a snapshot meets a catalog another process changed: its index is patched
    (only the changed and added tools read, tokenised and their vectors read), and equals the index
    a new process builds from nothing, bit for bit in every score."""
    from jit.catalog.store import Store

    config = write_config(tmp_path)
    store = build_store(tmp_path / "own.db", config, embedder)
    try:
        with Compiler(store, config, embedder, token_counter=EstimateCounter()) as compiler:
            compiler.compile(TaskContext(shard="coder", task=TASK))
            held = compiler.catalog.snapshot().index
            touched = _change_fs(store, embedder)
            read, vectors_of = [], []
            whole, matrix = Store.tool_records, Store.vector_matrix
            monkeypatch.setattr(Store, "tool_records", lambda self, ids=None: read.append(list(ids)) or whole(self, ids)
                                if ids is not None else (_ for _ in ()).throw(AssertionError("every definition read")))
            monkeypatch.setattr(Store, "vector_matrix", lambda self, ids=None: vectors_of.append(sorted(ids))
                                or matrix(self, ids) if ids is not None
                                else (_ for _ in ()).throw(AssertionError("every vector read")))
            monkeypatch.setattr(Store, "tool_record_batches", lambda *a, **k: (_ for _ in ()).throw(AssertionError))
            monkeypatch.setattr(retrieve.LexicalIndex, "__init__", lambda *a: (_ for _ in ()).throw(AssertionError))
            ts = compiler.compile(TaskContext(shard="coder", task=TASK))
            patched = compiler.catalog.snapshot().index
            names = {name for _server, name in compiler.catalog.snapshot().heads.values()}
            monkeypatch.undo()
        assert patched is not held and held.n == patched.n  # one tool removed, one added
        assert "grep" in names and len(touched - names) == 1
        (ids,) = read
        assert len(ids) == 2 and vectors_of == [sorted(ids)]  # the rewritten tool and grep: nothing else
        for d in IndexCache(store.path).directory.iterdir():
            d.unlink()  # a new process with no index file: the index from every definition
        fresh, scratch = compile_once(store, config, embedder)
        assert [(s.name, s.tier, s.final) for s in ts.tools] == fresh
        assert_same_index(patched, scratch, ["search files", "zstd faster", TASK, "grep pattern read write"])
    finally:
        store.close()


def _read_by_threes(monkeypatch) -> list:
    """The store reads every tool's definition three at a time (the batches it gives, returned),
    and never all at once."""
    from jit.catalog.store import Store

    batches: list = []
    whole, by_batch = Store.tool_records, Store.tool_record_batches
    monkeypatch.setattr(Store, "tool_records", lambda self, ids=None: whole(self, ids) if ids is not None
                        else (_ for _ in ()).throw(AssertionError("every definition read at once")))
    monkeypatch.setattr(Store, "tool_record_batches",
                        lambda self, size=2000: (batches.append(b) or b for b in by_batch(self, 3)))
    return batches


def test_without_a_usable_index_to_patch_the_index_is_rebuilt_from_batches(tmp_path, embedder, monkeypatch):
    """A compiler that began before the catalog had any vector (lexical only) meets the embedded
    catalog: its index is rebuilt, every tool's text read a few at a time, never every definition at
    once, and equals the index a new process builds from nothing."""
    from jit.catalog.embedding_pass import embed_pending

    config = write_config(tmp_path)
    with monkeypatch.context() as m:
        m.setattr(compiler_fixtures, "embed_pending", lambda *a: 0)  # synced, not embedded yet
        store = build_store(tmp_path / "own.db", config, embedder)
    try:
        with Compiler(store, config, embedder, token_counter=EstimateCounter()) as compiler:
            compiler.compile(TaskContext(shard="coder", task=TASK))
            assert compiler.catalog.snapshot().index.model is None
            embed_pending(store, embedder)
            batches = _read_by_threes(monkeypatch)
            ts = compiler.compile(TaskContext(shard="coder", task=TASK))
            rebuilt = compiler.catalog.snapshot().index
            monkeypatch.undo()
        assert rebuilt.model is not None and rebuilt.all_vectors
        assert len(batches) > 1 and all(len(b) <= 3 for b in batches)
        assert sum(len(b) for b in batches) == store.tool_count()
        for d in IndexCache(store.path).directory.iterdir():
            d.unlink()
        fresh, scratch = compile_once(store, config, embedder)
        assert [(s.name, s.tier, s.final) for s in ts.tools] == fresh
        assert_same_index(rebuilt, scratch, ["search files", TASK])
    finally:
        store.close()


def test_a_first_build_reads_every_definition_a_batch_at_a_time(tmp_path, embedder, monkeypatch):
    """A view built from nothing (no view file) derives each tool as its batch comes and keeps no
    definition: it never reads every definition at once, and selects as a view loaded from its file."""

    config = write_config(tmp_path)
    store = build_store(tmp_path / "own.db", config, embedder)
    try:
        batches = _read_by_threes(monkeypatch)
        with Compiler(store, config, embedder, token_counter=EstimateCounter()) as compiler:
            built = compiler.compile(TaskContext(shard="coder", task=TASK))
            snap = compiler.catalog.snapshot()
            assert len(snap.memo.summaries) == len(snap.rows)  # every Condensed line kept, as a view file has
        assert len(batches) > 1 and sum(len(b) for b in batches) == store.tool_count()
        monkeypatch.undo()
        with Compiler(store, config, embedder, token_counter=EstimateCounter()) as compiler:
            loaded = compiler.compile(TaskContext(shard="coder", task=TASK))
            assert compiler.catalog.snapshot().memo.summaries == snap.memo.summaries
        assert [(s.name, s.tier, s.final) for s in built.tools] == [(s.name, s.tier, s.final) for s in loaded.tools]
    finally:
        store.close()
