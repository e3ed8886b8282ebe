"""``jit compile`` and ``jit call``: a shard's tool set for a task, and one proxied tool call."""

from __future__ import annotations

import dataclasses
import json
import sys
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.console import Console
from rich.table import Table

from ..catalog.store import Store
from ..config import Config
from ..display import json_text, markup, visible
from ..embedding.protocol import FIRST_EXPORT_NOTE, exports_first
from ..errors import SelectionError
from ..jsonfile import unique_keys
from ..payloads import summarize
from ..selection.tiers import Tier
from ..text import remove_hidden
from .shared import (
    EXIT_TOOL_ERROR,
    EXIT_USAGE,
    ConfigOption,
    JsonOption,
    _config,
    _embedder,
    _emit_json,
    _errors,
    _check_names,
    _fail,
    _open_store,
    _run,
    _resolve_key,
    _split_key,
    app,
    err,
    out,
)

if TYPE_CHECKING:
    from ..selection.toolset import ToolSet

# Heavy wings are imported inside the commands that run them (the selection wing, the MCP
# SDK): see the note on imports in jit/cli/shared.py, which "the top" below refers to.


#: What ``--format`` offers: the renderings of jit/selection/render.py and the provider-native deferred
#: ones of jit/selection/deferred.py (named here, so the option is checked before the selection wing loads).
FORMATS = ("markdown", "anthropic", "openai", "json", "anthropic_deferred", "openai_deferred")


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
        typer.Option("--format", help="Print the rendering instead of the table: markdown, anthropic, openai, json, "
                                      "anthropic_deferred or openai_deferred."),
    ] = None,
    explain: Annotated[bool, typer.Option("--explain", help="Show why each tool landed in its tier.")] = False,
    config_file: ConfigOption = None,
    as_json: JsonOption = False,
) -> None:
    """Compile the tool set for a shard and task: tools by tier with scores, tokens used against the budget."""
    _check_names(as_json, {"--shard": shard})
    if fmt is not None and fmt not in FORMATS:
        _fail(f"--format must be one of {', '.join(FORMATS)}, got {fmt!r}", EXIT_USAGE, as_json=as_json)
    with _errors(as_json):
        if not remove_hidden(task).strip():  # refused as compile() refuses it, before the model loads
            raise SelectionError("--task is empty: say what the shard is spawned to do", shard=shard)
        config = _config(ctx, config_file)
        with _open_store(config) as store:
            embedder = _embedder(config)
            if exports_first(embedder):  # ~10 s the first time on a machine: say so
                err.print(f"loading the embedding model: {FIRST_EXPORT_NOTE}")
            toolset = compile_toolset(config, store, embedder, shard=shard, task=task, budget=budget)
            if as_json:
                data = summarize(toolset)
                if explain:
                    data["explain"] = toolset.explain()
                    data["legend"] = {k: c.to_dict() for k, c in toolset.legend().items()}
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
    from ..selection.compiler import Compiler  # the selection wing: see the note on imports at the top
    from ..selection.task import TaskContext

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
            marks = " ".join(m for m, on in (("skeleton", s.skeleton), (f"step {s.step}", s.step),
                                             ("[yellow]offline[/]", s.offline)) if on)
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
        legend = toolset.legend()
        if legend:  # each rule a reason cites, once
            console.print("[bold]rules[/]")
            width = max(len(k) for k in legend)
            for key, c in legend.items():
                console.print(f"  {markup(key.ljust(width), layout=False)}  {markup(c.text, layout=False)}",
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
        arguments = json.loads(args, object_pairs_hook=unique_keys)
    except json.JSONDecodeError as exc:
        _fail(f"--args is not valid JSON: {exc.msg} at column {exc.colno}", EXIT_USAGE, as_json=as_json)
    except RecursionError:
        _fail("--args is nested too deeply to read", EXIT_USAGE, as_json=as_json)
    except ValueError as exc:  # a key given twice, an integer of more than 4,300 digits
        _fail(f"--args cannot be read: {exc}", EXIT_USAGE, as_json=as_json)
    if not isinstance(arguments, dict):
        _fail("--args must be a JSON object, e.g. '{\"path\": \"README.md\"}'", EXIT_USAGE, as_json=as_json)
    with _errors(as_json):
        config = _config(ctx, config_file)
        with _open_store(config) as store:
            server, tool = _resolve_key(store, key, (server, tool))
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
    from ..client.manager import ClientManager  # the MCP client SDK: see the note on imports at the top

    # Connect only the server being called: faster, and the others are left alone.
    if server in config.servers:
        config = dataclasses.replace(config, servers={server: config.servers[server]})
    async with ClientManager(config, store) as manager:
        return await manager.call_tool(server, tool, arguments, timeout=timeout)
