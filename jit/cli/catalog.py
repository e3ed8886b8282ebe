"""``jit sync``, ``jit servers`` and ``jit tools``: filling the catalog and listing what it holds."""

from __future__ import annotations

import dataclasses
from typing import Annotated, Any

import typer
from rich.table import Table

from ..catalog.approval import pending_report
from ..catalog.ownership import describe_differing, describe_kept
from ..catalog.store_servers import Reconciled
from ..config import Config
from ..display import markup
from ..errors import CatalogDamagedError, JitError, ServerUnavailableError, ToolNotFoundError
from ..models import HARNESS_SERVER
from ..payloads import analysis_of, server_rows, tool_counts
from ..progress import Step, progress_display
from .shared import (
    EXIT_CODES,
    ConfigOption,
    JsonOption,
    QuietOption,
    _ago,
    _check_names,
    _config,
    _embedder,
    _emit_json,
    _errors,
    _first_line,
    _open_store,
    _run,
    app,
    err,
    out,
)

# Heavy wings are imported inside the commands that run them (the selection wing, the MCP
# SDK): see the note on imports in jit/cli/shared.py, which "the top" below refers to.


# --------------------------------------------------------------------------- sync


@app.command("sync")
def sync_command(
    ctx: typer.Context,
    strict: Annotated[
        bool, typer.Option("--strict", help="Exit with code 4 when an enabled server could not be reached.")
    ] = False,
    prune_foreign: Annotated[
        bool, typer.Option("--prune-foreign", help="Also forget servers this config does not configure, even "
                           "those another config sharing the catalog configures.")
    ] = False,
    quiet: QuietOption = False,
    config_file: ConfigOption = None,
    as_json: JsonOption = False,
) -> None:
    """Connect to every configured server, discover its tools, analyze and embed them.

    Servers that cannot be reached keep their cached tools (marked offline);
    the summary shows each server's status and what changed. Servers of other
    configs sharing the catalog are kept (see --prune-foreign).
    """
    from ..pipeline import sync  # the MCP client SDK: see the note on imports at the top

    with _errors(as_json):
        config = _config(ctx, config_file)
        with _open_store(config) as store:
            embedder = _embedder(config)
            with progress_display(err, prefix="jit sync", quiet=quiet or as_json) as progress:
                report = _run(sync(config, store, embedder, progress=progress, forget_foreign=prune_foreign))
                with Step(progress, "view", "preparing the compiled view", None):
                    view_error = _prepare_view(config, store, embedder)
            counts = tool_counts(store)
            waiting = pending_report(store)
        rows = []
        for rec in report.servers:
            change = report.changes.get(rec.name)
            if rec.name == HARNESS_SERVER and not counts.get(rec.name) and not (change and change.removed):
                continue  # no harness tools now, none removed by this sync: nothing to report
            rows.append({
                "server": rec.name,
                "transport": rec.transport,
                "status": rec.status.value,
                "tools": counts.get(rec.name, 0),
                "added": list(change.added) if change else [],
                "changed": list(change.changed) if change else [],
                "removed": list(change.removed) if change else [],
                "definition_changes": dict(change.changes) if change else {},
                "last_error": rec.last_error,
                "reached": rec.status.online,
            })
        analysis = dataclasses.asdict(report.analysis) if dataclasses.is_dataclass(report.analysis) else None
        embedding = dataclasses.asdict(report.embedding) if report.embedding is not None else None
        unreachable = [r["server"] for r in rows if not r["reached"] and r["status"] != "disabled"]
        if as_json:
            _emit_json({"servers": rows, "removed_servers": report.removed_servers,
                        "kept_servers": report.kept_servers, "unowned_servers": report.unowned_servers,
                        "conflicting_servers": report.conflicting_servers,
                        "analysis": analysis,
                        "embedding": embedding, "unreachable": unreachable, "awaiting_approval": waiting,
                        "compiled_view": {"prepared": view_error is None, "error": view_error}})
        else:
            table = Table(title="jit sync", title_justify="left")
            for col in ("server", "sync", "tools", "added", "changed", "removed", "last error"):
                table.add_column(col, justify="right" if col in ("tools", "added", "changed", "removed") else "left")
            for r in rows:
                table.add_row(markup(r["server"]), "[green]ok[/]" if r["reached"] else _status(r["status"]),
                              str(r["tools"]), str(len(r["added"])), str(len(r["changed"])), str(len(r["removed"])),
                              markup(_first_line(r["last_error"] or "", 60)))
            out.print(table)
            _print_definition_changes(rows, waiting, config)
            if report.removed_servers:
                out.print(f"forgot servers no longer configured: {markup(', '.join(report.removed_servers))}")
            for line in describe_kept(Reconciled(report.removed_servers, report.kept_servers, report.unowned_servers)):
                out.print(markup(line))
            if embedding:
                out.print(f"embedding: {embedding['embedded']} embedded, {embedding['cached']} from cache"
                          + (" (model changed: everything re-embedded)" if embedding.get("model_changed") else ""))
            if analysis:
                out.print("analysis: " + markup(", ".join(f"{k} {v}" for k, v in analysis.items()
                                                           if isinstance(v, (int, float, str)) and v != "")))
        if not as_json:
            for line in describe_differing(report.conflicting_servers):
                err.print(f"[yellow]warning:[/] {markup(line)}")
        if view_error is not None and not as_json:
            err.print(f"[yellow]warning:[/] the compiled view was not prepared ({markup(view_error)}); "
                      "the first compile will build it")
        if strict and unreachable:
            if not as_json:
                err.print(f"unreachable: {markup(', '.join(unreachable))}")
            raise typer.Exit(EXIT_CODES[ServerUnavailableError])


def _prepare_view(config: Config, store: Any, embedder: Any) -> str | None:
    """Build the compiled view a compile needs (and its file beside the catalog), so the first
    ``jit compile`` after a sync does not: None, or why it could not be built (a rule error
    is reported by the compile that needs the rules; the sync itself is done)."""
    from ..selection.compiler import Compiler  # the selection wing: see the note on imports at the top

    try:
        with Compiler(store, config, embedder) as compiler:
            compiler.prepare()
    except CatalogDamagedError:
        raise  # not the view's problem: the catalog the sync just wrote cannot be read back
    except JitError as exc:
        return str(exc)
    return None


def _print_definition_changes(rows: list[dict[str, Any]], waiting: list[dict[str, Any]], config: Config) -> None:
    """One line per tool whose definition this sync found changed, then what awaits ``jit approve``."""
    held = {(w["server"], w["tool"]) for w in waiting}
    for r in rows:
        for tool, fields in sorted(r["definition_changes"].items()):
            key = markup(f"{r['server']}/{tool}")
            what = ", ".join(fields) or "definition"
            if (r["server"], tool) in held:
                out.print(f"[yellow]changed:[/] {key}: {what} [yellow](awaiting approval)[/]")
            else:
                out.print(f"changed: {key}: {what} (back to an approved definition)")
    if waiting:
        effect = "not served (security.pin_definitions)" if config.security.pin_definitions else \
            "kept out of the Full tier"
        noun = "tool awaits" if len(waiting) == 1 else "tools await"
        out.print(f"[yellow]{len(waiting)} {noun} approval[/] ({effect}): `jit show SERVER/TOOL` shows the change, "
                  "`jit approve --list` lists them, `jit approve SERVER/TOOL` trusts the new definition")


def _status(value: str) -> str:
    colors = {"connected": "green", "idle": "green", "error": "red", "disconnected": "yellow", "disabled": "dim"}
    color = colors.get(value)
    return f"[{color}]{value}[/]" if color else markup(value)


# --------------------------------------------------------------------------- servers, tools, show


@app.command("servers")
def servers_command(ctx: typer.Context, config_file: ConfigOption = None, as_json: JsonOption = False) -> None:
    """List the configured servers with their status, tool count and last error (from the catalog)."""
    with _errors(as_json):
        config = _config(ctx, config_file)
        with _open_store(config) as store:
            records = store.servers()
            rows = server_rows(config, records, tool_counts(store))
            seen = {r.name: r.last_seen for r in records}
            foreign = {n: o for n, o in store.server_owners().items() if n not in store.scope}
    if as_json:
        _emit_json(rows)
        return
    table = Table(title=f"servers ({markup(config.path)})", title_justify="left")
    for col in ("server", "transport", "status", "tools", "last seen", "command / url", "last error"):
        table.add_column(col, justify="right" if col == "tools" else "left", overflow="fold")
    for r in rows:
        status = r["status"] if r["enabled"] else "disabled"
        table.add_row(markup(r["server"]), markup(r["transport"]), _status(status), str(r["tools"]),
                      _ago(seen.get(r["server"])), markup(_first_line(r["target"], 50)),
                      markup(_first_line(r["last_error"] or "", 50)))
    out.print(table)
    for r in rows:
        if r["status_note"] or r["held_by"]:
            out.print(markup(f"{r['server']}: " + "; ".join(
                x for x in (r["held_by"] and f"{r['status']}, held by {r['held_by']}", r["status_note"]) if x)))
    if foreign:
        owners = sorted({o for names in foreign.values() for o in names}) or ["no recorded config"]
        out.print(markup(f"{len(foreign)} more server{'s' * (len(foreign) != 1)} in this catalog "
                         f"belong{'s' * (len(foreign) == 1)} to other configs ({', '.join(owners)}): "
                         f"{', '.join(sorted(foreign))}"))
    if not any(r["tools"] for r in rows):
        err.print("the catalog is empty: run `jit sync` first")


@app.command("tools")
def tools_command(
    ctx: typer.Context,
    server: Annotated[str | None, typer.Option("--server", "-s", help="Only this server's tools.")] = None,
    offline: Annotated[
        bool, typer.Option("--offline", help="Only tools whose server could not be reached at the last contact "
                           "(cached; calls fail until it is back).")
    ] = False,
    changed: Annotated[
        bool, typer.Option("--changed", help="Only tools whose definition changed since it was approved "
                           "(awaiting `jit approve`).")
    ] = False,
    config_file: ConfigOption = None,
    as_json: JsonOption = False,
) -> None:
    """List the tools in the catalog: server, name, online state, categories, description.

    A tool whose definition changed since it was approved is marked ``changed``; one whose text
    carries hostile-text flags (what ``jit show`` gives in its analysis) is marked ``flagged``.
    """
    _check_names(as_json, {"--server": server})
    with _errors(as_json):
        config = _config(ctx, config_file)
        with _open_store(config) as store:
            if server is not None and store.server(server) is None:
                raise ToolNotFoundError.uncatalogued(server, hint="run `jit sync`?")
            rows = []
            # "online" is the server's status at the last contact (ServerStatus.online), as this
            # config sees it: a server it disables is "disabled" (Config.server_status).
            seen = {r.name: r.last_seen for r in store.servers()}
            for t in store.tools(server):
                status = config.server_status(t.tool.server, t.server_status, seen.get(t.tool.server))
                if (changed and t.approved) or (offline and status.online):
                    continue
                # The analysis selection uses, as `jit show` gives it: its flags are the hostile-text
                # flags the selection acts on (found in the text of a tool not analysed yet; without
                # those the config's trust_flags waive).
                analysis = analysis_of(config, t) or {}
                rows.append({
                    "server": t.tool.server,
                    "tool": t.tool.name,
                    "online": status.online,
                    "status": status.value,
                    "categories": analysis.get("categories", []),
                    "flags": analysis.get("flags", []),
                    "description": t.tool.description,
                    "calls": t.calls,
                    "errors": t.errors,
                    "awaiting_approval": not t.approved,
                })
    if as_json:
        _emit_json(rows)
        return
    table = Table(title=f"{len(rows)} tools", title_justify="left")
    for col in ("tool", "state", "categories", "description"):
        table.add_column(col, overflow="fold")
    for r in rows:
        state = "ok" if r["online"] else f"[yellow]offline[/] ({markup(r['status'])})"
        if r["awaiting_approval"]:
            state += ", [bold red]changed[/] (awaiting `jit approve`)"
        if r["flags"]:  # which flags: --json and `jit show` (the table keeps its description column wide)
            state += ", [bold red]flagged[/]"
        table.add_row(markup(f"{r['server']}/{r['tool']}"), state, markup(", ".join(r["categories"])),
                      markup(_first_line(r["description"])))
    out.print(table)
