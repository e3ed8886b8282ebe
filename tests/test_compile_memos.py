"""What a compile keeps for the next one (jit.selection.compiler, jit.selection.steps): kept per
snapshot, it is redone when the catalog changes; kept per task text, it depends on nothing else.

Real SQLite catalogs and the real compiler; the hashing embedder stands in for the model (what is
checked is what each compile sees, not a ranking)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from compiler_fixtures import build_store, write_config
from conftest import HashingEmbedder

from jit.analysis.analyze import analyze_pending
from jit.analysis.offline_analyzer import OfflineAnalyzer
from jit.catalog.embedding_pass import embed_pending
from jit.catalog.store import Store
from jit.models import ServerStatus, ToolDef
from jit.selection.compiler import Compiler
from jit.selection.retrieve import task_pieces
from jit.selection.naming import ServerNames, named_servers
from jit.selection.steps import FILE_STEP, task_steps
from jit.selection.task import TaskContext
from jit.selection.tiers import Tier
from jit.selection.tokens import EstimateCounter

DOCS = ToolDef(server="docs", name="query-docs", description="Query the documentation of a library by its library ID.",
               input_schema={"type": "object", "properties": {"libraryId": {"type": "string"},
                                                              "query": {"type": "string"}},
                             "required": ["libraryId", "query"]})
RESOLVE = ToolDef(server="docs", name="resolve-library-id",
                  description="Resolve a package name to the library ID the documentation is queried by.",
                  input_schema={"type": "object", "properties": {"libraryName": {"type": "string"}},
                                "required": ["libraryName"]})
TASK = "Query the documentation of the httpx library"


#: Another server's tools: what the docs' tools are ranked against.
OTHERS = [ToolDef(server="weather", name=name, description=text, input_schema={"type": "object", "properties": {}})
          for name, text in (("forecast", "The weather forecast for a city."),
                             ("alerts", "Severe weather alerts of a region."))]


def _sync(store: Store, config, embedder, tools: list[ToolDef]) -> None:
    for server, defs in (("weather", OTHERS), ("docs", tools)):
        store.ensure_server(server, "stdio")
        store.sync_tools(server, defs)
        store.set_server_status(server, ServerStatus.CONNECTED)
    embed_pending(store, embedder)
    analyze_pending(store, OfflineAnalyzer(config.shards))


def test_a_producer_added_after_a_compile_feeds_the_next_compile(tmp_path, hashing_embedder):
    """A tool's producers are kept in the snapshot's memo: a producer synced after the first compile
    is in the next one, on the snapshot the sync makes."""
    config = write_config(tmp_path)
    with Store(tmp_path / "catalog.db") as store:
        _sync(store, config, hashing_embedder, [DOCS])
        with Compiler(store, config, hashing_embedder, token_counter=EstimateCounter()) as compiler:
            first = {s.name: s for s in compiler.compile(TaskContext(shard="researcher", task=TASK)).tools}
            assert first["docs__query-docs"].step == TASK  # its producers were asked: it has none yet
            _sync(store, config, hashing_embedder, [DOCS, RESOLVE])
            second = {s.name: s for s in compiler.compile(TaskContext(shard="researcher", task=TASK)).tools}
    resolve = second["docs__resolve-library-id"]
    assert resolve.tier is Tier.FULL and resolve.step == "the identifier docs__query-docs needs"


class _Counting(HashingEmbedder):
    """The stand-in model, keeping every text it was asked to embed."""

    def __init__(self) -> None:
        super().__init__()
        self.texts: list[str] = []

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        self.texts += texts
        return super().embed(texts)


def test_a_step_the_policys_file_tool_does_is_not_embedded(tmp_path, hashing_embedder):
    """The vectors of a compile are those of the task and of its steps but one the policy's file
    tool does: a write to a file the task names (rules/policy.dl, file_step)."""
    config = write_config(tmp_path)
    task = "Summarize the open issues of acme/web and write the summary to notes.md"
    steps = task_steps(task, config.shards)
    file_step = next(s for s in steps if s.by == FILE_STEP)
    counting = _Counting()
    store = build_store(tmp_path / "catalog.db", config, hashing_embedder)
    try:
        with Compiler(store, config, counting, token_counter=EstimateCounter()) as compiler:
            compiler.compile(TaskContext(shard="coder", task=task))
    finally:
        store.close()
    assert file_step.query not in counting.texts
    assert any(s.query in counting.texts for s in steps if not s.by)


def test_the_servers_within_a_task_are_those_its_clauses_name():
    """:meth:`ServerNames.within` keeps every server whose first word the task holds: the clauses a
    task is split into, joined as the steps join them, name the same servers through it as through
    the whole catalog."""
    servers = ServerNames(["notion", "google-calendar", "google-drive", "Sentry", "trello", "context7"])
    for task in ("Find the Q3 plan in Notion, then book it in Google Calendar and tell Trello",
                 "search Context7 for httpx; then open the Google Drive folder",
                 "Ask Sentry, and Trello"):
        said = servers.within(task)
        assert set(said.by_word) <= set(servers.by_word)
        pieces = list(task_pieces(task))
        for text in (task, " ".join(pieces), ", ".join(pieces)):
            assert named_servers(text, said) == named_servers(text, servers)
    assert not servers.within("nothing here").by_word


def test_the_reading_of_a_task_is_kept_by_its_text_and_files(tmp_path, hashing_embedder):
    """The same task for another shard reuses the reading of its text; the same task with a file
    named is another text, read anew."""
    config = write_config(tmp_path)
    store = build_store(tmp_path / "catalog.db", config, hashing_embedder)
    try:
        with Compiler(store, config, hashing_embedder, token_counter=EstimateCounter()) as compiler:
            task = "Fix the failing test, then open an issue"
            a = compiler.compile(TaskContext(shard="coder", task=task))
            b = compiler.compile(TaskContext(shard="tester", task=task))
            c = compiler.compile(TaskContext(shard="coder", task=task, files=("src/parser.py",)))
            kept = dict(compiler._tasks)
    finally:
        store.close()
    assert set(kept) == {(task, task), (task, f"{task} parser.py")}
    assert a.task_facts["shard"] == ["coder"] and b.task_facts["shard"] == ["tester"]
    assert "/python" in c.task_facts.get("domain", []) and "/python" not in a.task_facts.get("domain", [])


def test_the_shards_spawned_for_one_task_share_its_scan_until_the_catalog_changes(tmp_path, hashing_embedder,
                                                                                   monkeypatch):
    """One pass over the vectors serves every shard compiled for a task on one snapshot; a tool
    synced after it is scored by the next compile of the same task (a new snapshot, a new scan)."""
    import jit.selection.retrieve as retrieve

    products: list[tuple[int, int]] = []
    real = retrieve.matrix_product
    monkeypatch.setattr(retrieve, "matrix_product", lambda m, r: products.append(m.shape) or real(m, r))
    config = write_config(tmp_path)
    task = "Forecast the weather in Lisbon for the week"
    with Store(tmp_path / "catalog.db") as store:
        _sync(store, config, hashing_embedder, [DOCS])
        with Compiler(store, config, hashing_embedder, token_counter=EstimateCounter()) as compiler:
            compiler.compile(TaskContext(shard="researcher", task=task))
            compiler.compile(TaskContext(shard="coder", task=task))
            assert len(products) == 1
            lisbon = ToolDef(server="docs", name="lisbon_weather", description="Forecast the weather in Lisbon.",
                             input_schema={"type": "object", "properties": {}})
            _sync(store, config, hashing_embedder, [DOCS, lisbon])
            after = {s.name: s for s in compiler.compile(TaskContext(shard="tester", task=task)).tools}
    assert len(products) == 2 and products[1][0] == products[0][0] + 1
    assert after["docs__lisbon_weather"].match > 0


def test_a_tool_call_between_two_shards_keeps_the_tasks_scan(tmp_path, hashing_embedder, monkeypatch):
    """A call changes usage, not vectors or definitions: the snapshot built after it keeps the
    scans and the producers of the one before, so the next shard of the task does no matrix pass."""
    import jit.selection.retrieve as retrieve

    products: list[tuple[int, int]] = []
    real = retrieve.matrix_product
    monkeypatch.setattr(retrieve, "matrix_product", lambda m, r: products.append(m.shape) or real(m, r))
    config = write_config(tmp_path)
    with Store(tmp_path / "catalog.db") as store:
        _sync(store, config, hashing_embedder, [DOCS, RESOLVE])
        with Compiler(store, config, hashing_embedder, token_counter=EstimateCounter()) as compiler:
            first = compiler.compile(TaskContext(shard="researcher", task=TASK))
            store.record_call("weather", "forecast", ok=True, latency_ms=3.0)
            second = compiler.compile(TaskContext(shard="coder", task=TASK))
            view = compiler.catalog.snapshot()
    assert len(products) == 1
    assert view.memo.producers, "the producers found for the first shard are kept"
    tier = {s.name: s.tier for s in second.tools}
    assert {s.name: s.tier for s in first.tools}["docs__resolve-library-id"] == tier["docs__resolve-library-id"]


def test_a_scan_too_wide_to_keep_is_scanned_again(tmp_path, hashing_embedder, monkeypatch):
    """A scan over :data:`SCAN_BYTES_KEPT` (a task of hundreds of steps) is not held by the
    snapshot: each shard of the task scans again, and the memo stays empty."""
    import jit.selection.compiler as compiler_module
    import jit.selection.retrieve as retrieve

    products: list[tuple[int, int]] = []
    real = retrieve.matrix_product
    monkeypatch.setattr(retrieve, "matrix_product", lambda m, r: products.append(m.shape) or real(m, r))
    monkeypatch.setattr(compiler_module, "SCAN_BYTES_KEPT", 0)
    config = write_config(tmp_path)
    with Store(tmp_path / "catalog.db") as store:
        _sync(store, config, hashing_embedder, [DOCS])
        with Compiler(store, config, hashing_embedder, token_counter=EstimateCounter()) as compiler:
            for shard in ("researcher", "coder"):
                compiler.compile(TaskContext(shard=shard, task=TASK))
            assert not compiler.catalog.snapshot().memo.scans
    assert len(products) == 2
