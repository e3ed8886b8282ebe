"""``jit serve`` and ``jit eval``: handing the process to the MCP server or the evaluator."""

from __future__ import annotations

import logging
from typing import Annotated

import typer

from ..config_files import load_config
from ..display import log_to_stderr
from ..errors import SelectionError
from ..text import remove_hidden
from .shared import (
    EXIT_USAGE,
    ConfigOption,
    _config_file,
    _errors,
    _check_names,
    _fail,
    _State,
    app,
)

# Heavy wings are imported inside the commands that run them (the selection wing, the MCP
# SDK): see the note on imports in jit/cli/shared.py, which "the top" below refers to.


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
                     "(proxied) plus the meta-tools and set_task, with which the client sets the task."),
    ] = None,
    task: Annotated[
        str | None,
        typer.Option("--task", help="The task to compile for with --expose-shard at start (the client's "
                     "set_task changes it; default: none, the shard's skeleton tools)."),
    ] = None,
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
    _check_names(False, {"--expose-shard": expose_shard})
    if task is not None and expose_shard is None:
        _fail("--task applies to --expose-shard", EXIT_USAGE, as_json=False)
    if task is not None and not remove_hidden(task).strip():  # as compile() refuses it
        _fail("--task is empty: say what the exposed shard is spawned to do", EXIT_USAGE, as_json=False)
    if budget is not None and expose_shard is None:
        _fail("--budget applies to --expose-shard", EXIT_USAGE, as_json=False)
    host, port = "127.0.0.1", 0
    if http is not None:
        h, sep, p = http.rpartition(":")
        if not sep or not p.isdigit() or not 0 < int(p) < 65536:
            _fail(f"--http expects HOST:PORT or :PORT, got {http!r}", EXIT_USAGE, as_json=False)
        host, port = (h.strip("[]") or "127.0.0.1"), int(p)
        from ..serve.httpguard import RemoteBindRefused, http_access  # the MCP server SDK (see the top)

        try:  # before anything loads or binds
            http_access(host, allow_remote=allow_remote, allowed_hosts=allow_host or ())
        except RemoteBindRefused as exc:
            _fail(str(exc), EXIT_USAGE, as_json=False)
    elif allow_remote or allow_host:
        _fail("--allow-remote and --allow-host apply to --http", EXIT_USAGE, as_json=False)
    from ..serve.server import run  # the MCP server SDK: see the note on imports at the top
    from ..serve.state import ServeOptions

    log_to_stderr()  # before the SDK sets up logging: upstream text in log lines is escaped
    logging.getLogger("jit.serve.startup").setLevel(logging.INFO)  # what the start-up is doing (jit/serve/state.py)
    with _errors(False):
        # Validate the config before any transport opens: a broken file is an exit code, not a hung client.
        config = load_config(_config_file(ctx, config_file))
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
    from ..evaluation.evaluate import main as evaluate_main  # the selection wing and the datasets (see the top)

    argv = list(args or []) + list(ctx.args)
    state: _State = ctx.obj or _State()
    if state.config_path is not None and "--config" not in argv:
        argv += ["--config", str(state.config_path)]
    with _errors(False):
        # A jit error: its message and documented exit code; a usage mistake: argparse's, exit 2.
        code = evaluate_main(argv, raise_errors=True, prog="jit eval")
    raise typer.Exit(code or 0)
