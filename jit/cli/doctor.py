"""``jit doctor``: check the catalog file, and rebuild a damaged one (jit/catalog/doctor.py)."""

from __future__ import annotations

import dataclasses
from typing import Annotated, Any

import typer

from ..catalog.approval import pending_report
from ..catalog.doctor import check_catalog, rebuild_catalog
from ..config_files import check_store_path
from ..display import markup
from ..errors import CatalogDamagedError, StoreError
from ..payloads import tool_counts
from ..progress import progress_display
from .shared import (
    ConfigOption,
    JsonOption,
    QuietOption,
    _config,
    _embedder,
    _emit_json,
    _errors,
    _open_store,
    _run,
    app,
    err,
    out,
)


@app.command("doctor")
def doctor_command(
    ctx: typer.Context,
    check_only: Annotated[
        bool, typer.Option("--check", help="Only check the catalog: exit 1 if it is damaged, change nothing.")
    ] = False,
    no_sync: Annotated[
        bool, typer.Option("--no-sync", help="After a rebuild, do not sync (the next `jit sync` rebuilds the rest "
                           "from the servers).")
    ] = False,
    quiet: QuietOption = False,
    config_file: ConfigOption = None,
    as_json: JsonOption = False,
) -> None:
    """Check the catalog file; if it is damaged (or empty), rebuild it and sync.

    The check only reads the file: SQLite's integrity check, every row, every tool vector.
    A damaged catalog is kept aside (renamed, never deleted); a new one is made from what is
    intact in it (servers, tools, analyses, usage, definition history and approvals, the
    embedding cache), and a sync then rebuilds the rest from the servers.
    """
    from ..pipeline import sync  # the MCP client SDK: only for the sync after a rebuild

    with _errors(as_json):
        config = _config(ctx, config_file)
        check_store_path(config)
        if config.store_url is not None:
            raise StoreError("jit doctor checks a SQLite catalog; a PostgreSQL catalog's storage is its server's to "
                             "check (pg_amcheck)", key="store")
        path = str(config.store_path)
        check = check_catalog(path)
        report: dict[str, Any] = {"path": path, "exists": check.exists, "intact": check.intact,
                                  "problems": check.problems, "rows": check.rows, "vectors": check.vectors,
                                  "rebuilt": None, "sync": None}
        if not check.exists or check.intact or check_only:
            _finish(report, as_json)
            if check.problems and check.sqlite:
                raise CatalogDamagedError(f"the catalog {path} is damaged ({check.problems[0]}): `jit doctor` "
                                          "without --check keeps it aside and rebuilds the catalog", path=path)
            if check.problems:
                raise StoreError(check.problems[0], path=path)
            return
        if not as_json:
            _print_check(report)
        rebuilt = rebuild_catalog(path)
        report["rebuilt"] = dataclasses.asdict(rebuilt) | {"complete": rebuilt.complete}
        if not as_json:
            _print_rebuilt(rebuilt)
        if not no_sync:
            with _open_store(config) as store:
                with progress_display(err, prefix="jit doctor", quiet=quiet or as_json) as progress:
                    synced = _run(sync(config, store, _embedder(config), progress=progress))
                counts = tool_counts(store)
                waiting = [f"{p['server']}/{p['tool']}" for p in pending_report(store)]
            report["sync"] = {
                "servers": {r.name: {"status": r.status.value, "tools": counts.get(r.name, 0)}
                            for r in synced.servers},
                "unreachable": sorted(r.name for r in synced.servers if r.name in config.servers
                                      and config.servers[r.name].enabled and not r.status.online),
                "tools": sum(counts.values()),
                "awaiting_approval": waiting,
            }
        _finish(report, as_json, printed=True)


def _print_check(report: dict[str, Any]) -> None:
    out.print(f"[bold red]catalog {markup(report['path'])} is damaged[/]:", soft_wrap=True)
    for problem in report["problems"]:
        out.print(f"  {markup(problem)}", soft_wrap=True)


def _print_rebuilt(rebuilt: Any) -> None:
    out.print(f"kept the damaged file as {markup(rebuilt.aside)}", soft_wrap=True)
    out.print(f"rebuilt {markup(rebuilt.path)} from what was intact in it:", soft_wrap=True)
    for c in rebuilt.carried:
        lost = "how many were lost is unknown" if c.lost is None else f"{c.lost:,} lost"
        out.print(f"  {c.table}: {c.kept:,} kept" + (f", {lost}" if c.lost != 0 else ""), soft_wrap=True)
    for table in rebuilt.unreadable:
        out.print(f"  {table}: [yellow]unreadable[/], nothing kept", soft_wrap=True)
    for what, why in rebuilt.not_carried.items():
        out.print(f"  not carried: {what} ({why})", soft_wrap=True)


def _finish(report: dict[str, Any], as_json: bool, *, printed: bool = False) -> None:
    if as_json:
        _emit_json(report)
        return
    path = markup(report["path"])
    if not report["exists"]:
        out.print(f"no catalog at {path} yet: `jit sync` makes one", soft_wrap=True)
    elif report["intact"]:
        rows = report["rows"]
        vectors = "no vectors" if report["vectors"] is None else f"{report['vectors']:,} vectors"
        out.print(f"catalog {path} is intact: {rows.get('tools', 0):,} tools, {vectors}, "
                  f"{rows.get('usage', 0):,} usage rows, {rows.get('tool_approvals', 0):,} approvals read back",
                  soft_wrap=True)
    elif not printed:
        _print_check(report)
    synced = report["sync"]
    if synced is not None:
        line = f"synced: {synced['tools']:,} tools in the catalog"
        if synced["unreachable"]:
            line += (f"; not reached, their tools as the damaged catalog had them: "
                     f"{', '.join(synced['unreachable'])}")
        out.print(markup(line), soft_wrap=True)
        if synced["awaiting_approval"]:
            out.print(markup(f"{len(synced['awaiting_approval'])} awaiting approval (a changed definition, or an "
                             f"approval the damage took): {', '.join(synced['awaiting_approval'])}; `jit show "
                             "SERVER/TOOL` shows each, `jit approve SERVER/TOOL` trusts it"), soft_wrap=True)
    elif report["rebuilt"] is not None:
        out.print("not synced (--no-sync): `jit sync` rebuilds the rest from the servers", soft_wrap=True)
