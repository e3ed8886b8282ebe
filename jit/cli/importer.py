"""``jit import``: copying an .mcp.json / claude_desktop_config.json's servers into the config;
``jit setup claude-code``: moving a project's servers behind jit (jit/cli/claude_code.py)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.table import Table

from ..display import markup
from ..errors import ConfigError
from ..jsonfile import read_json
from ..paths import DEFAULT_CONFIG_FILE, PROJECT_CONFIG_FILE
from ..servers_config import parse_mcp_servers, shown_target
from .claude_agents import undo_subagents, write_subagents
from .claude_code import check_merged, is_set_up, placeholders, setup_claude_code, undo_setup, unset_vars
from .shared import (
    ConfigOption,
    JsonOption,
    _config_path,
    _emit_json,
    _errors,
    app,
    err,
    out,
)

# Heavy wings are imported inside the commands that run them (the selection wing, the MCP
# SDK): see the note on imports in jit/cli/shared.py, which "the top" below refers to.


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
        # The config jit reads here when none is named, but never .mcp.json (the file imported from).
        default = PROJECT_CONFIG_FILE if Path(PROJECT_CONFIG_FILE).is_file() else DEFAULT_CONFIG_FILE
        target = Path(_config_path(ctx, config_file) or default).expanduser().resolve()
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
        target_text = shown_target(s["entry"])  # as `jit servers` shows it: secrets in the file as ***
        table.add_row(markup(s["server"]), markup(s["entry"]["transport"]), markup(target_text), s["action"])
    out.print(table)
    for warning in result["warnings"]:
        err.print(f"[yellow]warning:[/] {markup(warning, layout=False)}", soft_wrap=True)
    if not dry_run and result["servers"]:
        out.print("next: `jit sync` to connect and discover their tools")


def import_servers(source: Path, target: Path, *, replace: bool = False, dry_run: bool = False) -> dict[str, Any]:
    """Merge ``source``'s ``mcpServers`` into ``target``'s ``servers``; validate, then write atomically."""
    src = source.expanduser().resolve()
    data = read_json(src, "server file")
    if not isinstance(data, dict) or "mcpServers" not in data:
        raise ConfigError("the file holds no 'mcpServers' object to import", path=str(src), key="mcpServers")
    incoming = parse_mcp_servers(data["mcpServers"], str(src))
    if not incoming:
        raise ConfigError("'mcpServers' is empty: nothing to import", path=str(src), key="mcpServers")
    raw: dict[str, Any] = read_json(target, "config file") if target.exists() else {}
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
    # Validate the merged file where it will live (relative paths resolve the same way). A ${VAR}
    # unset here is no reason to refuse: it is read when jit loads the config, in the environment
    # that runs it (a client's); it is named in a warning instead, as `jit setup` does.
    env = os.environ
    target.parent.mkdir(parents=True, exist_ok=True)
    check_merged(text, target, {**env, **placeholders(raw, env)}, src)
    if not dry_run:
        tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
        try:
            tmp.write_text(text, encoding="utf-8")
            os.replace(tmp, target)
        finally:
            tmp.unlink(missing_ok=True)
    warnings = [f"server {s!r} uses ${{{v}}}, which is not set here: jit needs it in the environment it runs in"
                for s, v in unset_vars(incoming, env)]
    return {"config": str(target), "source": str(src), "dry_run": dry_run, "servers": report, "warnings": warnings}


# --------------------------------------------------------------------------- setup

setup_app = typer.Typer(help="Make jit the one MCP server of a client's project (and undo it).",
                        no_args_is_help=True, rich_markup_mode=None)
app.add_typer(setup_app, name="setup")


@setup_app.command("claude-code")
def setup_claude_code_command(
    ctx: typer.Context,
    project: Annotated[
        Path, typer.Argument(metavar="PROJECT", help="The project directory holding .mcp.json (default: here).")
    ] = Path("."),
    undo: Annotated[bool, typer.Option("--undo", help="Restore .mcp.json and the config from the last setup's "
                                       "backup.")] = False,
    force: Annotated[bool, typer.Option("--force", help="With --undo: restore even files changed since the setup "
                                        "(their current text is kept beside the backup). With --subagents: replace "
                                        "agent files jit did not write (their text kept in .jit-setup/).")] = False,
    subagents: Annotated[bool, typer.Option("--subagents", help="Also write one Claude Code sub-agent per shard "
                                            "(.claude/agents/jit-SHARD.md), each seeing only its role's tools "
                                            "through jit; with --undo, remove only those.")] = False,
    shard: Annotated[list[str] | None, typer.Option("--shard", help="With --subagents: only this shard "
                                                    "(repeatable; default: every shard of jit's config).")] = None,
    name: Annotated[str, typer.Option("--name", help="jit's server name in .mcp.json.")] = "jit",
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Show what would be done; change nothing.")] = False,
    config_file: Annotated[Path | None, typer.Option(
        "--config", "-c", show_default=False,
        help="jit's config to move the servers into (created when missing). Default: $JIT_CONFIG, else "
             "PROJECT/.jit/config.json.")] = None,
    as_json: JsonOption = False,
) -> None:
    """Move PROJECT/.mcp.json's servers into jit's config and leave jit as the one server there.

    The config is -c FILE (or $JIT_CONFIG), else PROJECT/.jit/config.json; it is created when
    missing. .mcp.json starts `jit` from PATH with the config's path in the project, so a team
    can commit it. Both files are copied to PROJECT/.jit-setup/<time>/ first. --undo puts them
    back, and refuses when either changed since the setup.
    """
    if shard and not subagents:
        err.print("--shard needs --subagents")
        raise typer.Exit(2)
    with _errors(as_json):
        if undo and subagents:
            result = {"subagents": undo_subagents(project)}
        elif undo:
            result = undo_setup(project, force=force)
            if (project / ".jit-setup" / "subagents.json").is_file():
                result["subagents"] = undo_subagents(project)
        else:
            result = _setup_with_subagents(ctx, project, config_file, name=name, dry_run=dry_run,
                                           subagents=subagents, shards=shard, force=force)
    if as_json:
        _emit_json(result)
        return
    if "restored" not in result and "moved" not in result:  # the sub-agents alone
        _print_subagents(result["subagents"], undo=undo)
        return
    if undo:
        out.print(markup(f"restored {', '.join(result['restored'])}"), soft_wrap=True)
        if result["removed"]:  # the setup's files, and the catalog jit built in the .jit/ it made
            out.print(markup(f"removed what the setup made: {', '.join(result['removed'])}"), soft_wrap=True)
        for folder in result["left"]:
            out.print(markup(f"left {folder}"), soft_wrap=True)
        for path in result["kept"]:
            out.print(markup(f"the text it had before the undo: {path}"), soft_wrap=True)
        if "subagents" in result:
            _print_subagents(result["subagents"], undo=True)
        out.print("restart Claude Code (or run /mcp) to load the servers from .mcp.json again")
        return
    verb = "would move" if dry_run else "moved"
    moved = result["moved"]
    out.print(markup(f"{verb} {len(moved)} server{'' if len(moved) == 1 else 's'} from {result['mcp_file']} into "
                     f"{result['config']}: {', '.join(moved)}"), soft_wrap=True)
    (server, entry), = result["server"].items()
    line = " ".join([entry["command"], *entry["args"]])
    out.print(markup(f"{'would leave' if dry_run else 'left'} one server in .mcp.json: {server} = {line}"),
              soft_wrap=True)
    if not dry_run:
        out.print(markup(f"backup: {result['backup']} (undo: jit setup claude-code --undo)"), soft_wrap=True)
    for warning in result["warnings"]:
        err.print(f"[yellow]warning:[/] {markup(warning, layout=False)}", soft_wrap=True)
    if "subagents" in result:
        _print_subagents(result["subagents"], undo=False)
    if not dry_run:
        config_arg = entry["args"][-1]  # as .mcp.json gives it: relative to the project
        out.print(markup(f"next: start Claude Code in {result['project']} (it starts jit there) and approve the "
                         f"project server; `jit sync -c {config_arg}` there first makes the first start faster"),
                  soft_wrap=True)


def _setup_with_subagents(ctx: typer.Context, project: Path, config_file: Path | None, *, name: str, dry_run: bool,
                          subagents: bool, shards: list[str] | None, force: bool) -> dict[str, Any]:
    """The setup, then (``subagents``) the sub-agents; a project jit serves already gets the sub-agents alone."""
    chosen = _config_path(ctx, config_file)
    if subagents and is_set_up(project):
        return {"subagents": write_subagents(project, config=chosen, shards=shards, force=force, dry_run=dry_run)}
    result = setup_claude_code(project, config=chosen, name=name, dry_run=dry_run)
    if subagents:
        result["subagents"] = write_subagents(project, config=result["config"], shards=shards,
                                              hidden_servers=list(result["server"]), force=force, dry_run=dry_run)
    return result


def _print_subagents(result: dict[str, Any], *, undo: bool) -> None:
    if undo:
        for path in result["removed"]:
            out.print(markup(f"removed {path}"), soft_wrap=True)
        for why in result["left"]:
            out.print(markup(f"left {why}"), soft_wrap=True)
        return
    prefix = "would be " if result["dry_run"] else ""
    for agent in result["agents"]:
        out.print(markup(f"sub-agent {agent['name']} ({agent['shard']} role): {prefix}{agent['action']} "
                         f"{agent['path']}"), soft_wrap=True)
    for path in result["removed"]:
        out.print(markup(f"{prefix}removed {path} (its shard is no longer wanted)"), soft_wrap=True)
    for warning in result["warnings"]:
        err.print(f"[yellow]warning:[/] {markup(warning, layout=False)}", soft_wrap=True)
