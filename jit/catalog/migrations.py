"""The catalog's migrations: the numbered files in ``migrations/`` and the runner that applies them.

The schema changes only through these files (``0001_name.sql``, ...), each applied
in one transaction together with its record in ``schema_migrations`` (name and
checksum); an applied file that was edited afterwards is refused at open, since
the catalog no longer matches it. :class:`~jit.catalog.store.Store` owns the
connection and hands its backend to a :class:`Migrations` runner.

Each engine has its own files: SQLite's are ``migrations/*.sql``, PostgreSQL's
``migrations/postgresql/*.sql`` (a PostgreSQL catalog starts at a schema equal to
SQLite's after all of its files; later changes add a file to each folder). A run
with something to apply holds the catalog's migration lock (SQLite's write lock,
taken by ``BEGIN IMMEDIATE``; on PostgreSQL an advisory lock), so processes and
hosts opening a catalog together apply each file once
(:meth:`jit.catalog.backend.Backend.migrating`).
"""

from __future__ import annotations

import hashlib
import re
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import MigrationError
from ..paths import bundled_dir
from .backend import Backend

__all__ = ["Migration", "Migrations", "default_migrations_dir", "load_migrations"]

_MIGRATION_NAME = re.compile(r"^(\d{4})_([a-z0-9_]+)\.sql$")


def default_migrations_dir() -> Path:
    return bundled_dir("migrations")


@dataclass(frozen=True, slots=True)
class Migration:
    version: int
    name: str
    path: Path

    @property
    def sql(self) -> str:
        return self.path.read_text(encoding="utf-8")

    @property
    def checksum(self) -> str:
        return hashlib.sha256(self.sql.encode("utf-8")).hexdigest()


def load_migrations(directory: Path) -> list[Migration]:
    if not directory.is_dir():
        raise MigrationError(f"migrations directory not found: {directory}")
    found: list[Migration] = []
    for p in sorted(directory.iterdir()):
        if p.suffix != ".sql":
            continue
        m = _MIGRATION_NAME.match(p.name)
        if not m:
            raise MigrationError(f"migration file name must look like 0001_name.sql: {p.name}")
        found.append(Migration(int(m.group(1)), m.group(2), p))
    versions = [m.version for m in found]
    if len(set(versions)) != len(versions):
        raise MigrationError(f"two migrations share a version number in {directory}")
    return found


class Migrations:
    """Applies the files of ``directory`` to one catalog (its :class:`Backend`).

    ``query`` is the store's guarded read (engine errors become ``StoreError``);
    ``lock`` is the store's connection lock; ``catalog_path`` names the catalog in errors.
    """

    def __init__(self, backend: Backend, lock: threading.RLock, directory: Path, *,
                 query: Callable[[str], list[Any]], catalog_path: str) -> None:
        self._backend = backend
        self._lock = lock
        self.directory = directory
        self._query = query
        self.catalog_path = catalog_path

    def ensure_table(self) -> None:
        self._backend.ensure_migrations_table()

    def all(self) -> list[Migration]:
        return load_migrations(self.directory)

    def applied(self) -> dict[int, str]:
        return {r["version"]: r["name"] for r in self._query("SELECT version, name FROM schema_migrations")}

    def pending(self) -> list[Migration]:
        done = self.applied()
        return [m for m in self.all() if m.version not in done]

    def check(self, migrations: Sequence[Migration] | None = None) -> None:
        """Refuse a catalog whose applied migrations no longer match their files.

        A migration runs once per catalog, so an edit to an applied file never reaches
        the catalogs that already ran it: they would silently differ from new ones
        (a constraint, a column, a default). Each record keeps the checksum of the text
        that ran; a file whose text now differs is a :class:`MigrationError` naming it.
        A recorded version with no file (a catalog from a newer jit) is not checked here.
        """
        recorded = {r["version"]: (r["name"], r["checksum"])
                    for r in self._query("SELECT version, name, checksum FROM schema_migrations")}
        for m in self.all() if migrations is None else migrations:
            if m.version not in recorded:
                continue
            name, checksum = recorded[m.version]
            if (name, checksum) != (m.name, m.checksum):
                raise MigrationError(
                    f"migration {m.path.name} differs from the one this catalog ran"
                    f" (recorded as {m.version:04d}_{name}.sql, sha256 {checksum[:12]}; the file now has"
                    f" sha256 {m.checksum[:12]}): an applied migration must not be edited; restore the file and"
                    " put the change in a new migration (a catalog made by a pre-release jit: delete it and"
                    " run `jit sync`)",
                    path=self.catalog_path, migration=str(m.path),
                )

    def apply(self) -> list[Migration]:
        """Check the applied migrations (:meth:`check`), then apply pending
        ones in order, each atomically with its record.

        With something pending, the run holds the catalog's migration lock (SQLite's write
        lock, PostgreSQL's advisory lock) and reads again under it which files are applied:
        processes opening a catalog together apply each file once, and the ones that waited
        find nothing left to do. A catalog with nothing pending is only read (no lock), so
        an open never waits for another process's write."""
        applied: list[Migration] = []
        found = self.all()
        self.check(found)
        if not {m.version for m in found} - self.applied().keys():
            return applied
        with self._lock, self._backend.migrating():
            self.check(found)  # read again under the lock: another process may just have applied some
            done = self.applied()
            for m in (m for m in found if m.version not in done):
                try:
                    self._backend.apply_migration(m.sql, (m.version, m.name, m.checksum, time.time()))
                except self._backend.errors as exc:
                    raise MigrationError(
                        f"migration {m.path.name} failed and was rolled back: {self._backend.describe(exc)}",
                        path=str(m.path)
                    ) from exc
                applied.append(m)
        return applied
