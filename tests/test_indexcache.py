"""The retrieval index on disk (jit/selection/indexcache.py): written by one compiler, read by
the next, never read when stale, rebuilt (and the selection unchanged) when damaged."""

from __future__ import annotations

import logging

import numpy as np
from compiler_fixtures import build_store, write_config

from jit.models import ToolDef
from jit.selection import retrieve
from jit.selection.compiler import Compiler
from jit.selection.indexcache import IndexCache
from jit.selection.tokens import EstimateCounter
from jit.selection.toolset import TaskContext

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


def test_after_a_change_the_index_is_rebuilt_from_batches_as_a_new_process_would_build_it(
        tmp_path, embedder, monkeypatch):
    """A compiler holding a snapshot meets a catalog another process changed (one tool rewritten
    and embedded again, one added): its new index is read a few tools at a time, never as every
    definition at once, and equals the index a new process builds from nothing."""
    from jit.catalog.embed import embed_pending
    from jit.catalog.store import Store

    config = write_config(tmp_path)
    store = build_store(tmp_path / "own.db", config, embedder)
    try:
        with Compiler(store, config, embedder, token_counter=EstimateCounter()) as compiler:
            compiler.compile(TaskContext(shard="coder", task=TASK))
            kept = [st.tool for st in store.tools() if st.tool.server == "fs"]
            changed = ToolDef(server="fs", name=kept[0].name, description=kept[0].description + " Faster.",
                              input_schema=kept[0].input_schema)
            store.sync_tools("fs", [changed, *kept[1:], ToolDef(server="fs", name="grep",
                                                                 description="Search files by pattern.")])
            embed_pending(store, embedder)  # the rewritten tool's vector now comes last in the table
            batches = []
            whole = Store.tool_records
            monkeypatch.setattr(Store, "tool_records", lambda self, ids=None: whole(self, ids) if ids is not None
                                else (_ for _ in ()).throw(AssertionError("every definition read at once")))
            by_batch = Store.tool_record_batches
            monkeypatch.setattr(Store, "tool_record_batches",
                                lambda self, size=2000: (batches.append(b) or b for b in by_batch(self, 3)))
            ts = compiler.compile(TaskContext(shard="coder", task=TASK))
            rebuilt = compiler.catalog.snapshot().index
            monkeypatch.undo()
        assert len(batches) > 1 and all(len(b) <= 3 for b in batches)
        assert sum(len(b) for b in batches) == store.tool_count()
        for d in IndexCache(store.path).directory.iterdir():
            d.unlink()  # a new process with no index file: the index from every definition
        fresh, scratch = compile_once(store, config, embedder)
        assert [(s.name, s.tier, s.final) for s in ts.tools] == fresh
        assert np.array_equal(rebuilt.matrix, scratch.matrix)
        assert np.array_equal(rebuilt.has_vector, scratch.has_vector)
        assert rebuilt.lexical.terms == scratch.lexical.terms
        assert np.array_equal(rebuilt.lexical.scores("search files"), scratch.lexical.scores("search files"))
    finally:
        store.close()
