"""What ``jit serve`` holds while it runs: its options and :class:`ServeState`.

:class:`ServeState` is the lifespan context of :class:`~jit.serve.server.JitServer`:
the config, catalog, embedder, client manager and compiler, the exposed selection,
and the work on them (sync, reload, compile, rank, describe) done in worker threads.

Start-up is in the background (:meth:`ServeState.start`), so the server answers
``initialize`` and ``tools/list`` at once from the cached catalog:

* the upstream connections start at once, each in its own task (a server that hangs
  delays nobody: :meth:`~jit.client.manager.ClientManager.launch`);
* the embedder and the compiler over the cached catalog are built in worker threads;
  the meta-tools that rank or compile wait for them (:meth:`ServeState.catalog_ready`),
  never for a connection or a sync;
* whenever an upstream settles its first connection or reports changed tools, what
  discovery left pending is analyzed and embedded and the exposed selection recompiled
  (one refresh for a burst of them); a change a client can see is announced with
  ``notifications/tools/list_changed``.

The selection wing (compiler, rules engine, numpy) and the sync pipeline are imported
by the work that uses them, not with this module: ``initialize`` needs none of them.
"""

from __future__ import annotations

import functools
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, Protocol, TypeVar

import anyio
import anyio.to_thread

from ..catalog.approval import pending_report
from ..catalog.ownership import config_scope, describe_differing
from ..config import Config
from ..config_files import load_config
from ..errors import (
    JitError,
    SelectionError,
    StoreError,
    ToolNotFoundError,
    approve_hint,
    jit_error_in,
)
from ..models import HARNESS_SERVER

__all__ = ["ServeOptions", "ServeState"]

# Named as before the split, so log filters on "jit.serve.server" still see these warnings.
log = logging.getLogger("jit.serve.server")
#: What the start-up is doing, at INFO (``jit serve`` shows these lines on stderr, which a client
#: keeps as its server log): what is served, when searching and compiling can start (and a
#: first-use model export, ~10 s), and which servers the first connections reached.
startup_log = logging.getLogger("jit.serve.startup")

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
    #: Expose this shard's compiled Full tier in ``tools/list``, compiled for ``task``.
    expose_shard: str | None = None
    #: The task at start (None: no task, the shard's skeleton tools); the ``set_task`` meta-tool changes it.
    task: str | None = None
    budget: int | None = None
    #: Serve HTTP on a host that is not loopback (then ``$JIT_SERVE_TOKEN`` is required; jit/serve/httpguard.py).
    allow_remote: bool = False
    #: Host names accepted in the Host/Origin headers besides loopback and the bound host.
    allowed_hosts: tuple[str, ...] = ()


def _selection_key(toolset: Any) -> tuple[tuple[str, str, bool], ...]:
    """What a client sees of an exposed selection: names, definitions and the offline note of the Full tier."""
    from ..selection.tiers import Tier

    return tuple((s.name, s.tool.definition_hash, s.offline) for s in toolset.tier(Tier.FULL)
                 if s.server != HARNESS_SERVER)


class ServeState:
    """Everything ``jit serve`` holds for its lifetime; the lifespan context of the server.

    ``embedder`` and ``compiler`` are None until :meth:`start` has built them; ``rules``
    (loaded and checked before serving) are the first compiler's."""

    def __init__(self, server: _Notifier, options: ServeOptions, config: Config, store: Any, manager: Any,
                 spawn: Callable[..., Any], *, rules: Any = None) -> None:
        self.server = server
        #: Starts a background task in the server's lifespan task group.
        self.spawn = spawn
        self.options = options
        self.config = config
        self.store = store
        self.manager = manager
        self.rules = rules
        self.embedder: Any = None
        self.compiler: Any = None
        #: The compiled selection of ``--expose-shard`` (None without it, or until first compiled).
        self.exposed: Any = None
        #: The task the exposed selection is compiled for: ``--task``, then what ``set_task`` set.
        self.task = options.task or ""
        #: The latest selection: the exposed one, else the last ``compile_tools`` result.
        self.selection: Any = None
        #: The first refresh has run: the compiler and embedder built, the exposed selection compiled.
        self.ready = False
        #: When the server began serving (``time.monotonic()``): the upstreams' first attempts start then.
        self.began = time.monotonic()
        self._catalog = anyio.Event()  # set once the compiler and embedder exist, or building them failed
        self._failure: JitError | None = None
        self._stale = anyio.Event()  # an upstream settled or changed: refresh and recompile
        self._refreshing = False
        self._refreshed = anyio.Event()  # set (and replaced) after each refresh
        self._launched: list[Any] = []
        self._lock = anyio.Lock()  # one reload / re-sync at a time
        #: While a reload runs, discoveries land here instead of starting a background re-sync.
        self._discovered: dict[str, Any] | None = None
        #: (server, tool) -> the definition hash last warned about: two discoveries racing over one
        #: change (an upstream's list_changed and a background re-sync) report it once.
        self._warned: dict[tuple[str, str], str | None] = {}

    # ---------------------------------------------------------------- blocking work

    async def blocking(self, fn: Callable[..., T], *args: Any) -> T:
        """Run ``fn`` in a worker thread (compiling, ranking, embedding, analysis)."""
        return await anyio.to_thread.run_sync(lambda: fn(*args))

    def _new_compiler(self, rules: Any = None) -> Any:
        from ..selection.compiler import Compiler

        return Compiler(self.store, self.config, self.embedder, rules=rules)

    def close_compiler(self) -> None:
        """Release the compiler's resources (its Datalog engine thread)."""
        close = getattr(self.compiler, "close", None)
        if callable(close):
            close()

    # ---------------------------------------------------------------- start-up

    async def start(self) -> None:
        """The start-up, in the background of a server that is already answering.

        Connects every upstream (each on its own), claims the catalog for this config,
        builds the embedder and the compiler over the cached catalog, compiles the exposed
        selection, then refreshes after each upstream's first connection and each tool
        change until the server stops. A failure to build the compiler or embedder is
        logged and answered by every meta-tool that needs them (:meth:`catalog_ready`); one
        the catalog caused by being unreachable (a PostgreSQL server down or restarting) is
        tried again, every few seconds up to 30, until the catalog answers."""
        began = time.perf_counter()
        self._launched = self.manager.launch()
        self._announce()
        for up in self._launched:
            self.spawn(self._settled, up)
        if self._launched:
            self.spawn(self._report_connections, list(self._launched))
        delay = 2.0
        while True:
            try:
                await self.blocking(self._claim)
                await self._build()
                count = await self.blocking(self.store.tool_count)
            except Exception as exc:  # a background task: report it, keep serving what does not need it
                found = jit_error_in(exc)
                self._failure = found or JitError(f"jit serve failed to build its compiler: {exc!r}")
                again = isinstance(found, StoreError) and self.store.unreachable(found)
                if found is None:
                    log.exception("jit serve failed to build its compiler")
                else:
                    log.error("jit serve cannot rank or compile%s: %s",
                              f" until its catalog answers (trying again in {delay:g} s)" if again else "",
                              found.message)
                self._catalog.set()  # meanwhile, every meta-tool that needs them answers the error
                if not again:
                    return
                if self.compiler is not None:  # built before its catalog read failed: built again
                    await self.blocking(self.close_compiler)
                    self.compiler = None
                await anyio.sleep(delay)
                delay = min(delay * 2, 30.0)
                continue
            self._failure = None
            startup_log.info("ready to search and compile: %s tools in the catalog (model and compiled view loaded "
                             "in %.1fs)", f"{count:,}", time.perf_counter() - began)
            self._catalog.set()
            break
        self._stale.set()  # the first refresh: what the cache left pending, the first exposed compile
        if self.options.expose_shard is not None and self.store.dialect == "postgresql":
            self.spawn(self._watch_catalog)
        await self._refresher()

    def _announce(self) -> None:
        """The first start-up line: what is served, for which config, and what starts in the background."""
        if self.options.transport == "http":
            host = f"[{self.options.host}]" if ":" in self.options.host else self.options.host
            where = f"Streamable HTTP at http://{host}:{self.options.port}/mcp"
        else:
            where = "stdio"
        unresolved = self.config.unresolved()
        enabled = sum(1 for cfg in self.config.servers.values() if cfg.enabled) - len(unresolved)
        startup_log.info("serving MCP on %s (config %s); connecting to %d server%s and loading the embedding model "
                         "in the background", where, self.config.path, enabled, "" if enabled == 1 else "s")
        for name, problem in unresolved.items():  # served as unavailable: a call to it says this
            log.warning("server %s is not started: %s", name, problem)

    async def _report_connections(self, launched: list[Any]) -> None:
        """One line once every server's first connection attempt has ended: how many were reached,
        and why each other one was not (its status and last error, as ``jit servers`` shows them)."""
        for up in launched:
            await up.settled.wait()
        missed = [up.name for up in launched if not up.ever_connected]
        line = f"servers: {len(launched) - len(missed)} of {len(launched)} connected"
        if missed:
            records = {r.name: r for r in await self.blocking(self.store.servers)}
            why = [f"{name} ({records[name].status.value}: {(records[name].last_error or '').splitlines()[0][:200]})"
                   if name in records and records[name].last_error else name for name in missed]
            line += "; not connected: " + ", ".join(why)
        startup_log.info("%s", line)

    async def _watch_catalog(self) -> None:
        """A catalog shared with other hosts (PostgreSQL, docs/team.md) changes under this process:
        on each announced catalog change (not tool calls), refresh and recompile the exposed
        selection, so clients get ``tools/list_changed`` without waiting for their next request."""
        while True:
            try:
                changed = await anyio.to_thread.run_sync(functools.partial(
                    self.store.wait_for_change, 5.0, usage=False), abandon_on_cancel=True)
            except JitError as exc:  # the server went away: say so, try again later
                log.warning("jit serve stopped hearing of catalog changes: %s", exc.message)
                await anyio.sleep(5.0)
                continue
            if changed:  # this process's own writes included: one more refresh finds nothing to do
                self._stale.set()

    def _claim(self) -> None:
        """This config's servers claimed, the harness tools mirrored, pending definition changes
        warned about: the catalog as this config sees it, before anything is compiled on it."""
        from ..pipeline import prune_unconfigured, sync_harness_tools

        prune_unconfigured(self.store, self.config)
        sync_harness_tools(self.store, self.config)
        # Changes an earlier `jit sync` or serve found: still unreviewed.
        for p in pending_report(self.store):
            self._warn_definition(p["server"], p["tool"], p["changed"], True, approve_hint(p["server"], p["tool"]))

    async def _build(self) -> None:
        """The embedder and the compiler, and the compiler's view of the cached catalog, in
        worker threads side by side (loading the model and reading the catalog overlap)."""
        from ..embedding.factory import embedder_from_config
        from ..embedding.protocol import FIRST_EXPORT_NOTE, exports_first

        # A serving process keeps what it loads for its lifetime, and a bulk pass leaves OpenVINO's
        # libraries and thread pools behind (docs/benchmarks.md measures it): its syncs run the
        # bulk model in a child process (jit/embedding/bulk_process.py).
        self.embedder = embedder_from_config(self.config.embedding, bulk_in_child=True)  # loads nothing yet
        if await self.blocking(exports_first, self.embedder):
            startup_log.info("loading the embedding model: %s", FIRST_EXPORT_NOTE)
        self.compiler = await self.blocking(self._new_compiler, self.rules)
        async with anyio.create_task_group() as tg:
            tg.start_soon(self.blocking, lambda: self.embedder.dimension)  # the model, before the first query
            tg.start_soon(self.blocking, self.compiler.catalog.snapshot)

    async def catalog_ready(self) -> None:
        """Wait for the compiler and embedder over the cached catalog (what ranking and compiling
        need), not for connections or the sync; raise the error that kept them from being built."""
        await self._catalog.wait()
        if self._failure is not None:
            raise self._failure

    async def _settled(self, up: Any) -> None:
        """After an upstream's first connection attempt (connected or failed): its status changed
        what a selection shows (offline or not), so refresh."""
        await up.settled.wait()
        self._stale.set()

    async def _refresher(self) -> None:
        """Refresh and recompile whenever an upstream settled or changed its tools; a burst of
        them (every upstream connecting at start) is one refresh."""
        while True:
            await self._stale.wait()
            self._stale = anyio.Event()  # what is set from here on calls for another refresh
            self._refreshing = True
            try:
                async with self._lock:
                    await self.blocking(self._refresh)
                    await self._recompile_exposed()
            except Exception:  # a background task: a failure here must not take the server down
                log.exception("re-sync after an upstream change failed")
            finally:
                self._refreshing = False
                self.ready = True
                done, self._refreshed = self._refreshed, anyio.Event()
                done.set()

    async def wait_started(self) -> None:
        """Wait until every upstream's first connection attempt has ended (each bounded by its
        ``timeout``) and the refresh after it has run: the state a synchronous start used to
        serve from. For tests and benchmarks; serving never waits for it."""
        await self.catalog_ready()  # start() has launched the upstreams by then
        for up in self._launched:
            await up.settled.wait()
        while not self.ready or self._refreshing or self._stale.is_set():
            await self._refreshed.wait()

    def _refresh(self) -> None:
        """Analyze and embed whatever discovery left pending (nothing when nothing changed)."""
        from ..pipeline import refresh_catalog

        refresh_catalog(self.store, self.config, self.embedder)

    # ---------------------------------------------------------------- catalog

    def tools_changed(self, server: str, result: Any) -> None:
        """The client manager's ``on_tools_changed``: runs in the upstream's task, so stays short."""
        if self._discovered is not None:
            self._discovered[server] = result  # reload() analyzes and embeds these itself
            return
        self.warn_changed(server, result)
        self._stale.set()

    def warn_changed(self, server: str, result: Any) -> None:
        """A warning on stderr for each tool a discovery found with a changed definition (rug pulls)."""
        waiting = set(getattr(result, "awaiting_approval", ()))
        for name, fields in sorted(getattr(result, "changes", {}).items()):
            self._warn_definition(server, name, fields, name in waiting, approve_hint(server, name))

    def _warn_definition(self, server: str, tool: str, fields: list[str], waiting: bool, hint: str) -> None:
        stored = self.store.tool(server, tool)
        digest = stored.definition_hash if stored is not None else None
        if digest is not None and self._warned.get((server, tool)) == digest:
            return
        self._warned[(server, tool)] = digest
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
        from ..pipeline import sync

        # Servers (re)connected by apply_config reported their first discovery through the callback.
        report = await sync(self.config, self.store, self.embedder, manager=self.manager,
                            discovered=self._discovered)
        for name, change in report.changes.items():
            self.warn_changed(name, change)
        for line in describe_differing(report.conflicting_servers):
            log.warning("%s", line)
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
            "conflicting_servers": report.conflicting_servers,
            "embedded": report.embedding.embedded if report.embedding else 0,
            "analyzed": report.analysis.analyzed if report.analysis else 0,
        }

    async def reload(self) -> dict[str, Any]:
        """Re-read the config, apply it to the connections, re-sync, recompile the exposed selection.

        During start-up it waits for the compiler (the sync embeds with its embedder); a server
        still on its first connection attempt is left to it, as the background sync leaves it."""
        await self.catalog_ready()
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

    async def _recompile_exposed(self) -> bool:
        """Compile the exposed selection for :attr:`task`; announce it when what clients see changed."""
        if self.options.expose_shard is None:
            return False
        before = _selection_key(self.exposed) if self.exposed is not None else ()
        self.exposed = self.selection = await self.compile(self.options.expose_shard, self.task, self.options.budget)
        changed = _selection_key(self.exposed) != before
        if changed:
            await self.server.notify_tools_changed()
        return changed

    async def set_task(self, task: str) -> tuple[Any, bool]:
        """The ``set_task`` meta-tool: compile the exposed shard for ``task`` and make it the exposed
        selection, announced with ``tools/list_changed`` when the tools differ. The shard stays the one
        ``--expose-shard`` named: it is the role the session acts for, which its client may not change.

        Returns the new selection and whether the exposed tools changed. A task that fails to compile
        leaves the previous task and selection in place."""
        if self.options.expose_shard is None:
            raise SelectionError("set_task needs jit serve --expose-shard: there is no exposed tool set")
        await self.catalog_ready()
        async with self._lock:  # not between a reload's sync and its recompile, nor a background refresh
            previous = self.task
            self.task = task
            try:
                changed = await self._recompile_exposed()
            except BaseException:
                self.task = previous
                raise
            return self.exposed, changed

    # ---------------------------------------------------------------- selection

    async def compile(self, shard: str, task: str, budget: int | None) -> Any:
        """``compile()`` in a worker thread (the compiler checks shard and budget), for the session's
        role (:meth:`acting_for`)."""
        from ..selection.task import TaskContext

        context = TaskContext(shard=self.acting_for(shard) or shard, task=task, budget=budget)
        await self.catalog_ready()
        return await self.blocking(self.compiler.compile, context)

    def acting_for(self, shard: str | None) -> str | None:
        """The shard a meta-tool ranks or compiles for: with ``--expose-shard`` the session acts for
        that role, whose policy decides what the model may see, so another shard (whose tools the
        role may be denied) is refused with a :class:`~jit.errors.SelectionError`, and none means it."""
        role = self.options.expose_shard
        if role is None or shard is None or shard == role:
            return role or shard
        raise SelectionError(f"this session acts for the {role!r} role (jit serve --expose-shard {role}): "
                             f"it cannot search or compile tools for {shard!r}; omit shard or pass {role!r}",
                             shard=shard, role=role)

    async def check_allowed(self, server: str, tool: str) -> None:
        """The role check of every proxied call and description (jit/serve/proxy.py): with
        ``--expose-shard``, the session acts for that role, and a tool its policy denies is refused
        (``ToolDeniedError``) before anything is sent. Without it there is no role to check."""
        shard = self.options.expose_shard
        if shard is None:
            return
        await self.catalog_ready()
        await self.blocking(self.compiler.check_allowed, shard, server, tool)

    def tool_named(self, name: str) -> tuple[str, str] | None:
        """``(server, tool)`` of the catalog tool a tool set names ``name`` (``server__tool``, or the
        hash a collision gave it), on the compiler's newest snapshot; None if none is, or the
        compiler has not built one yet."""
        compiler = self.compiler
        view = compiler.catalog.published if compiler is not None else None
        if view is None:
            return None
        t = compiler.catalog.tool_named(view, name)
        return view.heads[t] if t is not None else None

    async def rank(self, query: str, k: int, shard: str | None) -> list[tuple[Any, float, str]]:
        """The compiler's ranking in a worker thread: ``(tool, score 0..1, rendered name)``, best
        first; the name is the one a tool set gives the tool (a hash where two names collide)."""
        shard = self.acting_for(shard)
        await self.catalog_ready()
        return await self.blocking(lambda: self.compiler.rank_named(query, k, shard=shard))

    async def describe(self, server: str, tool: str) -> dict[str, Any]:
        """One tool's record as the model may read it (``describe_tool``, ``jit://tools/…``): a tool
        the session's role may not have is refused as a call to it is (:meth:`check_allowed`), and a
        flagged tool's text is withheld (:func:`~jit.payloads.withhold_flagged`); unknown ones raise
        ToolNotFoundError."""
        from ..payloads import described_for_model

        stored = self.store.tool(server, tool)
        if stored is None:
            raise ToolNotFoundError.in_catalog(server, tool, server_known=self.store.server(server) is not None)
        await self.check_allowed(server, tool)
        return await self.blocking(described_for_model, self.config, self.store, stored)  # off the event loop
