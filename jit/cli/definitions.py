"""``jit show`` and ``jit approve``: one tool's definition, and trusting a changed one."""

from __future__ import annotations

import json
import re
from typing import Annotated, Any

import typer
from rich.table import Table

from ..catalog.approval import change_report, pending_report
from ..config import Config
from ..display import markup, visible
from ..errors import ToolNotApprovedError, ToolNotFoundError
from ..payloads import describe
from .shared import (
    EXIT_CODES,
    EXIT_USAGE,
    ConfigOption,
    JsonOption,
    _ago,
    _config,
    _emit_json,
    _errors,
    _check_names,
    _fail,
    _open_store,
    _resolve_key,
    _split_key,
    app,
    out,
)

# Heavy wings are imported inside the commands that run them (the selection wing, the MCP
# SDK): see the note on imports in jit/cli/shared.py, which "the top" below refers to.




@app.command("show")
def show_command(
    ctx: typer.Context,
    key: Annotated[str, typer.Argument(metavar="SERVER/TOOL", help="The tool, e.g. workspace/read_file.")],
    config_file: ConfigOption = None,
    as_json: JsonOption = False,
) -> None:
    """Show one tool: its full definition, analysis, server status and usage."""
    parts = _split_key(key, as_json=as_json)
    with _errors(as_json):
        config = _config(ctx, config_file)
        with _open_store(config) as store:
            server, name = _resolve_key(store, key, parts)
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
    _check_names(as_json, {"--server": server})
    if definition_hash is not None and key is None:
        _fail("--hash goes with SERVER/TOOL", EXIT_USAGE, as_json=as_json)
    if definition_hash is not None and not re.fullmatch(r"[0-9a-fA-F]{8,64}", definition_hash):
        # An empty prefix (an unset "$REVIEWED") would match any definition and approve what nobody reviewed.
        # A value longer than any hash is not printed back, only its length.
        got = repr(definition_hash) if len(definition_hash) <= 64 else f"{len(definition_hash):,} characters"
        _fail(f"--hash takes 8 to 64 hexadecimal characters of the reviewed definition's hash (as `jit show` "
              f"prints it), got {got}", EXIT_USAGE, as_json=as_json)
    tool = None
    if key is not None:
        server, tool = _split_key(key, as_json=as_json)
    with _errors(as_json):
        config = _config(ctx, config_file)
        with _open_store(config) as store:
            if key is not None and tool is not None and server is not None:
                server, tool = _resolve_key(store, key, (server, tool))
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
