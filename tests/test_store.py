"""The catalog on real SQLite with sqlite-vec, and the same tests on a real PostgreSQL.

Tests taking ``store`` run on both backends (``any_store``, tests/conftest.py);
SQLite's own (WAL, sqlite-vec, its migration files) take ``sqlite_store`` or a path.
PostgreSQL's own behaviour (migrations, several hosts) is in tests/test_store_postgres.py.
"""

from __future__ import annotations

import shutil
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from jit.catalog.embedding_pass import embed_pending
from jit.catalog.migrations import default_migrations_dir
from jit.catalog.store import Store
from jit.errors import MigrationError, StoreError
from jit.models import ServerStatus, ToolAnalysis, ToolDef


class RecordingEmbedder:
    """Wraps an embedder (the model, or its deterministic stand-in) and records every text it is asked to embed."""

    def __init__(self, inner, model_name: str | None = None, dims: int | None = None) -> None:
        self.inner = inner
        self._name = model_name or inner.model_name
        self._dims = dims
        self.seen: list[str] = []

    @property
    def model_name(self) -> str:
        return self._name

    @property
    def dimension(self) -> int:
        return self._dims or self.inner.dimension

    def embed(self, texts):
        self.seen.extend(texts)
        vecs = self.inner.embed(texts)
        if self._dims:
            # A different "model": the first dims components, renormalised.
            vecs = vecs[:, : self._dims]
            vecs = vecs / np.linalg.norm(vecs, axis=1, keepdims=True)
        return vecs


@pytest.fixture
def store(any_store):
    return any_store


@pytest.fixture
def sqlite_store(tmp_path):
    with Store(tmp_path / "catalog.db") as s:
        yield s


def _tool(name: str, description: str, server: str = "files", **props: str) -> ToolDef:
    schema = {"type": "object", "properties": {k: {"type": "string", "description": v} for k, v in props.items()}}
    return ToolDef(server=server, name=name, description=description, input_schema=schema)


TOOLS = [
    _tool("read_file", "Read a text file and return its contents.", path="Path of the file"),
    _tool("write_file", "Write text to a file, replacing it.", path="Path of the file", content="Text"),
    _tool("search_web", "Search the web for pages matching a query.", query="Search words"),
    _tool("get_weather", "Current weather for a city.", city="City name"),
]


def _migrations_copy(tmp_path: Path) -> tuple[Path, int]:
    """A copy of the real migrations and the next free version number."""
    d = tmp_path / "migrations"
    shutil.copytree(default_migrations_dir(), d)
    return d, max(int(p.name[:4]) for p in d.glob("*.sql")) + 1


def test_migrations_apply_in_order_and_are_idempotent(tmp_path):
    mdir, n = _migrations_copy(tmp_path)
    (mdir / f"{n:04d}_notes.sql").write_text("CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT) STRICT;")
    (mdir / f"{n + 1:04d}_notes_index.sql").write_text("CREATE INDEX notes_body ON notes(body);")
    db = tmp_path / "c.db"
    with Store(db, migrations_dir=mdir) as s:
        assert sorted(s.applied_migrations()) == list(range(1, n + 2))
        assert s.pending_migrations() == []
    with Store(db, migrations_dir=mdir) as s:
        assert s.migrate() == []  # nothing applied twice
        applied = s.applied_migrations()
        assert (applied[1], applied[n], applied[n + 1]) == ("catalog", "notes", "notes_index")


def test_failed_migration_rolls_back_everything_it_did(tmp_path):
    mdir, n = _migrations_copy(tmp_path)
    broken = mdir / f"{n:04d}_broken.sql"
    broken.write_text("CREATE TABLE half_done (x INTEGER);\nINSERT INTO half_done VALUES (1);\nCREATE TABLEE oops (y);")
    db = tmp_path / "c.db"
    with pytest.raises(MigrationError, match=broken.name):
        Store(db, migrations_dir=mdir)
    with Store(db, migrations_dir=mdir, migrate=False) as s:
        assert sorted(s.applied_migrations()) == list(range(1, n))
        assert not s._query("SELECT name FROM sqlite_master WHERE name = 'half_done'")
    # Fixed, it applies on the next open.
    broken.write_text("CREATE TABLE half_done (x INTEGER);")
    with Store(db, migrations_dir=mdir) as s:
        assert n in s.applied_migrations()


def test_an_applied_migration_edited_afterwards_is_refused_at_open(tmp_path):
    mdir, n = _migrations_copy(tmp_path)
    notes = mdir / f"{n:04d}_notes.sql"
    notes.write_text("CREATE TABLE notes (id INTEGER PRIMARY KEY) STRICT;")
    db = tmp_path / "c.db"
    Store(db, migrations_dir=mdir).close()
    # The catalog ran the old text: the new column would exist only in new catalogs.
    notes.write_text("CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT) STRICT;")
    for migrate in (True, False):
        with pytest.raises(MigrationError, match=rf"migration {notes.name} differs from the one this catalog ran"
                           r".*must not be edited") as caught:
            Store(db, migrations_dir=mdir, migrate=migrate)
        assert caught.value.details["migration"] == str(notes)
    # A file renamed under the same version is not the migration that ran either.
    notes.write_text("CREATE TABLE notes (id INTEGER PRIMARY KEY) STRICT;")
    notes.rename(mdir / f"{n:04d}_memos.sql")
    with pytest.raises(MigrationError, match=rf"{n:04d}_memos.sql differs.*recorded as {n:04d}_notes.sql"):
        Store(db, migrations_dir=mdir)
    # Restored, the catalog opens, and the shipped files match what it ran.
    (mdir / f"{n:04d}_memos.sql").rename(notes)
    with Store(db, migrations_dir=mdir) as s:
        s.check_migrations()
        assert n in s.applied_migrations()


def test_the_unread_fts_table_is_dropped_by_a_migration(tmp_path):
    old = tmp_path / "old"
    old.mkdir()
    for p in sorted(default_migrations_dir().glob("000[1-4]_*.sql")):
        shutil.copy(p, old / p.name)
    db = tmp_path / "c.db"
    with Store(db, migrations_dir=old) as s:
        s.ensure_server("files", "stdio")
        s.sync_tools("files", TOOLS)
        assert s._query("SELECT name FROM sqlite_master WHERE name = 'tools_fts'")
    with Store(db) as s:
        assert 5 in s.applied_migrations()
        assert not s._query("SELECT name FROM sqlite_master WHERE name LIKE 'tools_fts%'")
        assert [t.tool.name for t in s.tools("files")] == sorted(t.name for t in TOOLS)


def test_badly_named_migration_is_an_error(tmp_path):
    mdir, _ = _migrations_copy(tmp_path)
    (mdir / "2_whatever.sql").write_text("SELECT 1;")
    with pytest.raises(MigrationError, match="0001_name.sql"):
        Store(tmp_path / "c.db", migrations_dir=mdir)


def test_unopenable_path_is_a_store_error(tmp_path):
    (tmp_path / "adir").mkdir()
    with pytest.raises(StoreError):
        Store(tmp_path / "adir")


def test_store_uses_wal_and_loads_sqlite_vec(sqlite_store):
    assert sqlite_store._query("PRAGMA journal_mode")[0][0] == "wal"
    assert sqlite_store._query("SELECT vec_version()")[0][0].startswith("v")


def test_sync_adds_changes_and_removes_tools(store):
    store.ensure_server("files", "stdio")
    first = store.sync_tools("files", TOOLS)
    assert first.added == sorted(t.name for t in TOOLS) and not first.changed and not first.removed
    again = store.sync_tools("files", TOOLS)
    assert not again.touched and again.unchanged == len(TOOLS)

    reworded = ToolDef(server="files", name="search_web", description="Search the internet.",
                       input_schema=TOOLS[2].input_schema)
    result = store.sync_tools("files", [TOOLS[0], TOOLS[1], reworded])
    assert result.changed == ["search_web"]
    assert result.removed == ["get_weather"]
    assert store.tool("files", "get_weather") is None
    assert [t.tool.name for t in store.tools("files")] == ["read_file", "search_web", "write_file"]


def test_changed_definition_is_marked_for_reanalysis(store):
    store.ensure_server("files", "stdio")
    store.sync_tools("files", TOOLS)
    store.put_analyses((t.definition_hash, ToolAnalysis(categories=("filesystem",))) for t in store.tools())
    assert store.pending_analysis() == []
    new = ToolDef(server="files", name="read_file", description="Read a file (now with line ranges).",
                  input_schema=TOOLS[0].input_schema)
    store.sync_tools("files", [new, *TOOLS[1:]])
    assert [t.tool.name for t in store.pending_analysis()] == ["read_file"]
    # Going back to a definition analyzed before needs no new analysis.
    store.sync_tools("files", TOOLS)
    assert store.pending_analysis() == []


def test_tools_filter_on_approval_and_analysis_in_the_query(store):
    store.ensure_server("files", "stdio")
    store.sync_tools("files", TOOLS)
    store.put_analyses([(store.tool("files", "read_file").definition_hash, ToolAnalysis(categories=("filesystem",)))])
    reworded = replace(TOOLS[2], description="Search the internet.")
    store.sync_tools("files", [*TOOLS[:2], reworded, TOOLS[3]])  # a changed definition awaits approval

    def names(**filters):
        return [t.tool.name for t in store.tools(**filters)]

    assert names(approved=False) == ["search_web"]
    assert names(approved=True) == ["get_weather", "read_file", "write_file"]
    assert names(analyzed=True) == ["read_file"]
    assert names(analyzed=False) == ["get_weather", "search_web", "write_file"]
    assert names(approved=True, analyzed=False) == ["get_weather", "write_file"]
    assert names() == sorted(t.name for t in TOOLS)
    # The filters say what the rows say.
    assert all(not t.approved for t in store.tools(approved=False))
    assert all(t.analysis is not None for t in store.tools(analyzed=True))


def test_resync_of_unchanged_catalog_embeds_nothing(store, hashing_embedder):
    rec = RecordingEmbedder(hashing_embedder)
    store.ensure_server("files", "stdio")
    store.sync_tools("files", TOOLS)
    first = embed_pending(store, rec)
    # The catalog's first model replaces none: nothing is reported as "model changed".
    assert first.embedded == len(TOOLS) and not first.model_changed
    rec.seen.clear()
    store.sync_tools("files", TOOLS)
    again = embed_pending(store, rec)
    assert (again.embedded, again.cached, rec.seen) == (0, 0, [])


def test_changed_description_reembeds_exactly_that_tool(store, hashing_embedder):
    rec = RecordingEmbedder(hashing_embedder)
    store.ensure_server("files", "stdio")
    store.sync_tools("files", TOOLS)
    embed_pending(store, rec)
    rec.seen.clear()
    changed = ToolDef(server="files", name="get_weather", description="Weather forecast for the next days.",
                      input_schema=TOOLS[3].input_schema)
    store.sync_tools("files", [*TOOLS[:3], changed])
    report = embed_pending(store, rec)
    assert report.embedded == 1
    assert rec.seen == [changed.embedding_text()]
    ids, matrix = store.vector_matrix()
    assert len(ids) == len(TOOLS) and matrix.shape == (len(TOOLS), 384)


def test_vector_matrix_gives_ids_ascending_with_their_own_rows_whatever_the_write_order(store, monkeypatch):
    """The matrix is read a batch at a time (here two rows) without ORDER BY: vectors written in
    reverse id order still come back by id, each with its own vector."""
    from jit.catalog import store_vectors

    monkeypatch.setattr(store_vectors, "_READ_BATCH", 2)
    store.ensure_server("files", "stdio")
    store.sync_tools("files", TOOLS)
    store.set_embedding_model("m", 4)
    ids = sorted(st.id for st in store.tools())
    vectors = {i: np.array([i, 1, 2, 3], dtype=np.float32) for i in ids}
    for i in reversed(ids):  # one transaction each: the table's rows in reverse id order
        store.put_vectors("m", [(i, f"h{i}", vectors[i].tobytes())], cache=False)
    got_ids, matrix = store.vector_matrix()
    assert got_ids.tolist() == ids
    assert np.array_equal(matrix, np.stack([vectors[i] for i in ids]))


def test_vector_matrix_of_some_tools_reads_only_theirs(store):
    """A view following a change reads the changed tools' vectors only: asked in any order, with
    repeats, a tool awaiting its vector and an id no tool has, it gives those that have one."""
    store.ensure_server("files", "stdio")
    store.sync_tools("files", TOOLS)
    store.set_embedding_model("m", 4)
    ids = sorted(st.id for st in store.tools())
    store.put_vectors("m", [(i, f"h{i}", np.array([i, 0, 0, 1], dtype=np.float32).tobytes()) for i in ids[1:]],
                      cache=False)
    got_ids, matrix = store.vector_matrix([ids[-1], ids[0], ids[1], ids[-1], 10**9])
    assert got_ids.tolist() == [ids[1], ids[-1]]
    assert matrix.tolist() == [[ids[1], 0, 0, 1], [ids[-1], 0, 0, 1]]
    assert store.vector_matrix([])[0].tolist() == []


@pytest.mark.parametrize("counted", [1, 9])
def test_vector_matrix_holds_the_rows_read_when_the_count_before_them_was_off(sqlite_store, monkeypatch, counted):
    """The count that sizes the matrix is a statement of its own: a writer in between adds rows
    (the matrix grows) or removes some (it is trimmed). Simulated by a count that says ``counted``."""
    from jit.catalog import store_vectors

    monkeypatch.setattr(store_vectors, "_READ_BATCH", 2)
    store = sqlite_store
    store.ensure_server("files", "stdio")
    store.sync_tools("files", TOOLS)
    store.set_embedding_model("m", 4)
    ids = sorted(st.id for st in store.tools())
    store.put_vectors("m", [(i, f"h{i}", np.full(4, i, dtype=np.float32).tobytes()) for i in ids], cache=False)
    real = store._conn

    class Miscounting:
        def execute(self, sql, params=()):
            if sql.startswith("SELECT count(*)"):
                return real.execute("SELECT ?", (counted,))
            return real.execute(sql, params)

    monkeypatch.setattr(store, "_conn", Miscounting())
    got_ids, matrix = store.vector_matrix()
    assert got_ids.tolist() == ids and matrix.shape == (len(ids), 4)
    assert matrix[:, 0].tolist() == [float(i) for i in ids]


def test_tool_record_batches_read_every_tool_once_in_id_order(store):
    store.ensure_server("files", "stdio")
    store.sync_tools("files", TOOLS)
    batches = list(store.tool_record_batches(size=3))
    assert [len(b) for b in batches] == [3, 1]
    ids = [i for b in batches for i in b]
    assert ids == sorted(ids)
    whole = store.tool_records()
    assert {i: (st.tool, state) for b in batches for i, (st, state) in b.items()} == \
        {i: (st.tool, state) for i, (st, state) in whole.items()}


def test_text_already_embedded_is_taken_from_the_cache(store, hashing_embedder):
    rec = RecordingEmbedder(hashing_embedder)
    store.ensure_server("a", "stdio")
    store.ensure_server("b", "stdio")
    store.sync_tools("a", [_tool("ping", "Check the service.", server="a")])
    store.sync_tools("b", [_tool("ping", "Check the service.", server="b")])
    assert embed_pending(store, rec).embedded == 2  # server name is part of the text
    # Remove and re-add: the vector comes back from the cache, not the model.
    store.sync_tools("a", [])
    store.sync_tools("a", [_tool("ping", "Check the service.", server="a")])
    rec.seen.clear()
    report = embed_pending(store, rec)
    assert (report.embedded, report.cached, rec.seen) == (0, 1, [])


def test_changing_the_embedding_model_reembeds_everything(store, hashing_embedder):
    store.ensure_server("files", "stdio")
    store.sync_tools("files", TOOLS)
    embed_pending(store, RecordingEmbedder(hashing_embedder))
    other = RecordingEmbedder(hashing_embedder, model_name="minilm-first-64", dims=64)
    report = embed_pending(store, other)
    assert report.model_changed and report.embedded == len(TOOLS)
    assert store.embedding_model() == ("minilm-first-64", 64)
    ids, matrix = store.vector_matrix()
    assert matrix.shape == (len(TOOLS), 64)


def test_the_vector_matrix_finds_the_right_tool(store, embedder):
    store.ensure_server("files", "stdio")
    store.sync_tools("files", TOOLS)
    embed_pending(store, embedder)
    q = embedder.embed(["what is the temperature in Paris today"])[0]
    ids, matrix = store.vector_matrix()
    best = int(ids[np.argmax(matrix @ q)])
    assert store.tools_by_id([best])[best].tool.name == "get_weather"


def test_server_status_transitions_are_persisted(store):
    store.ensure_server("files", "stdio")
    assert store.server("files").status is ServerStatus.UNKNOWN
    store.set_server_status("files", ServerStatus.CONNECTING)
    store.set_server_status("files", ServerStatus.CONNECTED, server_name="fs", server_version="1.2",
                            capabilities={"tools": {"listChanged": True}})
    rec = store.server("files")
    assert rec.status is ServerStatus.CONNECTED and rec.last_seen and rec.capabilities["tools"]["listChanged"]
    store.set_server_status("files", ServerStatus.DISCONNECTED, error="Connection closed")
    rec = store.server("files")
    assert (rec.status, rec.last_error, rec.server_name) == (ServerStatus.DISCONNECTED, "Connection closed", "fs")
    with pytest.raises(StoreError, match="unknown server"):
        store.set_server_status("nope", ServerStatus.CONNECTED)


def test_offline_server_tools_stay_in_the_catalog(store):
    store.ensure_server("files", "stdio")
    store.set_server_status("files", ServerStatus.CONNECTED)
    store.sync_tools("files", TOOLS)
    store.set_server_status("files", ServerStatus.DISCONNECTED, error="killed")
    offline = store.tools(online=False)
    assert len(offline) == len(TOOLS) and not any(t.online for t in offline)


def test_usage_is_recorded_per_tool(store):
    store.ensure_server("files", "stdio")
    store.sync_tools("files", TOOLS)
    store.record_call("files", "read_file", ok=True, latency_ms=3.0)
    store.record_call("files", "read_file", ok=False, latency_ms=5.0, error="boom")
    u = store.usage("files", "read_file")
    assert (u["calls"], u["errors"], u["total_latency_ms"], u["last_error"]) == (2, 1, 8.0, "boom")
    t = store.tool("files", "read_file")
    assert (t.calls, t.errors) == (2, 1)


def test_calls_move_the_usage_version_and_only_what_they_changed_is_returned(store):
    store.ensure_server("files", "stdio")
    store.sync_tools("files", TOOLS)
    catalog, start = store.catalog_version(), store.usage_version()
    store.record_call("files", "read_file", ok=True, latency_ms=1.0)
    middle = store.usage_version()
    store.record_call("files", "write_file", ok=False, latency_ms=1.0, error="disk full")
    store.record_call("files", "no_such_tool", ok=True, latency_ms=1.0)  # usage of a tool not in the catalog
    assert store.catalog_version() == catalog and store.usage_version() == start + 3
    assert store.versions() == (catalog, start + 3)
    ids = {t.tool.name: t.id for t in store.tools()}
    assert store.usage_since(start) == {ids["read_file"]: (1, 0), ids["write_file"]: (1, 1)}
    assert store.usage_since(middle) == {ids["write_file"]: (1, 1)}
    assert store.usage_since(store.usage_version()) == {}


def test_removing_a_server_removes_its_tools_and_vectors(store, hashing_embedder):
    store.ensure_server("files", "stdio")
    store.sync_tools("files", TOOLS)
    embed_pending(store, hashing_embedder)
    store.remove_server("files")
    assert store.tools() == [] and store.servers() == []
    assert len(store.vector_matrix()[0]) == 0


def test_unchanged_catalog_does_not_load_the_model(store, hashing_embedder):
    store.ensure_server("files", "stdio")
    store.sync_tools("files", TOOLS)
    embed_pending(store, hashing_embedder)

    class Unloadable(RecordingEmbedder):
        @property
        def dimension(self) -> int:
            raise AssertionError("the model was loaded for nothing")

    assert embed_pending(store, Unloadable(hashing_embedder)).embedded == 0


def test_a_change_by_another_connection_is_heard(store):
    """``wait_for_change``: pushed on PostgreSQL (LISTEN/NOTIFY), polled on SQLite; tool calls
    count only when asked for."""
    import threading

    location = store.location if store.dialect == "postgresql" else store.path  # no password in tests
    store.ensure_server("files", "stdio")
    heard = threading.Event()

    def write(what: str) -> None:
        with Store(location) as other:
            other.ensure_server("files", "stdio")
            other.sync_tools("files", TOOLS[:1])
            n = 0
            while not heard.wait(0.05):  # until the waiter heard one (it may start listening late)
                n += 1
                if what == "calls":
                    other.record_call("files", "read_file", ok=True, latency_ms=1.0)
                else:
                    other.sync_tools("files", [_tool("read_file", f"Read a file, version {n}.")])

    for what, usage in (("catalog", False), ("calls", True)):
        heard.clear()
        writer = threading.Thread(target=write, args=(what,))
        writer.start()
        try:
            assert store.wait_for_change(60, usage=usage)
        finally:
            heard.set()
            writer.join()


@pytest.mark.parametrize("field, value, where", [
    ("description", "Reads a file \ud800 from disk", "description"),
    ("input_schema", {"type": "object", "properties": {"p\udfff": {"type": "string"}}}, "input_schema.properties"),
    ("title", "Title \udc00", "title"),
])
def test_text_a_definition_cannot_hold_is_named_and_nothing_of_the_server_is_written(any_store, field, value, where):
    """A library caller's ToolDef with a lone surrogate was a raw UnicodeEncodeError from hashing, on
    both engines (discovery drops such tools first): now a StoreError naming tool and place, and the
    server's other tools, listed in the same call, are not half written."""
    any_store.ensure_server("s", "stdio")
    good = ToolDef(server="s", name="good", description="A fine tool.")
    any_store.sync_tools("s", [good])
    bad = replace(ToolDef(server="s", name="bad", description="x"), **{field: value})
    said = rf"tool s/bad: {where}.* (holds|has a key with) a lone surrogate .*nothing of server 's' was written"
    with pytest.raises(StoreError, match=said):
        any_store.sync_tools("s", [ToolDef(server="s", name="other", description="Another."), bad])
    assert [t.tool.name for t in any_store.tools()] == ["good"]


def test_a_new_tool_is_checked_against_held_definitions_through_an_index(tmp_path):
    """Every tool seen for the first time is looked up by name in the definition history (a pending
    change must not come back trusted under a renamed server): without an index on the name each
    lookup scanned the whole history (a new server of 1,000 tools beside 20,000 history rows: 2.2 s)."""
    with Store(tmp_path / "catalog.db") as store:
        plan = " ".join(str(tuple(r)) for r in store._query(
            "EXPLAIN QUERY PLAN SELECT server, definition_hash, definition FROM tool_history"
            " WHERE name = ? AND server <> ? ORDER BY id DESC", ("a", "b")))
    assert "USING INDEX tool_history_by_name" in plan, plan
