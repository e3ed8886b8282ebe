"""Who holds a server's status: the live process behind each ``connecting``/``connected``.

A ``connected`` status is true only while the process holding that connection
(``jit serve``, or a ``jit sync`` while it runs) lives. So every such status is
written with its *holder*, ``host:pid:start``: the host name, the process id
and a token of the process's start (on Linux the boot id and the start time in
clock ticks, so a pid the kernel reuses for a new process does not inherit the
hold). A reader asks :func:`is_alive`:

* a holder on this host is alive while a process with that pid and start token
  exists (not a zombie): exact, no clock involved;
* a holder on another host cannot be checked by pid; it is alive while its
  heartbeat (``holders.heartbeat``, refreshed with each status write, ping and
  call) is younger than :data:`REMOTE_LEASE`. A SQLite catalog lives on one
  host; a PostgreSQL one is shared by several (docs/team.md), each host named by
  ``$JIT_HOST`` or its host name, and a status one host cannot confirm while another
  host holds the server is kept for that host alone (``server_host_status``).
"""

from __future__ import annotations

import functools
import os
import socket
import time
from dataclasses import dataclass
from pathlib import Path

__all__ = ["REMOTE_LEASE", "Holder", "current", "host", "is_alive", "parse", "start_token"]

#: Seconds a holder on another host is believed alive after its last heartbeat.
REMOTE_LEASE = 300.0


@dataclass(frozen=True, slots=True)
class Holder:
    """One process that may hold server statuses."""

    host: str
    pid: int
    start: str  # "" where the platform gives no start token

    @property
    def id(self) -> str:
        return f"{self.host}:{self.pid}:{self.start}"

    def describe(self) -> str:
        return f"pid {self.pid}" if self.host == _host() else f"pid {self.pid} on {self.host}"


def parse(holder_id: str | None) -> Holder | None:
    """The :class:`Holder` of a stored id (None for None or an id this module did not write)."""
    if not holder_id:
        return None
    parts = holder_id.rsplit(":", 2)
    if len(parts) != 3 or not parts[1].isdigit():
        return None
    return Holder(parts[0], int(parts[1]), parts[2])


@functools.cache
def _host() -> str:
    """This host's name in the catalog: ``$JIT_HOST``, else the host name (docs/team.md)."""
    return os.environ.get("JIT_HOST") or socket.gethostname() or "localhost"


def host() -> str:
    """The name this host's processes are recorded under (holders, per-host statuses)."""
    return _host()


@functools.cache
def _boot_id() -> str:
    try:
        return Path("/proc/sys/kernel/random/boot_id").read_text(encoding="ascii").strip()[:8]
    except OSError:
        return ""


def start_token(pid: int) -> str | None:
    """A token of when process ``pid`` started, ``""`` if it exists but the platform gives
    none, None if there is no such (living) process."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text(encoding="ascii", errors="replace")
    except FileNotFoundError:
        return None
    except OSError:
        stat = ""
    if stat:
        # The command name (field 2) may hold spaces and parentheses: split after the last ')'.
        fields = stat.rsplit(")", 1)[-1].split()
        if len(fields) > 19:
            if fields[0] in ("Z", "X"):  # killed, not yet reaped by its parent: dead
                return None
            return f"{_boot_id()}-{fields[19]}"
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return None
    except PermissionError:
        pass  # exists, owned by another user
    return ""


_current: Holder | None = None


def current() -> Holder:
    """This process (recomputed after a fork)."""
    global _current
    pid = os.getpid()
    if _current is None or _current.pid != pid:
        _current = Holder(_host(), pid, start_token(pid) or "")
    return _current


def is_alive(holder: Holder, heartbeat: float | None, now: float | None = None) -> bool:
    """Whether ``holder`` still runs (see the module docstring for how each host is judged)."""
    if holder.host != _host():
        return heartbeat is not None and (time.time() if now is None else now) - heartbeat <= REMOTE_LEASE
    if holder.pid == os.getpid():
        return holder.start == current().start
    token = start_token(holder.pid)
    if token is None:
        return False
    return not token or not holder.start or token == holder.start
