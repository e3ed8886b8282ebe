"""Reading a config: ``config.json`` (or an ``mcpServers`` file) and the server files it names.

:func:`load_config` finds the file (``$JIT_CONFIG``, ``./config.json``, ``./.mcp.json``:
:func:`jit.paths.default_config_file`), reads it strictly (:mod:`jit.jsonfile`), takes
jit's own ``"servers"`` and any ``"mcpServers"`` (of the file and of ``"server_files"``),
expands ``${VAR}`` and ``${VAR:-default}`` in command, args, env, cwd, url and headers, as
Claude Code does (an entry using an unset variable becomes an
:class:`~jit.servers_config.UnresolvedServerConfig`: configured, never started), checks
each entry, and resolves what is relative to the file that wrote it. An unknown key, a
wrong type or an impossible value raises :class:`~jit.errors.ConfigError` naming the file
and the key.

Two shapes are accepted for servers, and may be mixed in one file:

* jit's own ``"servers": {name: {"transport": "stdio"|"http"|"sse", ...}}``;
* the ``"mcpServers"`` map of ``.mcp.json`` / ``claude_desktop_config.json``
  (``{"command", "args", "env"}`` or ``{"type": "http"|"sse", "url", "headers"}``),
  so a user can point ``--config`` straight at a file they already have, or list
  such files under ``"server_files"``.

:func:`check_store_path` makes the catalog's directory ready before the catalog is opened.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from .config import Config, ConfigFile, build_config, resolve_path
from .errors import ConfigError
from .jsonfile import read_json
from .paths import CONFIG_ENV_VAR, DEFAULT_CONFIG_FILE, FALLBACK_CONFIG_FILE, default_config_file
from .servers_config import (
    DEFAULT_CALL_TIMEOUT,
    DEFAULT_TIMEOUT,
    StdioServerConfig,
    UnresolvedServerConfig,
    Where,
    _expand_server,
    _name_problem,
    parse_mcp_servers,
    shown_target,
    unset_problem,
)
from .validation import validation_error

__all__ = ["check_store_path", "load_config"]


_JIT_KEYS = frozenset(ConfigFile.model_fields)


def load_config(path: str | os.PathLike[str] | None = None, *, env: Mapping[str, str] | None = None) -> Config:
    """Load and validate a config file.

    ``path`` defaults to ``$JIT_CONFIG``, then ``./config.json``, then ``./.mcp.json``
    (:func:`jit.paths.default_config_file`). A file holding only ``mcpServers`` (a
    ``.mcp.json`` or ``claude_desktop_config.json``) is accepted as is: its other
    top-level keys belong to that client and are ignored.
    """
    env = os.environ if env is None else env
    defaulted = path is None
    if path is None:
        path = default_config_file(env)
    p = resolve_path(Path(path).expanduser(), None, None)
    if defaulted and path == DEFAULT_CONFIG_FILE and not p.exists():  # often a new user's first error: say what to do
        raise ConfigError(f"config file not found: no {DEFAULT_CONFIG_FILE} or {FALLBACK_CONFIG_FILE} in {p.parent}; "
                          f"name one with -c FILE or ${CONFIG_ENV_VAR}=FILE (see docs/configuration.md)", path=str(p))
    raw = read_json(p, "config file")
    if not isinstance(raw, dict):
        raise ConfigError("the top level must be a JSON object", path=str(p))
    foreign_file = "mcpServers" in raw and not (_JIT_KEYS & raw.keys())
    body = {k: v for k, v in raw.items() if k in _JIT_KEYS} if foreign_file else dict(raw)
    body.pop("mcpServers", None)
    mcp_servers = raw.get("mcpServers")
    body.pop("$schema", None)
    try:
        parsed = ConfigFile.model_validate({k: v for k, v in body.items() if k != "servers"})
    except ValidationError as exc:
        raise validation_error(exc, str(p)) from None
    servers_raw: dict[str, tuple[dict[str, Any], str, str]] = {}
    if "servers" in body:
        if not isinstance(body["servers"], dict):
            raise ConfigError("'servers' must be an object", path=str(p), key="servers")
        for name, entry in body["servers"].items():
            servers_raw[name] = (entry, str(p), "servers")
    sources: list[tuple[Any, str]] = []
    if "mcpServers" in raw:
        sources.append((mcp_servers, str(p)))
    for i, extra in enumerate(parsed.server_files):
        ep = resolve_path(p.parent / Path(extra).expanduser(), str(p), f"server_files.{i}")
        data = read_json(ep, f"server file (server_files[{i}])")
        if not isinstance(data, dict) or "mcpServers" not in data:
            raise ConfigError("a server file must hold an 'mcpServers' object", path=str(ep), key="mcpServers")
        sources.append((data["mcpServers"], str(ep)))
    for data, src in sources:
        for name, entry in parse_mcp_servers(data, src).items():
            if name in servers_raw:
                raise ConfigError(
                    f"server {name!r} is defined twice (also in {servers_raw[name][1]})", path=src, key=f"mcpServers.{name}"
                )
            servers_raw[name] = (entry, src, "mcpServers")
    servers: dict[str, Any] = {}
    for name, (entry, src, where) in servers_raw.items():
        problem = _name_problem(name)
        if problem:
            raise ConfigError(problem, path=src, key=f"{where}.{name}")
        written = shown_target(entry) if isinstance(entry, dict) else None  # before ${VAR} is expanded
        unset: dict[str, list[tuple[str, Where]]] = {}
        if isinstance(entry, dict):
            entry, unset = _expand_server(name, entry, env, src, where)
            if "transport" not in entry:
                # As in mcpServers files, the transport follows from the keys given.
                entry["transport"] = "http" if "url" in entry and "command" not in entry else "stdio"
        try:
            one = ConfigFile.model_validate({"servers": {name: entry}})
        except ValidationError as exc:
            # A value left empty by an unset variable may not validate (an empty url): that is the
            # variable's problem, the server's alone. Anything else wrong is the file's.
            if not _only_where_unset(exc, unset):
                err = validation_error(exc, src)
                key = err.key.replace("servers.", f"{where}.", 1) if err.key else where
                raise ConfigError(err.message.split(" (file ")[0], path=src, key=key) from None
        if unset:
            server = UnresolvedServerConfig(
                transport=entry["transport"], enabled=entry.get("enabled", True),
                timeout=entry.get("timeout", DEFAULT_TIMEOUT), call_timeout=entry.get("call_timeout", DEFAULT_CALL_TIMEOUT),
                problem=unset_problem(unset, src))
            server._written = written
            servers[name] = server
            continue
        server = one.servers[name]
        if isinstance(server, StdioServerConfig) and server.cwd and not Path(server.cwd).expanduser().is_absolute():
            # Relative to the file that defines it, so a config works from any working directory.
            cwd = resolve_path(Path(src).parent / Path(server.cwd).expanduser(), src, f"{where}.{name}.cwd")
            server = server.model_copy(update={"cwd": str(cwd)})
        if isinstance(server, StdioServerConfig) and server.cwd and server.enabled:
            _check_cwd(server.cwd, src, f"{where}.{name}.cwd")
        server._written = written
        servers[name] = server
    return build_config(parsed, p.parent, p, servers)


def _only_where_unset(exc: ValidationError, unset: Mapping[str, list[tuple[str, Where]]]) -> bool:
    """Whether every error of a server entry's validation is at a value an unset variable emptied."""
    places = [at for uses in unset.values() for _key, at in uses]
    # An error's location is ("servers", name, transport tag, field, ...).
    return bool(places) and all(any(tuple(e["loc"][3:3 + len(at)]) == at for at in places) for e in exc.errors())


def _check_cwd(cwd: str, src: str, key: str) -> None:
    """A stdio server's working directory must exist when the config is loaded.

    Otherwise the operating system reports the failed ``chdir`` as if the program
    were missing (``cannot start '/the/cwd'``) only when the server is started.
    Disabled servers are not checked.
    """
    where = Path(cwd).expanduser()
    if not where.exists():
        raise ConfigError(f"the server's working directory {cwd!r} does not exist", path=src, key=key)
    if not where.is_dir():
        raise ConfigError(f"the server's working directory {cwd!r} is not a directory", path=src, key=key)


def check_store_path(config: Config) -> None:
    """Create the catalog's directory, or raise a ConfigError naming the key ``store``.

    Called before the catalog is opened (``jit`` commands, ``jit serve``), so an
    unusable ``store`` (under a file, in a directory that cannot be created or
    written, a directory itself) is one clear error instead of an OS traceback
    or SQLite's "unable to open database file".
    """
    target = config.store_path
    src = str(config.path) if config.path is not None else None
    if config.store_url is not None:  # only this host's derived files are local
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise ConfigError(f"cannot create the directory {target.parent} for this host's files of the shared"
                              f" catalog: {exc.strerror or exc}", path=src, key="store") from None
        return
    if target.is_dir():
        raise ConfigError(f"the catalog path {target} is a directory; 'store' must name a file", path=src, key="store")
    if target.exists() and not target.is_file():  # a device or a pipe (/dev/null): no catalog lives there
        raise ConfigError(f"the catalog path {target} is not a regular file", path=src, key="store")
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ConfigError(f"cannot create the catalog's directory {target.parent}: {exc.strerror or exc}",
                          path=src, key="store") from None
    # SQLite writes its -wal and -shm files beside the catalog, so the directory must be writable too.
    if not os.access(target.parent, os.W_OK | os.X_OK):
        raise ConfigError(f"the catalog's directory {target.parent} is not writable", path=src, key="store")
    if not target.exists():
        # os.access answers yes to root everywhere (/proc too): create a file there to be sure.
        try:
            with tempfile.TemporaryFile(dir=target.parent, prefix=".jit-probe-"):
                pass
        except OSError as exc:
            raise ConfigError(f"cannot create files in the catalog's directory {target.parent}: "
                              f"{exc.strerror or exc}", path=src, key="store") from None
    if target.exists() and not os.access(target, os.R_OK | os.W_OK):
        raise ConfigError(f"the catalog {target} is not readable and writable", path=src, key="store")
