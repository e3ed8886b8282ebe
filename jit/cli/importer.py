"""``jit import``: copying an .mcp.json / claude_desktop_config.json's servers into the config."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.table import Table

from ..config import _read_json, load_config, parse_mcp_servers
from ..display import markup
from ..errors import ConfigError
from .shared import (
    ConfigOption,
    JsonOption,
    _config_path,
    _emit_json,
    _errors,
    app,
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
