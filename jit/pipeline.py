"""The sync pipeline: discover → store → analyze → embed, in that order.

``jit sync``, ``jit serve`` (its start and ``reload()``) and the demo all run
:func:`sync`; ``jit serve`` adds its reporting on top of the :class:`SyncReport`.
Each phase only touches what changed: discovery rewrites changed definitions,
analysis runs on tools whose definition hash has no analysis yet, embedding
on tools whose search text has no vector in the cache.

Only discovery runs on the event loop (it is the client manager's I/O); the
catalog writes, analysis and embedding run in a worker thread, so a caller
that keeps serving meanwhile (``jit serve`` proxying calls) is not stalled
by a model.

A ``progress`` callable (:mod:`jit.progress`) hears of three steps in turn:
``discover`` (servers settled, connected or failed), ``analyze`` (tools, per
batch) and ``embed`` (texts the model embeds, per chunk), with ``model`` (loading
the embedding model, :func:`~jit.embedding.protocol.load_model`) before ``embed`` when
there is something to embed and the model is not loaded yet.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import anyio
import anyio.to_thread

from .analysis.analyze import AnalyzeReport, analyze_pending, make_analyzer
from .analysis.offline_analyzer import ToolAnalyzer
from .catalog.embedding_pass import EmbedReport, embed_ahead, embed_pending
from .catalog.ownership import config_identity, differing_targets
from .catalog.store import Store
from .catalog.store_servers import Reconciled
from .client.manager import ClientManager, raise_catalog_error
from .config import Config
from .embedding.protocol import Embedder
from .models import HARNESS_SERVER, ServerRecord, ServerStatus, SyncResult
from .progress import ProgressCallback, Step

__all__ = ["SyncReport", "prune_unconfigured", "refresh_catalog", "sync", "sync_harness_tools"]

#: Transport recorded for the pseudo-server holding available_tools.json's harness tools.
HARNESS_TRANSPORT = "harness"


@dataclass
class SyncReport:
    """What one sync did, per phase."""

    servers: list[ServerRecord] = field(default_factory=list)
    changes: dict[str, SyncResult] = field(default_factory=dict)
    removed_servers: list[str] = field(default_factory=list)
    #: Servers this config does not configure, kept because another config does: server -> those configs.
    kept_servers: dict[str, list[str]] = field(default_factory=dict)
    #: Servers this config does not configure, kept because no config is recorded for them.
    unowned_servers: list[str] = field(default_factory=list)
    #: Server names another config sharing the catalog gives to something else: server -> those configs.
    conflicting_servers: dict[str, list[str]] = field(default_factory=dict)
    analysis: AnalyzeReport | None = None
    embedding: EmbedReport | None = None


def sync_harness_tools(store: Store, config: Config) -> SyncResult:
    """Mirror available_tools.json's harness tools into the catalog (always online).

    With no harness tools and none in the catalog, no ``harness`` server is recorded: a
    row with no tools would only show up in ``jit servers`` as something to wonder about."""
    tools = [t.to_tool() for t in config.available_tools.tools]
    if not tools and store.server(HARNESS_SERVER, everything=True) is None:
        return SyncResult(HARNESS_SERVER)
    store.ensure_server(HARNESS_SERVER, HARNESS_TRANSPORT)
    # No process holds it: the harness's tools are there as long as the harness runs.
    store.set_server_status(HARNESS_SERVER, ServerStatus.CONNECTED, hold=False)
    return store.sync_tools(HARNESS_SERVER, tools)


def prune_unconfigured(store: Store, config: Config, *, forget_foreign: bool = False) -> Reconciled:
    """Claim the config's servers; forget those only this config configured and no longer does.

    Servers another config configures (or that no config claims yet) are kept and
    listed in the result; ``forget_foreign`` forgets every server this config does
    not configure. See :mod:`jit.catalog.ownership`.
    """
    return store.reconcile_owner(config_identity(config), config.servers, forget_foreign=forget_foreign)


def refresh_catalog(
    store: Store,
    config: Config,
    embedder: Embedder,
    analyzer: ToolAnalyzer | None = None,
    *,
    progress: ProgressCallback | None = None,
) -> tuple[AnalyzeReport, EmbedReport]:
    """Analyze and embed whatever discovery left pending (no network needed).

    The model begins embedding while the analysis runs (:func:`~jit.catalog.embedding_pass.embed_ahead`):
    the two are CPU work of different kinds, and the analysis leaves a core the model uses.
    The steps are still reported one after the other."""
    analyzer = analyzer or make_analyzer(config)
    ahead = embed_ahead(store, embedder)
    try:
        analysis = analyze_pending(store, analyzer, progress=progress)
        store.prune_analysis()
        embedding = embed_pending(store, embedder, progress=progress, ahead=ahead)
    finally:
        if ahead is not None:
            ahead.close()  # a failed analysis leaves it running; after the pass this is a no-op
    return analysis, embedding


async def sync(
    config: Config,
    store: Store,
    embedder: Embedder,
    *,
    analyzer: ToolAnalyzer | None = None,
    manager: ClientManager | None = None,
    progress: ProgressCallback | None = None,
    forget_foreign: bool = False,
    discovered: Mapping[str, SyncResult] | None = None,
) -> SyncReport:
    """Bring the catalog up to date with the configured servers.

    With ``manager`` given (already started, e.g. by ``jit serve``) it is
    asked to re-discover; otherwise a manager is started for the duration of
    the sync and closed after. ``discovered`` holds discoveries the caller's
    manager reported through its ``on_tools_changed`` since the last sync
    (servers ``apply_config`` reconnected); it is read after re-discovery, so
    the caller may keep filling it meanwhile. Servers that fail stay in the
    catalog with their status and last error; their cached tools remain
    selectable. Servers of other configs sharing the catalog are left alone
    unless ``forget_foreign``. A SQLite catalog found damaged (:meth:`Store.check_intact`)
    is a :class:`~jit.errors.CatalogDamagedError` before anything is written; a catalog that
    cannot take a server's tools (a full disk) raises its :class:`~jit.errors.StoreError`, no
    server blamed. ``progress`` is called on the event loop during discovery and from a worker
    thread during analysis and embedding.
    """
    def claim() -> tuple[Reconciled, SyncResult]:
        store.check_intact()  # a damaged file is not written into (jit doctor rebuilds it)
        reconciled = prune_unconfigured(store, config, forget_foreign=forget_foreign)
        return reconciled, sync_harness_tools(store, config)

    report = SyncReport()
    reconciled, report.changes[HARNESS_SERVER] = await anyio.to_thread.run_sync(claim)
    report.removed_servers, report.kept_servers = reconciled.removed, reconciled.kept
    report.unowned_servers = reconciled.unowned
    if reconciled.shared:
        report.conflicting_servers = await anyio.to_thread.run_sync(differing_targets, config, reconciled.shared)
    enabled = sum(c.enabled for c in config.servers.values()) - len(config.unresolved())  # the ones started
    with Step(progress, "discover", "discovering tools", enabled, unit="servers") as step:
        if manager is not None:
            report.changes.update(await manager.refresh())
            report.changes.update(discovered or {})
        else:
            report.changes.update(await _discover(config, store, step))

    def finish() -> tuple[AnalyzeReport, EmbedReport, list[ServerRecord]]:
        analysis, embedding = refresh_catalog(store, config, embedder, analyzer, progress=progress)
        return analysis, embedding, store.servers()

    report.analysis, report.embedding, report.servers = await anyio.to_thread.run_sync(finish)
    return report


async def _discover(config: Config, store: Store, step: Step) -> dict[str, SyncResult]:
    """Connect every enabled server once, counting each as it settles (connected and listed,
    or failed), and close them all; what each discovery changed, by server."""
    seen: dict[str, SyncResult] = {}

    def on_change(server: str, result: SyncResult) -> None:
        seen[server] = result

    async def settle(up: Any) -> None:
        await up.settled.wait()
        step.advance()

    # The manager reports every discovery (the initial one included) through the callback;
    # ClientManager.start() is launch() and a wait on each upstream, here counted as they end.
    manager = ClientManager(config, store, on_tools_changed=on_change)
    try:
        launched = manager.launch()  # registers each server: a catalog refusing that write raises here
        async with anyio.create_task_group() as group:
            for up in launched:
                group.start_soon(settle, up)
    finally:
        await manager.close()
    raise_catalog_error(launched)  # a catalog that could not take a server's tools: the sync's error
    return seen
