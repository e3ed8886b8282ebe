"""The CLI's shared parts: the typer ``app`` and its root options, the consoles, exit codes,
and the plumbing every command uses (config, catalog, errors, JSON output).

The command modules (jit/cli/catalog.py, ...) import from here and register their
commands on ``app``; jit/cli/__init__.py imports them all.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import os
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated, Any, NoReturn

import typer
from rich.console import Console

from .. import __version__
from ..catalog.ownership import open_catalog
from ..catalog.store import Store
from ..config import Config
from ..config_files import check_store_path, load_config
from ..display import json_text, markup, visible
from ..embedding.factory import embedder_from_config
from ..errors import (
    ConfigError,
    InvalidArgumentsError,
    JitError,
    SelectionError,
    ServerConnectError,
    ServerDisconnectedError,
    ServerTimeoutError,
    ServerUnavailableError,
    ToolCallError,
    ToolDeniedError,
    ToolNotApprovedError,
    ToolNotFoundError,
)
from ..models import MAX_NAME_CHARS
from ..paths import CONFIG_ENV_VAR, DEFAULT_CONFIG_FILE, FALLBACK_CONFIG_FILE, default_config_file

# Each command imports the wing it runs where that wing is heavy to load: the selection
# wing (compiler, rules, schema checks: ~0.7 s) and the MCP SDK (clients, sync, serve,
# httpguard: ~1 s). So `jit --help`, `jit tools` and `jit show` start in about half a
# second. Outside jit/cli/ only jit/__main__.py imports the CLI, so these imports are not
# hiding a cycle (tests/test_layers.py).

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
    ToolDeniedError: 7,
    ToolCallError: 6,
}
EXIT_USAGE = 2
EXIT_TOOL_ERROR = 6
EXIT_INTERRUPTED = 130


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
QuietOption = Annotated[bool, typer.Option("--quiet", "-q", help="No progress on stderr (a bar on a terminal, "
                                           "a line every few seconds otherwise).")]
#: ``--config`` is accepted before the command (``jit --config F sync``) and after it (``jit sync --config F``).
_CONFIG_HELP = ("Config file (jit's config.json, or an .mcp.json / claude_desktop_config.json). "
                f"Default: ${CONFIG_ENV_VAR}, else ./.jit/config.json, else ./config.json, else ./.mcp.json.")
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


def _config_file(ctx: typer.Context, path: Path | None) -> Path | None:
    """The config file to read: as :func:`_config_path`, else the default, which falls back
    to ``./.mcp.json`` when there is no ``./config.json`` (said in one note line on stderr,
    so nobody wonders where the servers came from)."""
    chosen = _config_path(ctx, path)
    if chosen is None and default_config_file(os.environ) == FALLBACK_CONFIG_FILE:
        err.print(f"note: no {DEFAULT_CONFIG_FILE} here: reading the servers of ./{FALLBACK_CONFIG_FILE} "
                  f"(-c FILE names another config)", soft_wrap=True)
        return Path(FALLBACK_CONFIG_FILE)
    return chosen


def _config(ctx: typer.Context, path: Path | None) -> Config:
    return load_config(_config_file(ctx, path))


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


def _check_names(as_json: bool, names: dict[str, str | None]) -> None:
    """Refuse a server, tool or shard name (``{"--server": value}``) longer than any the catalog
    holds, without printing it back: an error line echoing a 100 KB argument helps nobody."""
    for what, value in names.items():
        if value is not None and len(value) > MAX_NAME_CHARS:
            _fail(f"{what} is {len(value):,} characters long; a server, tool or shard name has at most "
                  f"{MAX_NAME_CHARS}", EXIT_USAGE, as_json=as_json)


def _split_key(key: str, *, as_json: bool) -> tuple[str, str]:
    """``SERVER/TOOL`` (or the rendered ``SERVER__TOOL``) into its two parts."""
    for sep in ("/", "__"):
        server, found, tool = key.partition(sep)
        if found and server and tool:
            _check_names(as_json, {"the server name": server, "the tool name": tool})
            return server, tool
    shown = repr(key) if len(key) <= MAX_NAME_CHARS else f"{len(key):,} characters"
    _fail(f"expected SERVER/TOOL, got {shown}", EXIT_USAGE, as_json=as_json)


def _resolve_key(store: Store, key: str, parts: tuple[str, str]) -> tuple[str, str]:
    """``parts`` (from :func:`_split_key`), or, for a rendered name (``SERVER__TOOL`` as a tool set
    or ``search_tools`` gives it), the tool that name stands for: names that had to be changed carry
    a hash (``f__get_weather_f22aa01e`` is ``f/get.weather``), and where two collide the catalog's
    mapping decides (jit.selection.render.rendered_names), not a split at ``__``."""
    if "/" in key:
        return parts
    from ..selection.render import rendered_names

    for head, name in rendered_names(store.tool_heads()).items():
        if name == key:
            return head
    return parts


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
    # Scoped to this config's servers (and the harness); an error names the catalog and the key.
    return open_catalog(config)


def _embedder(config: Config) -> Any:
    return embedder_from_config(config.embedding)


def _run(coro: Any) -> Any:
    """Run a coroutine on a fresh asyncio loop (the client manager needs asyncio)."""
    return asyncio.run(coro)
