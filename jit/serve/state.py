"""What ``jit serve`` holds while it runs: its options and :class:`ServeState`.

:class:`ServeState` is the lifespan context of :class:`~jit.serve.server.JitServer`:
the config, catalog, embedder, client manager and compiler, the exposed selection,
and the work on them (sync, reload, compile, rank, describe) done in worker threads.
:mod:`jit.serve.server` re-exports both names.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, Protocol, TypeVar

import anyio
import anyio.to_thread

from ..catalog.approval import approve_hint, pending_report
from ..catalog.ownership import config_scope
from ..config import Config, load_config
from ..errors import ToolNotApprovedError, ToolNotFoundError
from ..models import HARNESS_SERVER
from ..pipeline import refresh_catalog, sync
from ..selection.compiler import Compiler
from ..selection.toolset import TaskContext, Tier
from ..views import describe

__all__ = ["ServeOptions", "ServeState"]

# Named as before the split, so log filters on "jit.serve.server" still see these warnings.
log = logging.getLogger("jit.serve.server")

T = TypeVar("T")


class _Notifier(Protocol):
    """What the state needs of its server (:class:`~jit.serve.server.JitServer`)."""

    async def notify_tools_changed(self) -> None: ...



@dataclass(frozen=True)
class ServeOptions:
    """How ``jit serve`` runs. ``config_path`` None means ``$JIT_CONFIG`` or ``./config.json``."""

    config_path: Path | None = None
    transport: Literal["stdio", "http"] = "stdio"
    host: str = "127.0.0.1"
    port: int = 8000
    #: Expose this shard's compiled Full tier in ``tools/list`` (with ``task``).
    expose_shard: str | None = None
    task: str | None = None
    budget: int | None = None
    #: Serve HTTP on a host that is not loopback (then ``$JIT_SERVE_TOKEN`` is required; jit/serve/httpguard.py).
    allow_remote: bool = False
    #: Host names accepted in the Host/Origin headers besides loopback and the bound host.
    allowed_hosts: tuple[str, ...] = ()


def _selection_key(toolset: Any) -> tuple[tuple[str, str], ...]:
    """What a client sees of an exposed selection: names and definitions of the Full tier."""
    return tuple((s.name, s.tool.definition_hash) for s in toolset.tier(Tier.FULL) if s.server != HARNESS_SERVER)


class ServeState:
    """Everything ``jit serve`` holds for its lifetime; the lifespan context of the server."""

    def __init__(self, server: _Notifier, options: ServeOptions, config: Config, store: Any, embedder: Any,
                 manager: Any, spawn: Callable[..., Any]) -> None:
        self.server = server
        #: Starts a background task in the server's lifespan task group.
        self.spawn = spawn
        self.options = options
        self.config = config
        self.store = store
        self.embedder = embedder
        self.manager = manager
        self.compiler: Any = None
        #: The compiled selection of ``--expose-shard`` (None without it).
        self.exposed: Any = None
        #: The latest selection: the exposed one, else the last ``compile_tools`` result.
        self.selection: Any = None
        self.ready = False
        self._lock = anyio.Lock()  # one reload / re-sync at a time
        #: While a reload runs, discoveries land here instead of starting a background re-sync.
        self._discovered: dict[str, Any] | None = None

    # ---------------------------------------------------------------- blocking work

    async def blocking(self, fn: Callable[..., T], *args: Any) -> T:
        """Run ``fn`` in a worker thread (compiling, ranking, embedding, analysis)."""
        return await anyio.to_thread.run_sync(lambda: fn(*args))

    def _new_compiler(self) -> Any:
        return Compiler(self.store, self.config, self.embedder)

    def close_compiler(self) -> None:
        """Release the compiler's resources (its Datalog engine thread)."""
        close = getattr(self.compiler, "close", None)
        if callable(close):
            close()

    # ---------------------------------------------------------------- catalog

    def tools_changed(self, server: str, result: Any) -> None:
        """The client manager's ``on_tools_changed``: runs in the upstream's task, so stays short."""
        if self._discovered is not None:
            self._discovered[server] = result  # reload() analyzes and embeds these itself
        elif self.ready:
            self.warn_changed(server, result)
            self.spawn(self.on_tools_changed, server, result)

    def warn_changed(self, server: str, result: Any) -> None:
        """A warning on stderr for each tool a discovery found with a changed definition (rug pulls)."""
        waiting = set(getattr(result, "awaiting_approval", ()))
        for name, fields in sorted(getattr(result, "changes", {}).items()):
            self._warn_definition(server, name, fields, name in waiting, approve_hint(server, name))

    def _warn_definition(self, server: str, tool: str, fields: list[str], waiting: bool, hint: str) -> None:
        what = ", ".join(fields) or "definition"
        if not waiting:
            log.warning("tool %s/%s changed its definition (%s) back to an approved one", server, tool, what)
            return
        effect = "not served (security.pin_definitions)" if self.config.security.pin_definitions else \
            "kept out of the Full tier"
        log.warning("tool %s/%s changed its definition (%s) and awaits approval: %s; %s",
                    server, tool, what, effect, hint)

    async def sync(self) -> dict[str, Any]:
        """The ``reload()`` body: :func:`jit.pipeline.sync` on the running manager, its catalog work in a
        worker thread; then a warning per changed definition, and the report as the tool returns it."""
        # Servers (re)connected by apply_config reported their first discovery through the callback.
        report = await sync(self.config, self.store, self.embedder, manager=self.manager,
                            discovered=self._discovered)
        for name, change in report.changes.items():
            self.warn_changed(name, change)
        return {
            "servers": [
                {"server": r.name, "status": r.status.value, "last_error": r.last_error}
                for r in report.servers
            ],
            "changes": {
                name: {"added": c.added, "changed": c.changed, "removed": c.removed,
                       "definition_changes": c.changes, "awaiting_approval": c.awaiting_approval}
                for name, c in report.changes.items()
                if c.touched
            },
            "removed_servers": report.removed_servers,
            "kept_servers": report.kept_servers,
            "embedded": report.embedding.embedded if report.embedding else 0,
            "analyzed": report.analysis.analyzed if report.analysis else 0,
        }

    async def start(self) -> None:
        """First sync and compiler; the exposed selection when asked for."""
        await self.sync()
        # Changes the manager's first discovery found, or an earlier `jit sync`: still unreviewed.
        for p in pending_report(self.store):
            self._warn_definition(p["server"], p["tool"], p["changed"], True, approve_hint(p["server"], p["tool"]))
        self.compiler = await self.blocking(self._new_compiler)
        if self.options.expose_shard is not None:
            self.exposed = self.selection = await self.compile(
                self.options.expose_shard, self.options.task or "", self.options.budget
            )
        self.ready = True

    async def reload(self) -> dict[str, Any]:
        """Re-read the config, apply it to the connections, re-sync, recompile the exposed selection."""
        async with self._lock:
            config = load_config(self.options.config_path)
            self._discovered = {}
            try:
                await self.manager.apply_config(config)
                self.config = config
                self.store.set_scope(config_scope(config))
                report = await self.sync()
            finally:
                self._discovered = None
            fresh = await self.blocking(self._new_compiler)
            await self.blocking(self.close_compiler)
            self.compiler = fresh
            report["selection_changed"] = await self._recompile_exposed()
            return report

    async def on_tools_changed(self, server: str, result: Any) -> None:
        """An upstream changed its tools mid-session: analyze and embed them, then recompile."""
        try:
            async with self._lock:
                await self.blocking(refresh_catalog, self.store, self.config, self.embedder)
                await self._recompile_exposed()
        except Exception:  # a background task: a failure here must not take the server down
            log.exception("re-sync after a tool change on server %s failed", server)

    async def _recompile_exposed(self) -> bool:
        if self.options.expose_shard is None:
            return False
        before = _selection_key(self.exposed) if self.exposed is not None else ()
        self.exposed = self.selection = await self.compile(
            self.options.expose_shard, self.options.task or "", self.options.budget
        )
        changed = _selection_key(self.exposed) != before
        if changed:
            await self.server.notify_tools_changed()
        return changed

    # ---------------------------------------------------------------- selection

    async def compile(self, shard: str, task: str, budget: int | None) -> Any:
        """``compile()`` in a worker thread (the compiler checks shard and budget)."""
        return await self.blocking(self.compiler.compile, TaskContext(shard=shard, task=task, budget=budget))

    async def rank(self, query: str, k: int, shard: str | None) -> list[tuple[Any, float]]:
        """The compiler's ranking in a worker thread: ``(tool, score 0..1)``, best first."""
        return await self.blocking(lambda: self.compiler.rank(query, k, shard=shard))

    def describe(self, server: str, tool: str) -> dict[str, Any]:
        """One tool's record (``describe_tool``, ``jit://tools/…``); unknown ones raise ToolNotFoundError."""
        stored = self.store.tool(server, tool)
        if stored is None:
            raise ToolNotFoundError.in_catalog(server, tool, server_known=self.store.server(server) is not None)
        if self.config.security.pin_definitions and not stored.approved:
            raise ToolNotApprovedError(server=server, tool=tool)  # its text is what awaits review
        return describe(self.config, self.store, stored)
