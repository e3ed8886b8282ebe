"""The ``jit`` command line: a thin layer over the library.

Each command parses its arguments, calls the library (config, store, sync,
compiler, client manager, serve) and prints the result, as a readable table or,
with ``--json``, as JSON for scripts. Errors from the one exception tree end
the command with a message on stderr and an exit code a script can act on:

====  =====================================================================
code  meaning
====  =====================================================================
0     success
1     any other jit error (catalog, embedding model, rules, analysis)
2     bad usage: unknown option, malformed ``--args``, unknown shard or budget
3     configuration error (the message names the file and the key)
4     a server is unreachable: offline, failed to connect, timed out, went away
5     no such server or tool
6     the tool ran and reported an error
7     the tool's definition changed and awaits ``jit approve`` (``security.pin_definitions``)
130   interrupted
====  =====================================================================

Heavy imports (torch through the embedder, the MCP SDK) happen inside the
commands that need them, so ``jit servers`` or ``jit --help`` start fast.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import os
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, ClassVar, NoReturn

import typer
from rich.console import Console
from rich.table import Table

from . import __version__
from .catalog.approval import change_report, pending_report
from .catalog.embed import SentenceTransformerEmbedder
from .catalog.ownership import Reconciled, config_scope, describe_kept
from .catalog.store import Store
from .config import CONFIG_ENV_VAR, Config, _read_json, check_store_path, load_config, parse_mcp_servers
from .display import json_text, log_to_stderr, markup, visible
from .errors import (
    ConfigError,
    InvalidArgumentsError,
    JitError,
    SelectionError,
    ServerConnectError,
    ServerDisconnectedError,
    ServerTimeoutError,
    ServerUnavailableError,
    StoreError,
    ToolCallError,
    ToolNotApprovedError,
    ToolNotFoundError,
)
from .process import tuned
from .selection.tiers import Tier
from .views import analysis_of, describe, server_rows, summarize, tool_counts

# Each command imports the wing it runs where that wing is heavy to load: the selection
# wing (compiler, rules, schema checks: ~0.7 s) and the MCP SDK (clients, sync, serve,
# httpguard: ~1 s). So `jit --help`, `jit tools` and `jit show` start in about half a
# second. Nothing below imports this module, so these imports are not hiding a cycle
# (tests/test_layers.py).
if TYPE_CHECKING:
    from .selection.toolset import ToolSet

__all__ = ["EXIT_CODES", "app", "main"]

#: Exit code per error class; the most specific class in an error's MRO wins.
EXIT_CODES: dict[type[JitError], int] = {
    JitError: 1,
    SelectionError: 2,
    InvalidArgumentsError: 2,
    ConfigError: 3,
    ServerUnavailableError: 4,
    ServerConnectError: 4,
    ServerTimeoutError: 4,
    ServerDisconnectedError: 4,
    ToolNotFoundError: 5,
    ToolNotApprovedError: 7,
    ToolCallError: 6,
}
EXIT_USAGE = 2
EXIT_TOOL_ERROR = 6
EXIT_INTERRUPTED = 130

FORMATS = ("markdown", "anthropic", "openai", "json")

app = typer.Typer(
    name="jit",
    help="Just-in-time tool selection for agent harnesses that talk to many MCP servers.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)

#: Tables are laid out for a terminal; piped output gets 120 columns rather than rich's 80.
#: Text from servers is printed through jit.display (visible escapes, no markup); emoji codes
#: such as ``:warning:`` are not expanded either, so a description prints as written.
out = Console(highlight=False, emoji=False, width=None if sys.stdout.isatty() else 120)
err = Console(stderr=True, highlight=False, emoji=False, width=None if sys.stderr.isatty() else 120)


# --------------------------------------------------------------------------- plumbing


@dataclasses.dataclass
class _State:
    config_path: Path | None = None


JsonOption = Annotated[bool, typer.Option("--json", help="Print JSON for scripts instead of tables.")]
#: ``--config`` is accepted before the command (``jit --config F sync``) and after it (``jit sync --config F``).
_CONFIG_HELP = ("Config file (jit's config.json, or an .mcp.json / claude_desktop_config.json). "
                f"Default: ${CONFIG_ENV_VAR}, else ./config.json.")
ConfigOption = Annotated[Path | None, typer.Option("--config", "-c", show_default=False, help=_CONFIG_HELP)]
# Only the top-level option reads the variable, so `JIT_CONFIG=a jit --config b sync` uses b.
_RootConfigOption = Annotated[
    Path | None, typer.Option("--config", "-c", envvar=CONFIG_ENV_VAR, show_default=False, help=_CONFIG_HELP)
]


def _version(value: bool) -> None:
    if value:
        out.print(f"jit {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    ctx: typer.Context,
    config: _RootConfigOption = None,
    version: Annotated[
        bool, typer.Option("--version", callback=_version, is_eager=True, help="Print the version and exit.")
    ] = False,
) -> None:
    """Just-in-time tool selection for agent harnesses that talk to many MCP servers."""
    ctx.obj = _State(config_path=config)


def _config_path(ctx: typer.Context, path: Path | None) -> Path | None:
    """The command's own ``--config``, else the one given before the command (or ``$JIT_CONFIG``)."""
    state: _State = ctx.obj or _State()
    return path if path is not None else state.config_path


def _config(ctx: typer.Context, path: Path | None) -> Config:
    return load_config(_config_path(ctx, path))


def exit_code(exc: JitError) -> int:
    """The documented exit code for ``exc`` (most specific class wins)."""
    for cls in type(exc).__mro__:
        if cls in EXIT_CODES:
            return EXIT_CODES[cls]
    return 1


def _fail(message: str, code: int, *, as_json: bool, payload: dict[str, Any] | None = None) -> NoReturn:
    if as_json:
        sys.stderr.write(json_text(payload or {"error": "usage_error", "message": message}) + "\n")
    else:
        # soft_wrap: one message, one line (rich would cut it at the console width), so it greps.
        err.print(f"[bold red]error:[/] {markup(message, layout=False)}", highlight=False, soft_wrap=True)
    raise typer.Exit(code)


@contextlib.contextmanager
def _errors(as_json: bool) -> Iterator[None]:
    """The one place where jit errors become a message on stderr and an exit code."""
    try:
        yield
    except JitError as exc:
        _fail(exc.message, exit_code(exc), as_json=as_json, payload=exc.to_dict())
    except KeyboardInterrupt:
        err.print("interrupted")
        raise typer.Exit(EXIT_INTERRUPTED) from None


def _emit_json(data: Any) -> None:
    """``--json`` output: exact data, with control and invisible characters as ``\\uXXXX`` escapes."""
    sys.stdout.write(json_text(data) + "\n")


def _split_key(key: str, *, as_json: bool) -> tuple[str, str]:
    """``SERVER/TOOL`` (or the rendered ``SERVER__TOOL``) into its two parts."""
    for sep in ("/", "__"):
        server, found, tool = key.partition(sep)
        if found and server and tool:
            return server, tool
    _fail(f"expected SERVER/TOOL, got {key!r}", EXIT_USAGE, as_json=as_json)


def _ago(ts: float | None) -> str:
    if ts is None:
        return "never"
    secs = max(0.0, time.time() - ts)
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if secs >= size:
            return f"{int(secs // size)}{unit} ago"
    return f"{int(secs)}s ago"


def _first_line(text: str, limit: int = 90) -> str:
    """The first line of ``text``, control and invisible characters made visible (jit.display)."""
    # Only the head can be shown: escape that, not a megabyte of description.
    text = visible((text or "").strip()[: limit + 1]).strip()
    line = text.split("\n", 1)[0].rstrip() if text else ""
    return line if len(line) <= limit else line[: limit - 1] + "…"


def _open_store(config: Config) -> Store:
    """The catalog ``store`` names; an unusable path is a ConfigError naming that key."""
    check_store_path(config)
    try:
        store = Store(config.store_path)
    except StoreError as exc:  # e.g. not an SQLite file: say which file and which key
        raise type(exc)(f"{exc.message} (catalog {config.store_path}, config key 'store')", **exc.details) from exc
    store.set_scope(config_scope(config))  # only this config's servers (and the harness): see jit/catalog/ownership.py
    return store


def _embedder(config: Config) -> Any:
    return SentenceTransformerEmbedder.from_config(config.embedding)


def _run(coro: Any) -> Any:
    """Run a coroutine on a fresh asyncio loop (the client manager needs asyncio)."""
    return asyncio.run(coro)


# --------------------------------------------------------------------------- sync


class _SyncProgress:
    """Turns :func:`jit.pipeline.sync`'s ``(phase, info)`` callbacks into rich progress output.

    A phase with a known size (``pending``/``total``) gets a bar, one without a
    spinner; the previous phase completes when the next starts. When stderr is
    not a terminal, each phase is one plain line instead.
    """

    _LABELS: ClassVar[dict[str, str]] = {"discover": "discovering tools", "analyze": "analyzing", "embed": "embedding"}

    def __init__(self, console: Console, enabled: bool) -> None:
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

        self.console = console
        self.enabled = enabled
        self.live = enabled and console.is_terminal
        self.progress = Progress(
            SpinnerColumn(),
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            console=console,
            transient=False,
            disable=not self.live,
        )
        self._task: Any = None
        self._phase: str | None = None
        self._started = time.perf_counter()

    def __enter__(self) -> _SyncProgress:
        self.progress.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        self._finish_phase()
        self.progress.__exit__(*exc)

    def _finish_phase(self) -> None:
        if self._task is not None:
            task = self.progress.tasks[self._task]
            total = task.total if task.total is not None else 1
            self.progress.update(self._task, total=total, completed=total)
            self._task = None
        if self._phase is not None and self.enabled and not self.live:
            self.console.print(f"  {self._phase} done in {time.perf_counter() - self._started:.1f}s")

    def __call__(self, phase: str, info: dict[str, Any]) -> None:
        if not self.enabled:
            return
        total = info.get("total", info.get("pending", info.get("servers")))
        done = info.get("done")
        if phase == self._phase and done is not None and self._task is not None:
            self.progress.update(self._task, completed=done, total=total)
            return
        self._finish_phase()
        self._phase = phase
        self._started = time.perf_counter()
        label = self._LABELS.get(phase, phase)
        detail = markup(", ".join(f"{k} {v}" for k, v in info.items() if k not in ("done", "total")))
        if self.live:
            self._task = self.progress.add_task(f"{label} ({detail})" if detail else label,
                                                total=total if total else None, completed=done or 0)
        else:
            self.console.print(f"jit sync: {label}" + (f" ({detail})" if detail else ""))


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
    config_file: ConfigOption = None,
    as_json: JsonOption = False,
) -> None:
    """Connect to every configured server, discover its tools, analyze and embed them.

    Servers that cannot be reached keep their cached tools (marked offline);
    the summary shows each server's status and what changed. Servers of other
    configs sharing the catalog are kept (see --prune-foreign).
    """
    from .pipeline import sync  # the MCP client SDK: see the note on imports at the top

    with _errors(as_json):
        config = _config(ctx, config_file)
        with _open_store(config) as store:
            embedder = _embedder(config)
            with _SyncProgress(err, enabled=not as_json) as progress:
                report = _run(sync(config, store, embedder, progress=progress, forget_foreign=prune_foreign))
            counts = tool_counts(store)
            waiting = pending_report(store)
        rows = []
        for rec in report.servers:
            change = report.changes.get(rec.name)
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
                        "analysis": analysis,
                        "embedding": embedding, "unreachable": unreachable, "awaiting_approval": waiting})
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
        if strict and unreachable:
            if not as_json:
                err.print(f"unreachable: {markup(', '.join(unreachable))}")
            raise typer.Exit(EXIT_CODES[ServerUnavailableError])


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
            rows = server_rows(config, store.servers(), tool_counts(store))
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
                      _ago(r["last_seen"]), markup(_first_line(r["target"], 50)),
                      markup(_first_line(r["last_error"] or "", 50)))
    out.print(table)
    for r in rows:
        if r["status_note"] or r["held_by"]:
            out.print(markup(f"{r['server']}: " + "; ".join(
                x for x in (r["held_by"] and f"{r['status']}, held by {r['held_by']}", r["status_note"]) if x)))
    if foreign:
        owners = sorted({o for names in foreign.values() for o in names}) or ["no recorded config"]
        out.print(markup(f"{len(foreign)} more server{'s' * (len(foreign) != 1)} in this catalog belong to other "
                         f"configs ({', '.join(owners)}): {', '.join(sorted(foreign))}"))
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

    A tool whose definition changed since it was approved is marked ``changed``.
    """
    with _errors(as_json):
        config = _config(ctx, config_file)
        with _open_store(config) as store:
            if server is not None and store.server(server) is None:
                raise ToolNotFoundError.uncatalogued(server, hint="run `jit sync`?")
            rows = []
            # "online" is the server's status at the last contact (ServerStatus.online).
            for t in store.tools(server, online=False if offline else None):
                if changed and t.approved:
                    continue
                analysis = analysis_of(config, t)
                rows.append({
                    "server": t.tool.server,
                    "tool": t.tool.name,
                    "online": t.online,
                    "status": t.server_status.value,
                    "categories": (analysis or {}).get("categories", []),
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
        table.add_row(markup(f"{r['server']}/{r['tool']}"), state, markup(", ".join(r["categories"])),
                      markup(_first_line(r["description"])))
    out.print(table)


@app.command("show")
def show_command(
    ctx: typer.Context,
    key: Annotated[str, typer.Argument(metavar="SERVER/TOOL", help="The tool, e.g. workspace/read_file.")],
    config_file: ConfigOption = None,
    as_json: JsonOption = False,
) -> None:
    """Show one tool: its full definition, analysis, server status and usage."""
    server, name = _split_key(key, as_json=as_json)
    with _errors(as_json):
        config = _config(ctx, config_file)
        with _open_store(config) as store:
            stored = store.tool(server, name)
            if stored is None:
                raise ToolNotFoundError.in_catalog(server, name, server_known=store.server(server) is not None)
            data = describe(config, store, stored)
            data["definition_status"] = change_report(store, stored, diff=True)
    if as_json:
        _emit_json(data)
        return
    from rich.panel import Panel
    from rich.syntax import Syntax
    from rich.text import Text

    tool = data["definition"]
    state = "online" if data["online"] else f"offline ({markup(data['status'])})"
    head = f"[bold]{markup(server)}/{markup(name)}[/]  {state}\n\n{markup(tool['description'] or '(no description)')}"
    # A Text title: Panel would read a str title as markup with emoji codes (":warning:") expanded.
    out.print(Panel(head, title=Text(visible(tool.get("title") or name, layout=False)), title_align="left"))
    out.print("[bold]input schema[/]")
    out.print(Syntax(json.dumps(tool["input_schema"], indent=2), "json", word_wrap=True))
    if tool.get("output_schema"):
        out.print("[bold]output schema[/]")
        out.print(Syntax(json.dumps(tool["output_schema"], indent=2), "json", word_wrap=True))
    analysis = data["analysis"]
    if analysis:
        table = Table(title="analysis", title_justify="left", show_header=False)
        table.add_column("key")
        table.add_column("value", overflow="fold")
        for k, v in analysis.items():
            table.add_row(markup(k), markup(json.dumps(v, ensure_ascii=False) if not isinstance(v, str) else v))
        out.print(table)
    else:
        out.print("analysis: pending (run `jit sync`)")
    usage = data["usage"]
    out.print(f"usage: {usage['calls']} calls, {usage['errors']} errors; "
              f"definition hash {data['definition_hash'][:12]}")
    _print_definition_status(data["definition_status"], config, f"{server}/{name}", data["definition_hash"])


def _print_definition_status(status: dict[str, Any], config: Config, key: str, definition_hash: str) -> None:
    """``jit show``'s account of a changed definition: approval, what changed, the diff, earlier usage."""
    previous = status["previous"]
    if not previous:
        return
    last = previous[0]
    since = f"replaced {last['definition_hash'][:12]} {_ago(last['replaced_at'])}"
    what = ", ".join(status["changed"]) or "definition"
    if status["approved"]:
        out.print(f"definition: approved; changed ({what}), {since}")
    else:
        effect = "not served (security.pin_definitions)" if config.security.pin_definitions else \
            "kept out of the Full tier"
        out.print(f"[bold red]definition changed since it was approved[/] ({what}), {since}: {effect}")
    for part in status.get("diff", []):
        out.print(f"[bold]{part['field']}[/] (previous → current)")
        for line in part["diff"]:
            color = {"-": "red", "+": "green"}.get(line[:1])
            text = markup(line, layout=False)
            out.print(f"  [{color}]{text}[/]" if color else f"  {text}", highlight=False)
    calls = sum(p["calls"] for p in previous)
    errors = sum(p["errors"] for p in previous)
    noun = "definition" if len(previous) == 1 else "definitions"
    out.print(f"earlier {noun}: {len(previous)}, with {calls} calls and {errors} errors (not counted for this one)")
    if not status["approved"]:
        out.print(f"to trust this definition: jit approve {markup(key, layout=False)} --hash {definition_hash[:12]}")


# --------------------------------------------------------------------------- approve


@app.command("approve")
def approve_command(
    ctx: typer.Context,
    key: Annotated[
        str | None, typer.Argument(metavar="SERVER/TOOL", help="The tool whose current definition to trust.")
    ] = None,
    server: Annotated[
        str | None, typer.Option("--server", "-s", help="Every tool of this server awaiting approval.")
    ] = None,
    everything: Annotated[bool, typer.Option("--all", help="Every tool awaiting approval.")] = False,
    definition_hash: Annotated[
        str | None, typer.Option("--hash", metavar="PREFIX", help="Approve SERVER/TOOL only while its definition "
                                 "hash starts with PREFIX (as `jit show` printed it).")
    ] = None,
    list_only: Annotated[
        bool, typer.Option("--list", help="List the tools awaiting approval (of --server); change nothing.")
    ] = False,
    config_file: ConfigOption = None,
    as_json: JsonOption = False,
) -> None:
    """Trust the current definition of tools whose definition changed since it was approved.

    Approval is per definition: a later change needs a new approval.
    """
    targets = sum(bool(x) for x in (key, everything, list_only)) + (server is not None and not list_only)
    if targets != 1:
        _fail("give one of SERVER/TOOL, --server NAME, --all or --list", EXIT_USAGE, as_json=as_json)
    if definition_hash is not None and key is None:
        _fail("--hash goes with SERVER/TOOL", EXIT_USAGE, as_json=as_json)
    tool = None
    if key is not None:
        server, tool = _split_key(key, as_json=as_json)
    with _errors(as_json):
        config = _config(ctx, config_file)
        with _open_store(config) as store:
            if server is not None and store.server(server) is None:
                raise ToolNotFoundError.uncatalogued(server, tool)
            if list_only:
                waiting = pending_report(store, server)
            else:
                current = store.tool(server, tool) if server is not None and tool is not None else None
                if tool is not None and current is None:
                    raise ToolNotFoundError.no_tool(server, tool)
                if current is not None and definition_hash and not current.approved and \
                        not current.definition_hash.startswith(definition_hash.lower()):
                    _fail(f"{key}'s definition is now {current.definition_hash[:12]}, not the "
                          f"{definition_hash!r} given: it changed again; review it with `jit show {key}`",
                          EXIT_CODES[ToolNotApprovedError], as_json=as_json)
                # What each approved tool was waiting with (what changed), for the report.
                before = {(p["server"], p["tool"]): p for p in pending_report(store, server)}
                approved = store.approve(server, tool, definition_hash=definition_hash)
                done = [before.get((st.tool.server, st.tool.name), {
                    "server": st.tool.server, "tool": st.tool.name, "definition_hash": st.definition_hash,
                    "changed": []}) for st in approved]  # (a sync may have run in between)
    if list_only:
        if as_json:
            _emit_json(waiting)
            return
        if not waiting:
            out.print("no tool awaits approval")
            return
        table = Table(title=f"{len(waiting)} awaiting approval", title_justify="left")
        for col in ("tool", "changed", "since", "previous → current"):
            table.add_column(col, overflow="fold")
        for w in waiting:
            hashes = f"{(w['previous_hash'] or '?')[:12]} → {w['definition_hash'][:12]}"
            table.add_row(markup(f"{w['server']}/{w['tool']}"), ", ".join(w["changed"]), _ago(w["changed_at"]), hashes)
        out.print(table)
        out.print("`jit show SERVER/TOOL` shows a change; `jit approve SERVER/TOOL` trusts it")
        return
    if as_json:
        _emit_json({"approved": done})
        return
    if not done:
        what = f"{key}'s current definition is" if key else "every definition is"
        out.print(f"nothing to approve: {markup(what)} already approved")
        return
    for d in done:
        changed = f" ({', '.join(d['changed'])})" if d["changed"] else ""
        key_text = markup(f"{d['server']}/{d['tool']}")
        out.print(f"approved {key_text} at definition {d['definition_hash'][:12]}{changed}")


# --------------------------------------------------------------------------- compile


@app.command("compile")
def compile_command(
    ctx: typer.Context,
    shard: Annotated[str, typer.Option("--shard", help="The agent role, e.g. coder, tester, researcher.")],
    task: Annotated[str, typer.Option("--task", help="What the shard is spawned to do.")],
    budget: Annotated[
        int | None, typer.Option("--budget", min=1, help="Token budget (default: tool_selection.token_budget).")
    ] = None,
    fmt: Annotated[
        str | None,
        typer.Option("--format", help="Print the rendering instead of the table: markdown, anthropic, openai or json."),
    ] = None,
    explain: Annotated[bool, typer.Option("--explain", help="Show why each tool landed in its tier.")] = False,
    config_file: ConfigOption = None,
    as_json: JsonOption = False,
) -> None:
    """Compile the tool set for a shard and task: tools by tier with scores, tokens used against the budget."""
    if fmt is not None and fmt not in FORMATS:
        _fail(f"--format must be one of {', '.join(FORMATS)}, got {fmt!r}", EXIT_USAGE, as_json=as_json)
    with _errors(as_json):
        config = _config(ctx, config_file)
        with _open_store(config) as store:
            toolset = compile_toolset(config, store, _embedder(config), shard=shard, task=task, budget=budget)
            if as_json:
                data = summarize(toolset)
                if explain:
                    data["explain"] = toolset.explain()
                _emit_json(data)
                return
            if fmt is not None:
                rendered = toolset.render(fmt)
                sys.stdout.write((visible(rendered) if isinstance(rendered, str) else json_text(rendered)) + "\n")
                if explain:
                    _print_toolset(Console(stderr=True, highlight=False, emoji=False), toolset, explain=True)
                return
            _print_toolset(out, toolset, explain=explain)


def compile_toolset(
    config: Config, store: Store, embedder: Any, *, shard: str, task: str, budget: int | None = None
) -> ToolSet:
    """One ``compile()`` with a fresh :class:`~jit.selection.compiler.Compiler` (the CLI's one-shot path)."""
    from .selection.compiler import Compiler  # the selection wing: see the note on imports at the top
    from .selection.toolset import TaskContext

    with Compiler(store, config, embedder) as compiler:
        return compiler.compile(TaskContext(shard=shard, task=task, budget=budget))


def _print_toolset(console: Console, toolset: ToolSet, *, explain: bool) -> None:
    share = toolset.tokens_used / toolset.budget if toolset.budget else 0
    console.print(f"[bold]shard[/] {markup(toolset.shard)}   [bold]tokens[/] {toolset.tokens_used} of {toolset.budget} "
                  f"({share:.0%}, {toolset.token_counter or 'estimated'})   [bold]candidates[/] {len(toolset.tools)}")
    console.print(f"[bold]task[/] {markup(toolset.task)}", highlight=False)
    if explain and toolset.task_facts:
        facts = "; ".join(f"{k}: {', '.join(v)}" for k, v in toolset.task_facts.items() if v)
        console.print(f"[bold]task facts[/] {markup(facts)}")
    table = Table(title_justify="left")
    table.add_column("tier")
    table.add_column("tool", no_wrap=True)
    for col in ("final", "logic", "vector", "tokens"):
        table.add_column(col, justify="right")
    table.add_column("")
    shown = [s for tier in (Tier.FULL, Tier.CONDENSED, Tier.MINIMAL) for s in toolset.tier(tier)]
    for tier in (Tier.FULL, Tier.CONDENSED, Tier.MINIMAL):
        rows = toolset.tier(tier)
        for s in rows:
            marks = " ".join(m for m, on in (("skeleton", s.skeleton), ("[yellow]offline[/]", s.offline)) if on)
            table.add_row(tier.value, markup(s.name, layout=False), str(s.final), str(s.logic), str(s.vector),
                          str(s.tokens), marks)
        if rows:
            table.add_section()
    console.print(table)
    excluded = toolset.tier(Tier.EXCLUDED)
    if explain:
        console.print("[bold]why[/]")
        for s in shown + excluded:
            why = markup("; ".join(s.reasons) or "-")
            console.print(f"  [bold]{markup(s.name, layout=False)}[/] ({s.tier.value}, final {s.final}): {why}",
                          highlight=False)
    elif excluded:
        console.print(f"{len(excluded)} more tools excluded (not sent); --explain lists them with reasons")
    for w in toolset.warnings:
        console.print(f"[yellow]warning:[/] {markup(w)}")


# --------------------------------------------------------------------------- call


@app.command("call")
def call_command(
    ctx: typer.Context,
    key: Annotated[str, typer.Argument(metavar="SERVER/TOOL", help="The tool to call, e.g. time/get_current_time.")],
    args: Annotated[str, typer.Option("--args", help="The arguments as a JSON object.")] = "{}",
    timeout: Annotated[
        float | None, typer.Option("--timeout", min=0.001, help="Seconds to wait (default: the server's call_timeout).")
    ] = None,
    config_file: ConfigOption = None,
    as_json: JsonOption = False,
) -> None:
    """Call a tool through jit's client manager (connects to that one server only)."""
    server, tool = _split_key(key, as_json=as_json)
    try:
        arguments = json.loads(args)
    except json.JSONDecodeError as exc:
        _fail(f"--args is not valid JSON: {exc.msg} at column {exc.colno}", EXIT_USAGE, as_json=as_json)
    if not isinstance(arguments, dict):
        _fail("--args must be a JSON object, e.g. '{\"path\": \"README.md\"}'", EXIT_USAGE, as_json=as_json)
    with _errors(as_json):
        config = _config(ctx, config_file)
        with _open_store(config) as store:
            result = _run(_call(config, store, server, tool, arguments, timeout))
    if as_json:
        _emit_json(dataclasses.asdict(result))
    else:
        text = result.text()
        if text:
            out.print(visible(text), markup=False, highlight=False)
        elif result.structured_content is not None:
            out.print(json_text(result.structured_content), markup=False, highlight=False)
        for block in result.content:
            if block.get("type") != "text":
                kind = visible(block.get("type"), layout=False)
                out.print(f"[{kind} content, {len(json.dumps(block))} bytes of JSON]", markup=False)
    if result.is_error:
        if not as_json:
            err.print(f"error: {visible(f'{server}/{tool}', layout=False)} reported an error", markup=False)
        raise typer.Exit(EXIT_TOOL_ERROR)


async def _call(config: Config, store: Store, server: str, tool: str, arguments: dict[str, Any],
                timeout: float | None) -> Any:
    from .client.manager import ClientManager  # the MCP client SDK: see the note on imports at the top

    # Connect only the server being called: faster, and the others are left alone.
    if server in config.servers:
        config = dataclasses.replace(config, servers={server: config.servers[server]})
    async with ClientManager(config, store) as manager:
        return await manager.call_tool(server, tool, arguments, timeout=timeout)


# --------------------------------------------------------------------------- import


@app.command("import")
def import_command(
    ctx: typer.Context,
    source: Annotated[
        Path, typer.Argument(metavar="FILE", help="An .mcp.json or claude_desktop_config.json holding mcpServers.")
    ],
    replace: Annotated[bool, typer.Option("--replace", help="Overwrite servers that already exist.")] = False,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Show what would be imported; change nothing.")] = False,
    config_file: ConfigOption = None,
    as_json: JsonOption = False,
) -> None:
    """Copy the servers of an .mcp.json / claude_desktop_config.json into the config file.

    The config is validated with the new servers before it is written (atomically);
    nothing changes if any server is invalid or already exists (unless --replace).
    """
    with _errors(as_json):
        target = Path(_config_path(ctx, config_file) or "config.json").expanduser().resolve()
        result = import_servers(source, target, replace=replace, dry_run=dry_run)
    if as_json:
        _emit_json(result)
        return
    verb = "would import" if dry_run else "imported"
    count = len(result["servers"])
    noun = "server" if count == 1 else "servers"
    table = Table(title=markup(f"{verb} {count} {noun} into {result['config']}"), title_justify="left")
    for col in ("server", "transport", "command / url", "action"):
        table.add_column(col, overflow="fold")
    for s in result["servers"]:
        target_text = s["entry"].get("url") or " ".join([s["entry"].get("command", ""), *s["entry"].get("args", [])])
        table.add_row(markup(s["server"]), markup(s["entry"]["transport"]), markup(target_text), s["action"])
    out.print(table)
    if not dry_run and result["servers"]:
        out.print("next: `jit sync` to connect and discover their tools")


def import_servers(source: Path, target: Path, *, replace: bool = False, dry_run: bool = False) -> dict[str, Any]:
    """Merge ``source``'s ``mcpServers`` into ``target``'s ``servers``; validate, then write atomically."""
    src = source.expanduser().resolve()
    data = _read_json(src, "server file")
    if not isinstance(data, dict) or "mcpServers" not in data:
        raise ConfigError("the file holds no 'mcpServers' object to import", path=str(src), key="mcpServers")
    incoming = parse_mcp_servers(data["mcpServers"], str(src))
    if not incoming:
        raise ConfigError("'mcpServers' is empty: nothing to import", path=str(src), key="mcpServers")
    raw: dict[str, Any] = _read_json(target, "config file") if target.exists() else {}
    if not isinstance(raw, dict):
        raise ConfigError("the top level must be a JSON object", path=str(target))
    if "mcpServers" in raw and "servers" not in raw:
        raise ConfigError(
            "the config is itself an mcpServers file; point --config at a jit config.json to import into",
            path=str(target),
        )
    servers = raw.setdefault("servers", {})
    if not isinstance(servers, dict):
        raise ConfigError("'servers' must be an object", path=str(target), key="servers")
    report = []
    for name, entry in incoming.items():
        if name in servers and not replace:
            raise ConfigError(f"server {name!r} already exists; use --replace to overwrite it",
                              path=str(target), key=f"servers.{name}")
        report.append({"server": name, "entry": entry, "action": "replaced" if name in servers else "added"})
        servers[name] = entry
    text = json.dumps(raw, indent=2, ensure_ascii=False) + "\n"
    # Validate the merged file where it will live (relative paths resolve the same way).
    tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    target.parent.mkdir(parents=True, exist_ok=True)
    try:
        tmp.write_text(text, encoding="utf-8")
        try:
            load_config(tmp)
        except ConfigError as exc:
            raise ConfigError(f"the imported servers do not validate: {exc.message}", path=str(src)) from None
        if dry_run:
            tmp.unlink()
        else:
            os.replace(tmp, target)
    finally:
        if tmp.exists():
            tmp.unlink()
    return {"config": str(target), "source": str(src), "dry_run": dry_run, "servers": report}


# --------------------------------------------------------------------------- serve, eval


@app.command("serve")
def serve_command(
    ctx: typer.Context,
    stdio: Annotated[bool, typer.Option("--stdio", help="Serve MCP over stdin/stdout (the default).")] = False,
    http: Annotated[
        str | None,
        typer.Option("--http", metavar="HOST:PORT", help="Serve Streamable HTTP at http://HOST:PORT/mcp "
                     "(HOST defaults to 127.0.0.1)."),
    ] = None,
    expose_shard: Annotated[
        str | None,
        typer.Option("--expose-shard", metavar="SHARD", help="tools/list returns this shard's compiled Full tier "
                     "(proxied) plus the meta-tools; needs --task."),
    ] = None,
    task: Annotated[str | None, typer.Option("--task", help="The task to compile for with --expose-shard.")] = None,
    budget: Annotated[
        int | None, typer.Option("--budget", min=1, help="Token budget for --expose-shard (default: from config).")
    ] = None,
    allow_remote: Annotated[
        bool, typer.Option("--allow-remote", help="Allow --http on a host that is not loopback; requires a bearer "
                           "token in $JIT_SERVE_TOKEN.")
    ] = False,
    allow_host: Annotated[
        list[str] | None, typer.Option("--allow-host", metavar="HOST", help="Also accept this name in the Host and "
                                       "Origin headers of --http requests (repeatable).")
    ] = None,
    config_file: ConfigOption = None,
) -> None:
    """Run jit as an MCP server: search, describe, call and compile tools from any MCP client."""
    if stdio and http:
        _fail("choose one of --stdio and --http", EXIT_USAGE, as_json=False)
    if (expose_shard is None) != (task is None):
        _fail("--expose-shard and --task go together", EXIT_USAGE, as_json=False)
    if budget is not None and expose_shard is None:
        _fail("--budget applies to --expose-shard", EXIT_USAGE, as_json=False)
    host, port = "127.0.0.1", 0
    if http is not None:
        h, sep, p = http.rpartition(":")
        if not sep or not p.isdigit() or not 0 < int(p) < 65536:
            _fail(f"--http expects HOST:PORT or :PORT, got {http!r}", EXIT_USAGE, as_json=False)
        host, port = (h.strip("[]") or "127.0.0.1"), int(p)
        from .serve.httpguard import RemoteBindRefused, http_access  # the MCP server SDK (see the top)

        try:  # before anything loads or binds
            http_access(host, allow_remote=allow_remote, allowed_hosts=allow_host or ())
        except RemoteBindRefused as exc:
            _fail(str(exc), EXIT_USAGE, as_json=False)
    elif allow_remote or allow_host:
        _fail("--allow-remote and --allow-host apply to --http", EXIT_USAGE, as_json=False)
    from .serve.server import ServeOptions, run  # the MCP server SDK: see the note on imports at the top

    log_to_stderr()  # before the SDK sets up logging: upstream text in log lines is escaped
    with _errors(False):
        # Validate the config before any transport opens: a broken file is an exit code, not a hung client.
        config = load_config(_config_path(ctx, config_file))
        if expose_shard is not None and expose_shard not in config.shards:
            raise SelectionError(f"unknown shard {expose_shard!r}; config names {sorted(config.shards)}")
        run(ServeOptions(config_path=config.path, transport="http" if http else "stdio", host=host, port=port,
                         expose_shard=expose_shard, task=task, budget=budget, allow_remote=allow_remote,
                         allowed_hosts=tuple(allow_host or ())))


@app.command(
    "eval",
    context_settings={"allow_extra_args": True, "ignore_unknown_options": True, "help_option_names": []},
)
def eval_command(
    ctx: typer.Context,
    args: Annotated[
        list[str] | None,
        typer.Argument(metavar="DATASET [OPTIONS]", help="Passed to the evaluator; `jit eval --help` lists them."),
    ] = None,
) -> None:
    """Measure retrieval and selection quality on benchmark data (see `jit eval --help`)."""
    from .evaluation.evaluate import main as evaluate_main  # the selection wing and the datasets (see the top)

    argv = list(args or []) + list(ctx.args)
    state: _State = ctx.obj or _State()
    if state.config_path is not None and "--config" not in argv:
        argv += ["--config", str(state.config_path)]
    with _errors(False):
        code = evaluate_main(argv)
    raise typer.Exit(code or 0)


# --------------------------------------------------------------------------- entry point


def main(argv: list[str] | None = None) -> None:
    """The ``jit`` console script (exits the process with the command's exit code)."""
    # The tokenizers' thread pool warns about forking (stdio servers are forked children).
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    # This is the process's owner: catalog snapshots are frozen out of the GC and the
    # retrieval scan runs on one BLAS thread (jit.process says why).
    with tuned():
        app(args=argv, prog_name="jit")


if __name__ == "__main__":  # pragma: no cover
    main()
