"""A compile reads definitions (the catalog's JSON rows) only for the candidates it renders (and for the
tools tied for a skeleton slot, whose lengths break the tie: tests/test_skeleton_slots.py; none in this catalog).

Counted through the real store (SQLite) on the fixture catalog, no timing. The candidates left
Excluded are read when someone asks for them, and a tool that changed meanwhile is read as the
catalog holds it now; a change that lands during a compile still makes it start over."""

from __future__ import annotations

import pytest
from compiler_fixtures import CATALOG, build_store, write_config

from jit.errors import ToolNotFoundError
from jit.models import ToolDef
from jit.selection import records
from jit.selection.compiler import Compiler
from jit.selection.task import TaskContext
from jit.selection.tiers import Tier
from jit.selection.tokens import EstimateCounter

TASK = "Fix the failing unit test in parser.py, then open a GitHub issue describing the bug"


@pytest.fixture
def catalog(tmp_path, embedder):
    config = write_config(tmp_path)
    store = build_store(tmp_path / "catalog.db", config, embedder)
    yield config, store
    store.close()


def _count_reads(store, monkeypatch) -> list[set[int] | None]:
    """Every ``tool_records`` call's ids, in order (None: all tools)."""
    reads: list[set[int] | None] = []
    tool_records = store.tool_records
    monkeypatch.setattr(store, "tool_records",
                        lambda ids=None: reads.append(None if ids is None else set(ids)) or tool_records(ids))
    return reads


def _server_defs(server: str, name: str, description: str | None) -> list[ToolDef]:
    """The fixture's tools of ``server``, ``name`` with another description (None: without it)."""
    out = []
    for n, d, schema, _ in CATALOG[server][1]:
        if n == name:
            if description is None:
                continue
            d = description
        out.append(ToolDef(server=server, name=n, description=d, input_schema=schema))
    return out


def test_a_compile_reads_definitions_only_for_rendered_candidates(catalog, embedder, monkeypatch):
    config, store = catalog
    monkeypatch.setattr(records, "READ_BATCH", 1)  # no read-ahead: each read is a tool the compile needed
    with Compiler(store, config, embedder, token_counter=EstimateCounter()) as compiler:
        compiler.prepare()
        reads = _count_reads(store, monkeypatch)
        # A budget of 250 tokens: the skeleton and the best few fit, and some candidates that the
        # thresholds would render are excluded by the budget.
        ts = compiler.compile(TaskContext(shard="coder", task=TASK, budget=250))
        rendered = {s.id for s in ts.tools if s.tier is not Tier.EXCLUDED}
        excluded = {s.id for s in ts.tools if s.tier is Tier.EXCLUDED}
        read = set().union(*reads)
        assert None not in reads and excluded and rendered
        # Every rendered candidate was read (once); of the excluded, only those the budget measured at
        # Full or Condensed before excluding them (none is measured at Minimal: a name needs no read).
        assert rendered <= read and sum(len(r) for r in reads) == len(read)
        measured = {s.id for s in ts.tools if s.tier is Tier.EXCLUDED and s.wanted is not Tier.EXCLUDED
                    and any("token budget" in r for r in s.reasons)}
        assert read - rendered <= measured
        assert len(read) < len(ts.tools)

        # A second task on the same snapshot reads no definition the first one read.
        reads.clear()
        again = compiler.compile(TaskContext(shard="coder", task=TASK, budget=250))
        assert not (set().union(*reads) & read)
        assert [(s.name, s.tier) for s in again.tools] == [(s.name, s.tier) for s in ts.tools]

        # An excluded candidate's definition, summary and facts are there when asked for: all the
        # unread ones in one read, the same as the catalog's.
        reads.clear()
        unread = [s for s in ts.tools if not s.loaded]
        assert unread and reads == []
        by_id = {st.id: st for st in store.tools()}
        first = unread[0]
        assert first.tool == by_id[first.id] and first.summary and first.facts["server_status"]
        assert reads == [{s.id for s in unread}]
        assert all(s.tool == by_id[s.id] and (s.server, s.tool_name) == (s.tool.tool.server, s.tool.tool.name)
                   for s in unread)
        assert len(ts.explain()) == len(ts.tools) and reads == [{s.id for s in unread}]


def test_a_full_budget_reads_exactly_what_it_renders(catalog, embedder, monkeypatch):
    config, store = catalog
    monkeypatch.setattr(records, "READ_BATCH", 1)
    with Compiler(store, config, embedder, token_counter=EstimateCounter()) as compiler:
        compiler.prepare()
        reads = _count_reads(store, monkeypatch)
        ts = compiler.compile(TaskContext(shard="coder", task=TASK, budget=100_000))
        assert {s.id for s in ts.tools if s.tier is not Tier.EXCLUDED} == set().union(*reads)
        assert any(s.tier is Tier.EXCLUDED for s in ts.tools)


def test_an_excluded_tool_changed_after_the_compile_reads_as_the_catalog_holds_it(catalog, embedder, monkeypatch):
    config, store = catalog
    monkeypatch.setattr(records, "READ_BATCH", 1)  # a small catalog: the default batch would read it all
    with Compiler(store, config, embedder, token_counter=EstimateCounter()) as compiler:
        ts = compiler.compile(TaskContext(shard="coder", task=TASK, budget=250))
        unread = [s for s in ts.tools if s.tier is Tier.EXCLUDED and not s.loaded and s.server in CATALOG]
        changed, gone = unread[0], next(s for s in unread if s.server != unread[0].server)
        store.sync_tools(changed.server, _server_defs(changed.server, changed.tool_name, "Now also in bulk."))
        store.sync_tools(gone.server, _server_defs(gone.server, gone.tool_name, None))
        # The changed tool reads as it is now; the one that left says so when (only when) asked for.
        assert changed.tool.tool.description == "Now also in bulk." and "bulk" in changed.summary
        with pytest.raises(ToolNotFoundError, match="left the catalog"):
            gone.tool  # noqa: B018 (the read is the point)
        assert all(s.loaded for s in unread if s is not gone)


def test_a_change_during_the_compile_still_compiles_again(catalog, embedder, monkeypatch):
    """A definition read mid-compile that changed since the snapshot: the compile starts over on
    the newer snapshot and renders the new definition."""
    config, store = catalog
    with Compiler(store, config, embedder, token_counter=EstimateCounter()) as compiler:
        compiler.prepare()
        tool_records = store.tool_records
        changed: list[bool] = []

        def racing(ids=None):
            if not changed and ids is not None:  # the compile's first read of definitions: a sync lands first
                changed.append(True)
                defs = [ToolDef(server=d.server, name=d.name, description=d.description + " Revised.",
                                input_schema=d.input_schema) for d in _server_defs("fs", "", None)]
                store.sync_tools("fs", defs)
            return tool_records(ids)

        monkeypatch.setattr(store, "tool_records", racing)
        before = store.catalog_version()
        ts = compiler.compile(TaskContext(shard="coder", task=TASK))
        assert changed and ts.catalog_version > before
        fs = [s for s in ts.tools if s.server == "fs" and s.tier is not Tier.EXCLUDED]
        assert fs and all(s.loaded and s.tool.tool.description.endswith("Revised.") for s in fs)
