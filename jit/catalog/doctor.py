"""Checking a SQLite catalog file, and rebuilding a damaged one (``jit doctor``).

:func:`check_catalog` reads the whole file without writing to it: whether it is a
catalog at all (:func:`~jit.catalog.backend.not_a_catalog`), SQLite's ``PRAGMA
integrity_check`` (every page, link and index), every row of every table, and every tool
vector read back through sqlite-vec.

:func:`rebuild_catalog` makes a new catalog from a damaged one. It reads what is intact,
table by table, and carries it into a fresh, migrated file: the servers and their owners,
the tools, analyses, usage, the definition history and approvals (so a tool awaiting
approval still awaits it, and usage is not lost), the listings, the embedding cache,
resources and prompts. A table read up to a damaged page is read on from the next row
that can be reached (by rowid), or from its other end; what cannot be read is counted as
lost. Not carried: the tool vectors (made again from the embedding cache, or by the model,
at the next sync), which processes hold which server (written again as they connect), and
the catalog's identity (a new one, so files derived from the old catalog are not reused).
The damaged file is renamed beside the new one (``catalog.db.damaged-20261201-120000``,
its ``-wal`` with it), never deleted, and only ever read. What is left to rebuild from
the servers (tools lost with a damaged page, vectors) is a sync's work, which
``jit doctor`` runs next (jit/cli/doctor.py).

Only a SQLite catalog: a PostgreSQL catalog's storage is its server's to check.
"""

from __future__ import annotations

import os
import re
import time
import urllib.parse
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pysqlite3.dbapi2 as sqlite3
import sqlite_vec

from ..errors import StoreError
from . import holders
from .backend import SQLITE_HEADER, not_a_catalog
from .store import Store

__all__ = ["CARRIED", "NOT_CARRIED", "CatalogCheck", "Carried", "Rebuilt", "check_catalog", "live_holders",
           "rebuild_catalog"]

#: The tables carried into a rebuilt catalog, parents before the rows that refer to them.
CARRIED = ("servers", "server_owners", "tools", "analysis", "usage", "tool_history", "tool_approvals",
           "tool_listings", "embedding_cache", "resources", "prompts")
#: What a rebuilt catalog does not carry, and why (for the report).
NOT_CARRIED = {
    "tool vectors": "made again from the embedding cache, or by the model, at the next sync",
    "status holds": "which processes hold which server: written again as they connect",
    "catalog identity": "a new one, so files derived from the old catalog are not reused",
}
#: Problems a check lists at most (integrity_check can find thousands).
MAX_PROBLEMS = 20
#: Findings asked of integrity_check (pages a broken link cuts off are one finding each).
_FINDINGS_READ = 10_000
_NEVER_USED = re.compile(r"Page (\d+): never used")
_SUFFIXES = ("", "-wal", "-shm")


@dataclass
class CatalogCheck:
    """What :func:`check_catalog` found. ``problems`` empty (and the file there): intact."""

    path: str
    exists: bool = True
    #: The file begins as a SQLite database (an empty file or a file of another kind does not).
    sqlite: bool = True
    problems: list[str] = field(default_factory=list)
    #: Rows read, per table (a table that could not be read whole is not here).
    rows: dict[str, int] = field(default_factory=dict)
    #: Tool vectors read back (None: no vector table, or it could not be read whole).
    vectors: int | None = None

    @property
    def intact(self) -> bool:
        return self.exists and not self.problems


@dataclass
class Carried:
    """One table of a rebuilt catalog: rows carried, and rows lost (None: the damaged file could
    not say how many rows the table held)."""

    table: str
    kept: int
    lost: int | None


@dataclass
class Rebuilt:
    """What :func:`rebuild_catalog` did: the new catalog at ``path``, the old file at ``aside``."""

    path: str
    aside: str
    carried: list[Carried] = field(default_factory=list)
    #: Tables the damaged file has no readable schema for (nothing of them carried).
    unreadable: list[str] = field(default_factory=list)
    not_carried: dict[str, str] = field(default_factory=lambda: dict(NOT_CARRIED))

    @property
    def complete(self) -> bool:
        """Every row of every carried table was carried."""
        return not self.unreadable and all(c.lost == 0 for c in self.carried)


def _connect(path: str, *, read_only: bool = False) -> Any:
    """A connection with sqlite-vec. ``read_only``: the damaged file is only read (its WAL is not
    checkpointed into it, and its ``-wal`` not removed at close, which SQLite does by name)."""
    target = f"file:{urllib.parse.quote(path)}?mode=ro" if read_only else path
    conn = sqlite3.connect(target, uri=read_only, isolation_level=None, check_same_thread=False)
    conn.enable_load_extension(True)
    sqlite_vec.load(conn)
    conn.enable_load_extension(False)
    return conn


def _tables(conn: Any) -> dict[str, str]:
    """Plain table name -> its ``CREATE`` statement (no virtual table, no vec0 shadow table)."""
    rows = conn.execute("SELECT name, sql FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'")
    return {r[0]: r[1] or "" for r in rows
            if not (r[1] or "").upper().startswith("CREATE VIRTUAL") and not r[0].startswith("tool_vectors_")}


def live_holders(conn: Any) -> list[str]:
    """The live processes (``jit serve``, a running ``jit sync``) the catalog on ``conn`` records as
    holding a server's status, as ``pid N (command)``; none if its ``holders`` cannot be read."""
    try:
        rows = conn.execute("SELECT id, heartbeat, command FROM holders").fetchall()
    except sqlite3.Error:
        return []
    found = []
    for holder_id, heartbeat, command in rows:
        h = holders.parse(holder_id)
        if h is not None and h.pid != os.getpid() and holders.is_alive(h, heartbeat):
            found.append(f"{h.describe()} ({command})" if command else h.describe())
    return found


def check_catalog(path: str | Path) -> CatalogCheck:
    """Check the catalog file at ``path``, only reading it (see the module docstring)."""
    path = str(path)
    check = CatalogCheck(path)
    if not os.path.exists(path):
        check.exists = False
        return check
    problem = not_a_catalog(path)
    if problem is not None:
        check.sqlite = False
        check.problems.append(problem.message)
        return check
    conn = _connect(path, read_only=True)
    try:
        try:
            found = [str(r[0]) for r in conn.execute(f"PRAGMA integrity_check({_FINDINGS_READ})")]
        except sqlite3.Error as exc:  # a page it cannot even walk
            found = [f"SQLite's integrity check stopped: {exc}"]
        if found != ["ok"]:
            check.problems += _findings(found)
        try:
            tables = _tables(conn)
        except sqlite3.Error as exc:
            check.problems.append(f"the list of tables cannot be read: {exc}")
            return check
        if tables and "schema_migrations" not in tables:
            check.problems.append("a SQLite database, but not a jit catalog (no schema_migrations table)")
        for name in sorted(tables):
            try:
                check.rows[name] = sum(1 for _ in conn.execute(f'SELECT * FROM "{name}"'))
            except sqlite3.Error as exc:
                check.problems.append(f"table {name} cannot be read whole: {exc}")
        try:
            has_vectors = conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'tool_vectors'").fetchone()
            if has_vectors:
                check.vectors = sum(1 for _ in conn.execute("SELECT tool_id, embedding FROM tool_vectors"))
        except sqlite3.Error as exc:
            check.problems.append(f"the tool vectors cannot be read back: {exc}")
    finally:
        conn.close()
    return check


def _findings(found: list[str]) -> list[str]:
    """integrity_check's findings, one a line; its "Page N: never used" lines (the pages a broken
    link cut off) as one line counting them."""
    lines = [line.strip() for text in found for line in text.replace("*** in database main ***", "").splitlines()]
    unused = [int(m.group(1)) for line in lines if (m := _NEVER_USED.fullmatch(line))]
    kept = [line for line in lines if line and not _NEVER_USED.fullmatch(line)]
    if unused:
        kept.append(f"{len(unused):,} page{'s' * (len(unused) != 1)} never used (cut off by the damage; "
                    f"from page {min(unused)})")
    return kept[:MAX_PROBLEMS]


def rebuild_catalog(path: str | Path, *, migrations_dir: Path | None = None) -> Rebuilt:
    """Make a new catalog at ``path`` from what is intact in the damaged one there, which is kept
    aside (renamed, with its ``-wal``; only ever read). An empty file is kept aside the same way, and
    the new catalog starts empty. A file that is not a SQLite database at all, or another program's
    SQLite database, is left alone (a :class:`~jit.errors.StoreError`): it may be another file that
    ``store`` names by mistake. So is a catalog a live process holds (``jit serve``, by its
    ``holders`` rows): it would go on writing into the file kept aside."""
    path = str(path)
    if not os.path.exists(path):
        raise StoreError(f"there is no catalog at {path} to rebuild: `jit sync` makes one", path=path)
    with open(path, "rb") as f:
        head = f.read(len(SQLITE_HEADER))
    if head and head != SQLITE_HEADER:
        problem = not_a_catalog(path)
        assert problem is not None
        raise problem
    source = _connect(path, read_only=True) if head else None
    fresh = f"{path}.rebuild-{os.getpid()}"
    try:
        _refuse_another_programs(source, path)
        users = live_holders(source) if source is not None else []
        if users:
            raise StoreError(f"the catalog {path} is in use by {', '.join(users)}: stop it, then run `jit doctor` "
                             "again", path=path)
        _remove(fresh)  # left by a rebuild that was killed: never put in place
        with Store(fresh, migrations_dir=migrations_dir):
            pass  # migrated, with an identity of its own
        rebuilt = Rebuilt(path=path, aside=_aside_name(path))
        if source is not None:
            _carry(source, fresh, rebuilt)
            source.close()
            source = None
        for suffix in _SUFFIXES:
            if os.path.exists(path + suffix):
                os.rename(path + suffix, rebuilt.aside + suffix)
        os.rename(fresh, path)
    finally:
        if source is not None:
            source.close()
        _remove(fresh)
    return rebuilt


def _refuse_another_programs(source: Any, path: str) -> None:
    """A readable SQLite database with tables and none of a catalog's is another program's: left alone."""
    if source is None:
        return
    try:
        tables = _tables(source)
    except sqlite3.Error:
        return  # its list of tables is damaged: a catalog's, as far as anyone can tell
    if tables and "schema_migrations" not in tables:
        held = ", ".join(sorted(tables)[:5])
        raise StoreError(f"{path} is a SQLite database but not a jit catalog (it holds {held}): jit doctor leaves "
                         "it alone; point `store` at the catalog", path=path)


def _remove(path: str) -> None:
    for suffix in _SUFFIXES:
        Path(path + suffix).unlink(missing_ok=True)


def _aside_name(path: str) -> str:
    stamp = time.strftime("%Y%m%d-%H%M%S")
    name, n = f"{path}.damaged-{stamp}", 1
    while any(os.path.exists(name + suffix) for suffix in _SUFFIXES):
        n += 1
        name = f"{path}.damaged-{stamp}-{n}"
    return name


def _carry(source: Any, fresh: str, rebuilt: Rebuilt) -> None:
    """Every readable row of the :data:`CARRIED` tables from ``source`` into the catalog ``fresh``."""
    target = _connect(fresh)
    try:
        target.execute("PRAGMA foreign_keys=ON")
        try:
            present = _tables(source)
        except sqlite3.Error:
            rebuilt.unreadable = list(CARRIED)
            return
        target.execute("BEGIN")
        for table in CARRIED:
            try:
                have = {r[1] for r in source.execute(f'PRAGMA table_info("{table}")')} if table in present else set()
            except sqlite3.Error:
                have = set()
            if not have:
                rebuilt.unreadable.append(table)
                continue
            columns = [c for c in (r[1] for r in target.execute(f'PRAGMA table_info("{table}")')) if c in have]
            insert = (f'INSERT OR IGNORE INTO "{table}" ({", ".join(columns)}) VALUES '
                      f'({", ".join("?" * len(columns))})')
            kept = 0
            for row in _readable_rows(source, table, columns, "WITHOUT ROWID" in present[table].upper()):
                values = _carried_values(table, dict(zip(columns, row, strict=True)))
                try:
                    kept += target.execute(insert, [values[c] for c in columns]).rowcount
                except sqlite3.Error:  # a value the table refuses (garbage a damaged page still parsed)
                    continue
            rebuilt.carried.append(Carried(table, kept, _lost(source, table, kept)))
        usage = target.execute("SELECT max(seq) FROM usage").fetchone()[0]
        target.execute("INSERT INTO meta(key, value) VALUES ('usage_version', ?) ON CONFLICT(key) DO UPDATE"
                       " SET value = excluded.value", (str(usage or 0),))
        target.execute("COMMIT")
        target.execute("PRAGMA wal_checkpoint(TRUNCATE)")  # all of it in the file that is moved into place
    finally:
        target.close()


def _carried_values(table: str, row: dict[str, Any]) -> dict[str, Any]:
    """A row as the rebuilt catalog takes it: every tool to be embedded again (no vector is carried),
    and a status a process held read as closed (no hold is carried)."""
    if table == "tools":
        row["needs_embedding"] = 1
    elif table == "servers" and row.get("status") in ("connecting", "connected") and row.get("status_holder"):
        row["status"] = "idle" if row.get("last_seen") is not None else "unknown"
        row["status_holder"] = None
        if "status_note" in row:
            row["status_note"] = "carried over by jit doctor from a damaged catalog"
    return row


def _lost(source: Any, table: str, kept: int) -> int | None:
    try:
        total = int(source.execute(f'SELECT count(*) FROM "{table}"').fetchone()[0])
    except sqlite3.Error:
        return None
    return max(0, total - kept)


def _readable_rows(conn: Any, table: str, columns: list[str], without_rowid: bool) -> Iterator[tuple[Any, ...]]:
    """The rows of ``table`` that can be read. A table with rowids is read in rowid order, and past
    a damaged page on from the next row that can be reached (:func:`_by_rowid`). A table without
    rowids is read from its first key up to a damaged page, then from its last key back to it."""
    names = ", ".join(f'"{c}"' for c in columns)
    if not without_rowid:
        yield from _by_rowid(conn, table, names)
        return
    keys = [r[1] for r in sorted((r for r in conn.execute(f'PRAGMA table_info("{table}")') if r[5]),
                                 key=lambda r: r[5])]
    seen: set[tuple[Any, ...]] = set()
    for direction in ("ASC", "DESC"):
        order = ", ".join(f'"{k}" {direction}' for k in keys)
        try:
            for row in conn.execute(f'SELECT {names} FROM "{table}" ORDER BY {order}'):
                key = tuple(row[columns.index(k)] for k in keys)
                if key in seen:
                    return  # met the rows read from the other end: everything was read
                seen.add(key)
                yield row
        except sqlite3.Error:
            continue


def _by_rowid(conn: Any, table: str, names: str) -> Iterator[tuple[Any, ...]]:
    after = -(2**63)
    try:
        last = conn.execute(f'SELECT max(rowid) FROM "{table}"').fetchone()[0]
    except sqlite3.Error:
        last = 2**62
    if last is None:
        return
    while after < last:
        try:
            for row in conn.execute(f'SELECT rowid, {names} FROM "{table}" WHERE rowid > ? ORDER BY rowid', (after,)):
                after = row[0]
                yield tuple(row[1:])
            return
        except sqlite3.Error:
            ahead = _next_readable(conn, table, after, last)
            after = ahead if ahead > after else after + 1


def _next_readable(conn: Any, table: str, after: int, last: int) -> int:
    """Where to read on from, after a damaged page stopped a read past rowid ``after``: just before
    the first row that can be reached further ahead (probing one rowid past ``after``, then 2, 4,
    ...), or ``last`` if none can."""
    step = 1
    while after + step <= last:
        try:
            row = conn.execute(f'SELECT rowid FROM "{table}" WHERE rowid >= ? ORDER BY rowid LIMIT 1',
                               (after + step,)).fetchone()
        except sqlite3.Error:
            step *= 2
            continue
        return last if row is None else row[0] - 1
    return last
