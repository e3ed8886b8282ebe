"""A throwaway PostgreSQL cluster for tests and benchmarks, from Debian's binaries.

``initdb`` into a fresh temporary directory, then ``postgres`` listening on a unix
socket only (no TCP port to collide with), stopped by its PID and removed at
:meth:`Cluster.stop`. PostgreSQL refuses to run as root, and tests run as root in
CI: there the server runs as the unprivileged ``postgres`` user Debian's package
creates (``setpriv``, which execs, so the PID we hold is the server's), with the
directory handed to that user. Each test gets a database of its own
(:meth:`Cluster.new_database`).

The tests' cluster lives in memory (``parent``: :func:`memory_dir`, a tmpfs): a session's
databases come to half a gigabyte of files, which a disk busy with other work can take
most of a minute to delete. The benchmarks' stays on disk, as a real server's would.
"""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path

__all__ = ["Cluster", "find_bindir", "memory_dir"]


def find_bindir() -> Path | None:
    """The newest ``/usr/lib/postgresql/N/bin`` with ``initdb`` and ``postgres`` (or ``$JIT_PG_BINDIR``)."""
    env = os.environ.get("JIT_PG_BINDIR")
    def version(bindir: str) -> int:
        name = Path(bindir).parent.name
        return int(name) if name.isdigit() else 0

    candidates = [env] if env else sorted(glob.glob("/usr/lib/postgresql/*/bin"), key=version, reverse=True)
    for c in candidates:
        if c and (Path(c) / "initdb").exists() and (Path(c) / "postgres").exists():
            return Path(c)
    if shutil.which("initdb") and shutil.which("postgres"):
        return Path(shutil.which("initdb")).parent  # type: ignore[arg-type]
    return None


def memory_dir() -> Path | None:
    """``/dev/shm`` where it is a writable directory (Linux's tmpfs), else None (the system's temp)."""
    shm = Path("/dev/shm")
    return shm if shm.is_dir() and os.access(shm, os.W_OK | os.X_OK) else None


class Cluster:
    """One running cluster (see the module docstring). ``url(db)`` is a libpq URL over the socket;
    its directory is made in ``parent`` (the system's temp directory when None)."""

    def __init__(self, bindir: Path, parent: Path | None = None) -> None:
        self.bindir = bindir
        self.root = Path(tempfile.mkdtemp(prefix="jit-pg-", dir=parent))
        self.data = self.root / "data"
        self.socket_dir = self.root  # the socket lives beside the data, in the same throwaway tree
        self.port = 5432
        self.user = "jit"
        self._proc: subprocess.Popen[bytes] | None = None
        self._dbs = 0
        self._prefix: list[str] = []
        if os.geteuid() == 0:
            pw = pwd.getpwnam("postgres")  # Debian's postgresql-common creates it
            os.chown(self.root, pw.pw_uid, pw.pw_gid)
            self._prefix = ["setpriv", f"--reuid={pw.pw_uid}", f"--regid={pw.pw_gid}", "--clear-groups", "--"]
        os.chmod(self.root, 0o755)

    def start(self) -> Cluster:
        log = self.root / "initdb.log"
        with log.open("wb") as out:
            subprocess.run([*self._prefix, str(self.bindir / "initdb"), "-D", str(self.data), "-U", self.user,
                            "-A", "trust", "-E", "UTF8", "--locale=C", "--no-sync"],
                           stdout=out, stderr=subprocess.STDOUT, check=True, cwd=self.root)
        self._launch()
        return self

    def _launch(self) -> None:
        # fsync off: a test cluster's durability is worthless, its speed is not.
        self._proc = subprocess.Popen(
            [*self._prefix, str(self.bindir / "postgres"), "-D", str(self.data), "-k", str(self.socket_dir),
             "-c", "listen_addresses=", "-p", str(self.port), "-c", "fsync=off", "-c", "synchronous_commit=off",
             "-c", "full_page_writes=off", "-c", "max_connections=200"],
            stdout=subprocess.DEVNULL, stderr=(self.root / "server.log").open("ab"), cwd=self.root,
        )
        deadline = time.monotonic() + 60
        sock = self.socket_dir / f".s.PGSQL.{self.port}"
        while not sock.exists():
            if self._proc.poll() is not None or time.monotonic() > deadline:
                log_text = (self.root / "server.log").read_text(errors="replace")[-2000:]
                self.stop()
                raise RuntimeError(f"PostgreSQL did not start: {log_text}")
            time.sleep(0.05)
        self._wait_ready()

    def crash(self) -> None:
        """Stop the server at once, as ``pg_ctl stop -m immediate`` does (SIGQUIT: every connection
        cut); :meth:`restart` brings it back on the same data. What committed is made durable
        first: this cluster runs with ``synchronous_commit=off``, which would lose the last commits
        of a crash, as a production server's settings would not."""
        import psycopg

        proc = self._proc
        assert proc is not None
        with psycopg.connect(self.url("postgres"), autocommit=True) as conn:
            conn.execute("CHECKPOINT")
        proc.send_signal(signal.SIGQUIT)
        proc.wait(timeout=60)
        (self.socket_dir / f".s.PGSQL.{self.port}").unlink(missing_ok=True)

    def restart(self) -> None:
        """Start the server again on its data after :meth:`crash` (crash recovery runs first)."""
        self._launch()

    def _wait_ready(self) -> None:
        import psycopg

        deadline = time.monotonic() + 60
        while True:
            try:
                psycopg.connect(self.url("postgres")).close()
                return
            except psycopg.OperationalError:  # "the database system is starting up"
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.05)

    def url(self, database: str) -> str:
        return f"postgresql://{self.user}@/{database}?host={self.socket_dir}&port={self.port}"

    def new_database(self, prefix: str = "t") -> str:
        """A fresh empty database's URL."""
        import psycopg

        self._dbs += 1
        name = f"{prefix}_{os.getpid()}_{self._dbs}"
        with psycopg.connect(self.url("postgres"), autocommit=True) as conn:
            # PostgreSQL 15 and later copy the template block by block through the WAL by default;
            # copying its files costs this fsync-less cluster half the time and CPU.
            strategy = " STRATEGY FILE_COPY" if conn.info.server_version >= 150000 else ""
            conn.execute(f'CREATE DATABASE "{name}"{strategy}')
        return self.url(name)

    def stop(self) -> None:
        """Stop the server by its PID (fast shutdown), then remove the whole tree."""
        proc, self._proc = self._proc, None
        if proc is not None and proc.poll() is None:
            proc.send_signal(signal.SIGINT)  # "fast" shutdown: disconnect clients, no waiting on them
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        shutil.rmtree(self.root, ignore_errors=True)
