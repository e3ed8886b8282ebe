"""The PostgreSQL catalog (psycopg 3): one catalog shared by every host of a team.

Chosen when the ``store`` setting is a ``postgresql://`` (or ``postgres://``) URL.
Credentials come from the URL or from libpq's environment and files
(``PGUSER``, ``PGPASSWORD``, ``PGHOST``, ``~/.pgpass``, ``PGSERVICE``...); the
password is never printed: the catalog's printable name is the URL redacted
(:func:`jit.catalog.backend.redact`), and every error message is scrubbed of the
password before it becomes a :class:`~jit.errors.StoreError`.

What differs from SQLite, in the order :mod:`jit.catalog.backend` lists it:

* The store's SQL uses ``?`` placeholders; :class:`PgConnection` rewrites them to
  psycopg's ``%s`` and binds client-side (:class:`psycopg.ClientCursor`), so an
  untyped parameter (``CASE WHEN ? IS NOT NULL``) means what it means in SQLite.
  Rows read by index and by column name, like ``sqlite3.Row``.
* Write transactions take ``pg_advisory_xact_lock(WRITE_LOCK)``: writers on every
  host take turns as SQLite's writers do on one file, so a sync's read-then-write
  (which tools exist, which to prune) and the usage counters stay exact when hosts
  write at once. Reads take no lock (each statement sees committed data).
* Migrations (``migrations/postgresql/``) run under a session advisory lock, so
  hosts starting together apply each file once; each file commits with its record.
* Tool vectors are float32 bytes in a ``bytea`` column (no extension needed), read
  in one query into ``np.frombuffer`` by the store.
* Every version bump NOTIFYs ``jit_catalog`` with the counter's name (delivered at
  commit); :meth:`PostgresBackend.listen` waits for one, for a process that wants
  a push rather than reading the versions at its next compile.
"""

from __future__ import annotations

import functools
import logging
import os
import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, unquote, urlsplit

import psycopg
from psycopg.conninfo import conninfo_to_dict

from ..config import DEFAULT_CATALOG_CONNECT_TIMEOUT, DEFAULT_CATALOG_STATEMENT_TIMEOUT
from ..errors import StoreError
from .backend import Backend, T, redact

__all__ = ["CHANNEL", "PgConnection", "PostgresBackend"]

log = logging.getLogger(__name__)

#: The NOTIFY channel of version bumps (payload: "catalog_version" or "usage_version").
CHANNEL = "jit_catalog"
#: Advisory lock keys: every write transaction, and the migration run.
WRITE_LOCK = 0x6A17_0001
MIGRATE_LOCK = 0x6A17_0002


#: What to do about a refusal, by SQLSTATE (appended to the server's message).
_HINTS = {
    "25006": " (the server takes no writes: a read-only standby, or default_transaction_read_only is on;"
             " point `store` at the primary)",
    "42501": " (the catalog's database user lacks a privilege: it must own the catalog's tables, or be"
             " allowed to create them for the first jit to connect; docs/team.md)",
}


@functools.lru_cache(maxsize=1024)
def _translate(sql: str) -> str:
    """``?`` placeholders to psycopg's ``%s`` (a literal ``%`` doubled). The store's SQL has
    no ``?`` inside string literals."""
    return sql.replace("%", "%%").replace("?", "%s")


@functools.lru_cache(maxsize=256)
def _row_class(names: tuple[str, ...]) -> type[tuple[Any, ...]]:
    index = {n: i for i, n in enumerate(names)}

    class Row(tuple):  # type: ignore[type-arg]
        """A result row read by position or column name, and ``dict(row)``, as ``sqlite3.Row``."""

        __slots__ = ()

        def __getitem__(self, key: Any) -> Any:
            return tuple.__getitem__(self, index[key] if isinstance(key, str) else key)

        def keys(self) -> list[str]:
            return list(names)

    return Row


def _row_factory(cursor: Any) -> Any:
    if cursor.description is None:
        return tuple
    return _row_class(tuple(d.name for d in cursor.description))


#: What a PostgreSQL text value cannot hold: NUL, and lone surrogates (not UTF-8 at all).
_UNSTORABLE = re.compile("[\x00\ud800-\udfff]")


def _storable(params: Sequence[Any]) -> Sequence[Any]:
    """``params`` with every character PostgreSQL's text refuses replaced by U+FFFD (SQLite keeps
    them). A tool's text or a call's error holding one would otherwise fail the whole write (a
    server's sync, a call's usage); the definition hash is taken before, from the text as listed."""
    if not any(isinstance(p, str) and _UNSTORABLE.search(p) for p in params):
        return params
    return [_UNSTORABLE.sub("\ufffd", p) if isinstance(p, str) else p for p in params]


class PgConnection:
    """The psycopg connection the store's SQL runs on (``execute``/``executemany`` with ``?``)."""

    def __init__(self, raw: psycopg.Connection[Any]) -> None:
        self.raw = raw

    def execute(self, sql: str, params: Sequence[Any] = ()) -> psycopg.ClientCursor[Any]:
        cur = self.raw.cursor()
        if params:
            cur.execute(_translate(sql), _storable(params))
        else:
            cur.execute(sql)
        return cur  # type: ignore[return-value]

    def executemany(self, sql: str, rows: Iterable[Sequence[Any]]) -> psycopg.ClientCursor[Any]:
        cur = self.raw.cursor()
        rows = [_storable(r) for r in rows]
        if rows:
            cur.executemany(_translate(sql), rows)
        return cur  # type: ignore[return-value]

    def close(self) -> None:
        self.raw.close()


def _secrets(url: str) -> list[str]:
    """The passwords a message could leak: the URL's and libpq's environment's."""
    found = []
    try:
        parts = urlsplit(url)
        if parts.password:
            found += [parts.password, unquote(parts.password)]
        found += [v for k, v in parse_qsl(parts.query) if k.lower() == "password" and v]
    except ValueError:
        pass
    if os.environ.get("PGPASSWORD"):
        found.append(os.environ["PGPASSWORD"])
    return sorted({s for s in found if s}, key=len, reverse=True)


class PostgresBackend(Backend):
    """One psycopg connection in autocommit mode; transactions are explicit ``BEGIN``s."""

    dialect = "postgresql"
    errors = (psycopg.Error,)

    def __init__(self, url: str, *, connect_timeout: int = DEFAULT_CATALOG_CONNECT_TIMEOUT,
                 statement_timeout: float = DEFAULT_CATALOG_STATEMENT_TIMEOUT) -> None:
        self.location = redact(url)
        self._secrets = _secrets(url)
        self._url = url
        self.statement_timeout = statement_timeout
        try:
            # The URL's own connect_timeout wins; psycopg's default is 130 s, and a server that accepts
            # the connection and never answers (a proxy whose database is gone) held every command that long.
            given = "connect_timeout" in conninfo_to_dict(url)
        except psycopg.Error:
            given = False  # a malformed URL: connecting says what is wrong with it
        self.connect_timeout = None if given else max(2, int(connect_timeout))
        try:
            self.conn = PgConnection(self._connect())
        except psycopg.Error as exc:
            raise StoreError(f"catalog open failed: {self.describe(exc)} (catalog {self.location})",
                             path=self.location) from None

    def _connect(self, **extra: Any) -> psycopg.Connection[Any]:
        """A connection to the catalog, its connecting bounded by ``catalog.connect_timeout`` and each
        statement by ``catalog.statement_timeout`` (unless the URL, the role or the database sets one)."""
        timeout = {} if self.connect_timeout is None else {"connect_timeout": self.connect_timeout}
        if extra:
            return psycopg.connect(self._url, autocommit=True, **timeout, **extra)
        conn = psycopg.connect(self._url, autocommit=True, cursor_factory=psycopg.ClientCursor,
                               row_factory=_row_factory, application_name="jit", **timeout)
        if self.statement_timeout > 0:
            conn.execute("SELECT set_config('statement_timeout', %s, false) WHERE current_setting("
                         "'statement_timeout') IN ('0', '0ms')", (f"{max(1, int(self.statement_timeout * 1000))}ms",))
        return conn

    def _lost(self) -> bool:
        return self.conn.raw.closed or self.conn.raw.broken

    def _reconnect(self) -> None:
        log.warning("the connection to the catalog %s was lost; reconnecting", self.location)
        self.conn.raw.close()
        self.conn.raw = self._connect()

    def ensure_open(self) -> None:
        if self._lost():
            self._reconnect()

    def read(self, run: Callable[[], T]) -> T:
        """A connection the server dropped while it sat idle (a restart, an idle timeout, an
        administrator's ``pg_terminate_backend``) is found lost only by the next statement: a read
        that meets it is run again, once, on a new connection (a read changes nothing, so twice is
        safe). A lost connection inside a transaction is not retried: the server rolled it back."""
        self.ensure_open()
        try:
            return run()
        except psycopg.OperationalError:
            if not self._lost():
                raise
        self._reconnect()
        return run()

    def scrub(self, message: str) -> str:
        """The password out, and libpq's multi-line messages ("…failed: …\n\tIs the server
        running…") on one line, as every other error jit prints."""
        for secret in self._secrets:
            message = message.replace(secret, "***")
        return " ".join(message.replace(self._url, self.location).split())

    def unreachable(self, exc: BaseException | None) -> bool:
        return isinstance(exc, psycopg.OperationalError)

    def describe(self, exc: BaseException) -> str:
        """The server's own message without the statement it quotes (``LINE 1: CREATE TABLE …``),
        and for the refusals a setting causes, which setting; for a bound jit set, which one."""
        diag = getattr(exc, "diag", None)
        text = (diag.message_primary if diag is not None else None) or str(exc)
        hint = _HINTS.get(getattr(exc, "sqlstate", None) or "", "")
        if isinstance(exc, psycopg.errors.ConnectionTimeout):
            bound = f"{self.connect_timeout} s, `catalog.connect_timeout`" if self.connect_timeout is not None \
                else "the URL's connect_timeout"
            hint = (f" (no session with the server within {bound}: it accepts connections but does not answer,"
                    " or is too slow to)")
        elif isinstance(exc, psycopg.errors.QueryCanceled) and "statement timeout" in text:
            hint = (f" (a statement ran or waited past the statement timeout ({self.statement_timeout:g} s,"
                    " `catalog.statement_timeout`, unless the URL, role or database sets another): another session"
                    " holds a lock the catalog needs, or the server is overloaded)")
        return self.scrub(f"{text}{hint}")

    def in_transaction(self) -> bool:
        status = self.conn.raw.info.transaction_status
        # UNKNOWN: the connection is lost; not in a transaction, so the next one reconnects.
        return status not in (psycopg.pq.TransactionStatus.IDLE, psycopg.pq.TransactionStatus.UNKNOWN)

    def begin(self) -> None:
        self.ensure_open()
        try:
            self.conn.execute("BEGIN")
        except psycopg.OperationalError:
            # Lost while idle (see read): nothing was run yet, so the transaction starts on a new one.
            if not self._lost():
                raise
            self._reconnect()
            self.conn.execute("BEGIN")
        self.conn.execute(f"SELECT pg_advisory_xact_lock({WRITE_LOCK})")

    def rollback(self) -> None:
        # A connection lost mid-transaction: the server rolled it back; the error that met the loss
        # is the one to report, not "the connection is closed" from a ROLLBACK sent after it.
        if not self._lost():
            self.conn.execute("ROLLBACK")

    def migrations_dir(self, base: Path) -> Path:
        return base / "postgresql"

    def ensure_migrations_table(self) -> None:
        # Only read when it exists: a CREATE, even one with IF NOT EXISTS, is refused on a read-only
        # server (a standby, default_transaction_read_only) and without CREATE on the schema, where
        # a host may still read a catalog that is up to date.
        if self.conn.execute("SELECT to_regclass('schema_migrations')").fetchone()[0] is not None:
            return
        with self.migrating():
            self.conn.execute(
                "CREATE TABLE IF NOT EXISTS schema_migrations (version integer PRIMARY KEY, name text NOT NULL,"
                " checksum text NOT NULL, applied_at double precision NOT NULL)"
            )

    @contextmanager
    def migrating(self) -> Iterator[None]:
        self.conn.execute(f"SELECT pg_advisory_lock({MIGRATE_LOCK})")
        try:
            yield
        finally:
            if not self.conn.raw.closed:
                self.conn.execute(f"SELECT pg_advisory_unlock({MIGRATE_LOCK})")

    def apply_migration(self, sql: str, record: tuple[int, str, str, float]) -> None:
        self.conn.execute("BEGIN")
        try:
            # A migration rewriting a large catalog may run long: it is not cut by the statement timeout.
            self.conn.execute("SET LOCAL statement_timeout = 0")
            self.conn.raw.execute(sql)  # no parameters: several statements in one go
            self.conn.execute("INSERT INTO schema_migrations(version, name, checksum, applied_at)"
                              " VALUES (?, ?, ?, ?)", record)
        except BaseException:
            self.conn.execute("ROLLBACK")
            raise
        self.conn.execute("COMMIT")

    def announce(self, c: Any, counter: str) -> None:
        c.execute(f"SELECT pg_notify('{CHANNEL}', ?)", (counter,))

    def listen(self, timeout: float) -> list[str]:
        """Wait up to ``timeout`` seconds for version bumps by any process on any host; the
        counters announced (empty on timeout). Uses a second connection, opened on first use,
        so the store's connection stays free."""
        listener = getattr(self, "_listener", None)
        if listener is None or listener.closed or listener.broken:
            listener = self._listener = self._connect(application_name="jit-listen")
            listener.execute(f"LISTEN {CHANNEL}")
        return [n.payload for n in listener.notifies(timeout=timeout, stop_after=1)]

    def close(self) -> None:
        listener = getattr(self, "_listener", None)
        if listener is not None:
            listener.close()
        self.conn.close()
