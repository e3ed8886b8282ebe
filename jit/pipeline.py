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
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import anyio.to_thread

from .analysis.analyze import AnalyzeReport, ToolAnalyzer, analyze_pending, make_analyzer
from .catalog.embed import Embedder, EmbedReport, embed_pending
from .catalog.ownership import Reconciled, config_identity
from .catalog.store import Store
from .client.manager import ClientManager
from .config import Config
from .models import HARNESS_SERVER, ServerRecord, ServerStatus, SyncResult

__all__ = ["SyncReport", "prune_unconfigured", "refresh_catalog", "sync", "sync_harness_tools"]

#: Transport recorded for the pseudo-server holding available_tools.json's harness tools.
HARNESS_TRANSPORT = "harness"

Progress = Callable[[str, dict[str, Any]], None]


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
    progress: Progress | None = None,
) -> tuple[AnalyzeReport, EmbedReport]:
    """Analyze and embed whatever discovery left pending (no network needed)."""
    analyzer = analyzer or make_analyzer(config)
    if progress:
        progress("analyze", {"pending": len(store.pending_analysis()), "analyzer": analyzer.name})
    analysis = analyze_pending(store, analyzer)
    store.prune_analysis()
    if progress:
        progress("embed", {"pending": len(store.pending_embeddings()), "model": embedder.model_name})
    embedding = embed_pending(store, embedder)
    return analysis, embedding


async def sync(
    config: Config,
    store: Store,
    embedder: Embedder,
    *,
    analyzer: ToolAnalyzer | None = None,
    manager: ClientManager | None = None,
    progress: Progress | None = None,
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
    unless ``forget_foreign``. ``progress`` is called from a worker thread
    during analysis and embedding.
    """
    def claim() -> tuple[Reconciled, SyncResult]:
        reconciled = prune_unconfigured(store, config, forget_foreign=forget_foreign)
        return reconciled, sync_harness_tools(store, config)

    report = SyncReport()
    reconciled, report.changes[HARNESS_SERVER] = await anyio.to_thread.run_sync(claim)
    report.removed_servers, report.kept_servers = reconciled.removed, reconciled.kept
    report.unowned_servers = reconciled.unowned
    if progress:
        progress("discover", {"servers": len(config.servers)})
    if manager is not None:
        report.changes.update(await manager.refresh())
        report.changes.update(discovered or {})
    else:
        seen: dict[str, SyncResult] = {}

        def on_change(server: str, result: SyncResult) -> None:
            seen[server] = result

        # The manager reports every discovery (the initial one included) through the callback.
        async with ClientManager(config, store, on_tools_changed=on_change):
            pass
        report.changes.update(seen)

    def finish() -> tuple[AnalyzeReport, EmbedReport, list[ServerRecord]]:
        analysis, embedding = refresh_catalog(store, config, embedder, analyzer, progress=progress)
        return analysis, embedding, store.servers()

    report.analysis, report.embedding, report.servers = await anyio.to_thread.run_sync(finish)
    return report
