"""``jit usage`` and ``jit usage forget``: what selection learned from agents' calls, and forgetting it."""

from __future__ import annotations

import time
from typing import Annotated

import typer
from rich.table import Table

from ..display import markup
from .shared import (
    EXIT_USAGE,
    ConfigOption,
    JsonOption,
    _ago,
    _check_names,
    _config,
    _emit_json,
    _errors,
    _fail,
    _open_store,
    app,
    out,
)

usage_app = typer.Typer(help="What selection learned from the tools agents called, per shard and tool.",
                        invoke_without_command=True, rich_markup_mode=None)
app.add_typer(usage_app, name="usage")

ShardOption = Annotated[str | None, typer.Option("--shard", help="Only this shard's tasks.")]


@usage_app.callback()
def usage_command(ctx: typer.Context, shard: ShardOption = None, config_file: ConfigOption = None,
                  as_json: JsonOption = False) -> None:
    """Per shard and tool: the recorded tasks it was called for successfully, those whose calls of it
    all failed, its calls, the hosts that reported them and its last call."""
    if ctx.invoked_subcommand is not None:
        return
    _check_names(as_json, {"--shard": shard})
    with _errors(as_json):
        config = _config(ctx, config_file)
        with _open_store(config) as store:
            rows = store.learned_summary(shard)
            tasks = store.learned_task_count()
    if as_json:
        _emit_json({"tasks": tasks, "tools": rows})
        return
    if not rows:
        out.print("nothing learned yet: no call was reported for a compiled task"
                  + ("" if config.learning.enabled else " (learning.enabled is off in this config)"))
        return
    table = Table(title=f"learned from {tasks} recorded task{'s' * (tasks != 1)}", title_justify="left")
    for col in ("shard", "server", "tool", "tasks ok", "tasks failed", "calls", "hosts", "last call"):
        table.add_column(col, justify="left" if col in ("shard", "server", "tool", "last call") else "right")
    for r in rows:
        table.add_row(markup(r["shard"]), markup(r["server"]), markup(r["tool"]), str(r["ok_tasks"]),
                      str(r["failed_tasks"]), str(r["calls"]), str(r["hosts"]), _ago(r["last_called_at"]))
    out.print(table)


@usage_app.command("forget")
def forget_command(
    ctx: typer.Context,
    tool: Annotated[str | None, typer.Option("--tool", help="Only the calls of tools of this name.")] = None,
    server: Annotated[str | None, typer.Option("--server", "-s", help="Only the calls of this server's tools.")] = None,
    shard: ShardOption = None,
    older_than: Annotated[float | None, typer.Option("--older-than", metavar="DAYS",
                                                     help="Only tasks recorded more than DAYS days ago.")] = None,
    config_file: ConfigOption = None,
    as_json: JsonOption = False,
) -> None:
    """Forget what was learned: by tool, server, shard or age (the options given all apply; at least one)."""
    _check_names(as_json, {"--tool": tool, "--server": server, "--shard": shard})
    if tool is None and server is None and shard is None and older_than is None:
        _fail("say what to forget: --tool, --server, --shard or --older-than", EXIT_USAGE, as_json=as_json)
    if older_than is not None and older_than < 0:
        _fail(f"--older-than is a number of days, at least 0; got {older_than}", EXIT_USAGE, as_json=as_json)
    with _errors(as_json):
        config = _config(ctx, config_file)
        before = time.time() - older_than * 86_400 if older_than is not None else None
        with _open_store(config) as store:
            n = store.forget_learned(tool=tool, server=server, shard=shard, before=before)
    if as_json:
        _emit_json({"forgotten_calls": n})
        return
    out.print(f"forgot {n} learned call{'s' * (n != 1)}")
