"""The compiled view on disk (jit/selection/viewfile.py) and definitions read on demand
(jit/selection/records.py): a new compiler loads what another derived and selects exactly
as one that derived it itself; a catalog changed since is brought up to date from the file;
a damaged file is rebuilt; a definition that changes under a compile makes it start over."""

from __future__ import annotations

import logging
import shutil
import subprocess
import sys
import threading
from dataclasses import replace

import pytest
from compiler_fixtures import CATALOG, build_store, write_config

from jit.analysis.analyze import effective_tool
from jit.catalog.store import Store
from jit.models import ToolDef
from jit.selection import compiler as compiler_module
from jit.selection import records
from jit.selection.budget import fit_budget
from jit.selection.catalog_view import CatalogView
from jit.selection.compiler import Compiler
from jit.selection.indexcache import IndexCache
from jit.selection.render import tool_summary
from jit.selection.task import TaskContext
from jit.selection.tiers import Tier
from jit.selection.tokens import EstimateCounter
from jit.selection.viewfile import ViewFiles

TASK = "Fix the failing unit test in parser.py, then open a GitHub issue describing the bug"
SHARDS = ("coder", "tester", "reviewer", "researcher")


def selections(store, config, embedder) -> dict[str, object]:
    """Every shard's selection for TASK, as a harness would see it, from a new compiler."""
    with Compiler(store, config, embedder, token_counter=EstimateCounter()) as compiler:
        out: dict[str, object] = {}
        for shard in SHARDS:
            ts = compiler.compile(TaskContext(shard=shard, task=TASK))
            out[shard] = ([(s.name, s.tier, s.logic, s.vector, s.final, s.reasons) for s in ts.tools],
                          ts.render("anthropic"), ts.tokens_used)
        return out


def view_files(store) -> list:
    return sorted(ViewFiles(store.path).directory.glob("*.view"))


def no_build(monkeypatch) -> None:
    monkeypatch.setattr(CatalogView, "_build", lambda *a: pytest.fail("built from the catalog"))


def test_a_new_compiler_loads_the_view_and_selects_the_same(tmp_path, embedder, monkeypatch):
    config = write_config(tmp_path)
    store = build_store(tmp_path / "own.db", config, embedder)
    try:
        built = selections(store, config, embedder)
        assert len(view_files(store)) == 1
        read: list[object] = []
        tool_records = store.tool_records
        monkeypatch.setattr(store, "tool_records", lambda ids=None: read.append(ids) or tool_records(ids))
        with monkeypatch.context() as m:
            no_build(m)
            loaded = selections(store, config, embedder)
        assert loaded == built
        # Only the candidates' definitions were read, never the whole catalog.
        assert read and None not in read
    finally:
        store.close()


def test_a_view_says_whether_a_file_of_its_catalog_config_and_rules_is_kept(tmp_path, embedder):
    """``view_file_kept``: the benchmark's first compiles load the view when it holds, and build it
    from the catalog when not (after a change of the rules or of a setting the view depends on, the
    file of the one before is another's)."""
    config = write_config(tmp_path)
    store = build_store(tmp_path / "own.db", config, embedder)
    try:
        with Compiler(store, config, embedder, token_counter=EstimateCounter()) as compiler:
            assert not compiler.catalog.view_file_kept
            compiler.prepare()
            assert compiler.catalog.view_file_kept
        with Compiler(store, config, embedder, token_counter=EstimateCounter()) as compiler:
            assert compiler.catalog.view_file_kept
        pinned = not config.security.pin_definitions  # a setting the view depends on
        other = replace(config, security=config.security.model_copy(update={"pin_definitions": pinned}))
        with Compiler(store, other, embedder, token_counter=EstimateCounter()) as compiler:
            assert not compiler.catalog.view_file_kept
    finally:
        store.close()


def test_the_view_file_keeps_every_condensed_line_so_the_budget_reads_no_definition_for_one(
        tmp_path, embedder, monkeypatch):
    """The build derives each tool's Condensed line while it has the definition; the file keeps it,
    and a new compiler's budget measures a line without reading the definition behind it."""
    config = write_config(tmp_path)
    store = build_store(tmp_path / "own.db", config, embedder)
    try:
        with Compiler(store, config, embedder, token_counter=EstimateCounter()) as compiler:
            compiler.prepare()
        (path,) = view_files(store)
        saved = ViewFiles(store.path).load(path.stem)
        tools = store.tools()
        assert saved is not None and set(saved.summaries) == {st.id for st in tools}
        for st in tools:
            analysis = effective_tool(st, config.available_tools, shards=config.shards).analysis
            assert saved.summaries[st.id] == tool_summary(st, analysis)

        monkeypatch.setattr(records, "READ_BATCH", 1)  # no read-ahead: each read is one the compile needed
        fitting: list[bool] = []
        read_fitting: list[int] = []
        tool_records = store.tool_records

        def counted(ids=None):
            if fitting:
                read_fitting.extend(ids or ())
            return tool_records(ids)

        def fit(*args, **kwargs):
            fitting.append(True)
            try:
                return fit_budget(*args, **kwargs)
            finally:
                fitting.clear()

        monkeypatch.setattr(store, "tool_records", counted)
        monkeypatch.setattr(compiler_module, "fit_budget", fit)
        with monkeypatch.context() as m:
            no_build(m)
            with Compiler(store, config, embedder, token_counter=EstimateCounter()) as compiler:
                ts = compiler.compile(TaskContext(shard="coder", task=TASK, budget=100_000))
        lines = [s for s in ts.tools if s.tier is Tier.CONDENSED]
        assert lines and all(s.summary == saved.summaries[s.id] for s in lines)
        # The budget measured those lines without reading a definition (it reads one to measure a
        # tool Full; the Full tier's caps had measured those before).
        by_id = {s.id: s for s in ts.tools}
        assert all(by_id[i].wanted is Tier.FULL for i in read_fitting)
    finally:
        store.close()


def test_prepare_keeps_every_shard_s_tables_so_a_new_compiler_asks_the_rules_none(tmp_path, embedder, monkeypatch):
    """``jit sync`` prepares the view: each configured shard's points, skeleton slots and denials
    go into the file, and a new process compiles for any shard without asking the rules for them
    (0.1-0.3 s a shard at 10,000 tools), selecting exactly what a compiler that asked selects."""
    from jit.selection.fact_classes import Classes

    config = write_config(tmp_path)
    store = build_store(tmp_path / "own.db", config, embedder)
    try:
        asked = selections(store, config, embedder)  # no file yet: every table asked of the rules
        with Compiler(store, config, embedder, token_counter=EstimateCounter()) as compiler:
            compiler.prepare()
        with monkeypatch.context() as m:
            no_build(m)
            rows_for = Classes.rows_for

            def tool_rows_only(self, k, shard, cids):  # the per-tool tables are still asked at load
                assert shard is None, f"asked the rules for {shard}'s tables"
                return rows_for(self, k, shard, cids)

            m.setattr(Classes, "rows_for", tool_rows_only)
            with Compiler(store, config, embedder, token_counter=EstimateCounter()) as compiler:
                snap = compiler.catalog.snapshot()
                assert set(snap.memo.shards) == set(config.shards)
            assert selections(store, config, embedder) == asked
        # A catalog changed after the file: the loaded tables are brought up to date with it.
        defs = [ToolDef(server="fs", name=n, description=d, input_schema=sch) for n, d, sch, _ in CATALOG["fs"][1]]
        store.sync_tools("fs", defs[1:])
        changed = selections(store, config, embedder)
        for path in view_files(store):
            path.unlink()
        assert selections(store, config, embedder) == changed
    finally:
        store.close()


def test_a_catalog_changed_since_the_file_is_brought_up_to_date(tmp_path, embedder, monkeypatch):
    config = write_config(tmp_path)
    store = build_store(tmp_path / "own.db", config, embedder)
    try:
        selections(store, config, embedder)
        defs = [ToolDef(server="fs", name=n, description=d + (" Now also in bulk." if n == "notes" else ""),
                        input_schema=sch) for n, d, sch, _ in CATALOG["fs"][1]]
        store.sync_tools("fs", defs)
        states: list[int] = []
        build = CatalogView._build
        monkeypatch.setattr(CatalogView, "_build",
                            lambda self, prev, *a: states.append(prev is not None) or build(self, prev, *a))
        updated = selections(store, config, embedder)
        assert states == [True]  # built from the loaded file, not from nothing
        for path in view_files(store):
            path.unlink()
        states.clear()
        assert selections(store, config, embedder) == updated and states == [False]
    finally:
        store.close()


def test_a_damaged_view_file_is_rebuilt(tmp_path, embedder, caplog):
    config = write_config(tmp_path)
    store = build_store(tmp_path / "own.db", config, embedder)
    try:
        built = selections(store, config, embedder)
        (path,) = view_files(store)
        for damage in (path.read_bytes()[:200], b'{"format": 1, "key": "x"}', b"\x00\xff"):
            path.write_bytes(damage)
            caplog.clear()
            with caplog.at_level(logging.WARNING, logger="jit.selection.viewfile"):
                assert selections(store, config, embedder) == built
            assert "unreadable compiled view" in caplog.text
        assert view_files(store) == [path] and path.read_bytes()[:2] == b"PK"  # written again
    finally:
        store.close()


def test_other_rules_or_another_catalog_never_read_a_view(tmp_path, embedder, monkeypatch):
    config = write_config(tmp_path)
    store = build_store(tmp_path / "own.db", config, embedder)
    try:
        selections(store, config, embedder)
        # Edited rules: another key, built from the catalog.
        rules = tmp_path / "edited_rules"
        shutil.copytree(config.rules_dir, rules)
        (rules / "zz_extra.dl").write_text("# a comment changes the fingerprint\n")
        edited = replace(config, rules_dir=rules)
        selections(store, edited, embedder)
        assert len(view_files(store)) == 2
        # Another catalog at the same path (same versions, another identity) never reads them.
        other = build_store(tmp_path / "other.db", config, embedder)
        other.close()
        store.close()
        for suffix in ("", "-wal", "-shm"):
            (tmp_path / f"own.db{suffix}").unlink(missing_ok=True)
            src = tmp_path / f"other.db{suffix}"
            if src.exists():
                shutil.copy(src, tmp_path / f"own.db{suffix}")
        store = Store(tmp_path / "own.db")
        with monkeypatch.context() as m:
            built: list[bool] = []
            build = CatalogView._build
            m.setattr(CatalogView, "_build", lambda self, prev, *a: built.append(prev is None) or build(self, prev, *a))
            selections(store, config, embedder)
        assert built == [True]
    finally:
        store.close()


def test_a_definition_changed_under_a_compile_makes_it_start_over(tmp_path, embedder, monkeypatch):
    config = write_config(tmp_path)
    store = build_store(tmp_path / "own.db", config, embedder)
    try:
        with Compiler(store, config, embedder, token_counter=EstimateCounter()) as compiler:
            compiler.catalog.snapshot()  # taken before the change; no definition read yet
            tool_records = store.tool_records
            raced: list[bool] = []

            def sync_first(ids=None):
                if ids is not None and not raced:  # the first definitions a compile reads
                    raced.append(True)
                    store.sync_tools("fs", [ToolDef(server="fs", name=n, description=d + " Now also in bulk.",
                                                    input_schema=sch) for n, d, sch, _ in CATALOG["fs"][1]])
                return tool_records(ids)

            monkeypatch.setattr(store, "tool_records", sync_first)
            ts = compiler.compile(TaskContext(shard="coder", task=TASK))
        assert raced
        fs = [s for s in ts.tools if s.tool.tool.server == "fs"]
        assert fs and all("bulk" in s.tool.tool.description for s in fs)
        assert ts.catalog_version == store.catalog_version()
    finally:
        store.close()


def test_a_compile_after_a_change_does_not_wait_for_the_files_it_leaves_and_close_does(
        tmp_path, embedder, monkeypatch):
    """The view and index files are for the next process: written on the view's own thread, the
    compile that found the catalog changed returns before them; close() waits for them."""
    config = write_config(tmp_path)
    store = build_store(tmp_path / "own.db", config, embedder)
    gate, writing = threading.Event(), threading.Event()
    save = ViewFiles.save

    def held(self, key, view):
        writing.set()
        assert gate.wait(60), "the test never let the write go"
        save(self, key, view)

    def on_disk() -> int:
        (path,) = view_files(store)
        saved = ViewFiles(store.path).load(path.stem)
        assert saved is not None
        return saved.version

    try:
        with Compiler(store, config, embedder, token_counter=EstimateCounter()) as compiler:
            compiler.prepare()  # `jit sync`'s call: it returns with the files written
            before = on_disk()
            assert before == store.catalog_version()
            store.sync_tools("fs", [ToolDef(server="fs", name=n, description=d + " Now also in bulk.",
                                            input_schema=sch) for n, d, sch, _ in CATALOG["fs"][1]])
            monkeypatch.setattr(ViewFiles, "save", held)
            ts = compiler.compile(TaskContext(shard="coder", task=TASK))
            assert ts.catalog_version == store.catalog_version() != before
            assert writing.wait(60)  # the new view is being written, held, and the compile has returned
            assert on_disk() == before
            gate.set()
        assert on_disk() == store.catalog_version()
    finally:
        gate.set()
        store.close()


_EXIT_WITHOUT_CLOSE = """
import sys
from jit.catalog.store import Store
from jit.config_files import load_config
from jit.selection.compiler import Compiler
from jit.selection.task import TaskContext


class Named:
    '''The catalog's model by name only: a compile with no task embeds nothing.'''
    model_name, dimension = sys.argv[3], 384

    def embed(self, texts):
        raise AssertionError("nothing to embed")


compiler = Compiler(Store(sys.argv[1]), load_config(sys.argv[2]), Named())
assert compiler.compile(TaskContext(shard="coder", task="")).tools
print("compiled")  # and exits without closing the compiler
"""


def test_a_process_that_exits_without_closing_its_compiler_still_leaves_its_files(tmp_path, embedder):
    config = write_config(tmp_path)
    store = build_store(tmp_path / "own.db", config, embedder)
    store.close()
    done = subprocess.run([sys.executable, "-c", _EXIT_WITHOUT_CLOSE, str(tmp_path / "own.db"),
                           str(tmp_path / "config.json"), embedder.model_name],
                          capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "compiled"
    store = Store(tmp_path / "own.db")
    try:
        (path,) = view_files(store)
        saved = ViewFiles(store.path).load(path.stem)
        assert saved is not None and saved.version == store.catalog_version()
        assert IndexCache(store.path).load(saved.index_key, [saved.heads[i] for i in saved.ids.tolist()]) is not None
    finally:
        store.close()
