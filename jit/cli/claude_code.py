"""One-step setup of a Claude Code project: jit becomes the project's one MCP server, and back.

Pointing jit at a project's ``.mcp.json`` leaves Claude Code loading that same file, so every
upstream would appear twice: raw, and through jit. :func:`setup_claude_code` moves the
project's servers from ``.mcp.json`` into jit's config (``.jit/config.json``, a file no app of the
project claims) and leaves one server in ``.mcp.json``: ``jit serve --stdio -c .jit/config.json``.
:func:`undo_setup` puts both files back as they were.

What it writes is what a team commits: ``.mcp.json`` names the program ``jit``, found on the ``PATH``
of whoever starts Claude Code, and the config by its path in the project (not one person's
installation and checkout); ``.jit/.gitignore`` keeps the catalog jit builds beside the config out
of git.

Nothing is lost on the way:

* every input is checked before anything is written (the ``.mcp.json`` read strictly, the
  merged jit config validated where it will live), and a problem is a
  :class:`~jit.errors.ConfigError` naming the file and key, with both files untouched;
* both files are copied, byte for byte, into ``<project>/.jit-setup/<UTC time>/`` before either
  is replaced (each replaced atomically), with a ``setup.json`` recording what was written;
* the undo restores those copies only when both files are still exactly what the setup
  wrote; a file changed since is refused by name (``force`` restores anyway, after copying
  the changed files beside the backup); it removes the ``.jit/`` the setup made only when
  nothing is in it but the setup's files and jit's catalog.

The servers' entries move as written (``${VAR}`` references unexpanded, relative commands
relative): Claude Code starts ``jit serve`` in the directory it would have started them in,
and jit starts a server without ``cwd`` in its own working directory, so each runs as before.
A relative ``cwd`` is rewritten relative to the config (jit reads it so), naming the same directory.

Claude Code also reads servers from elsewhere: ``.mcp.json`` files of parent directories,
the user's ``~/.claude.json`` (user scope, and local scope per project). The setup cannot
move those; it reports the ones it sees as warnings.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import os
import re
import shutil
import sys
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ..config import Config
from ..config_files import load_config
from ..errors import ConfigError
from ..jsonfile import read_json
from ..paths import DEFAULT_CONFIG_FILE, FALLBACK_CONFIG_FILE, PROJECT_CONFIG_FILE, write_atomic
from ..servers_config import parse_mcp_servers

__all__ = ["BACKUP_DIR", "JIT_PROGRAM", "is_set_up", "jit_command", "setup_claude_code", "undo_setup"]

#: The project folder holding one backup per setup, ``<UTC time>/`` (``-undone`` once undone).
BACKUP_DIR = ".jit-setup"
#: The program ``.mcp.json`` starts jit with: found on the ``PATH`` of whoever starts Claude Code, as
#: the file is usually committed (an absolute path would be one person's installation).
JIT_PROGRAM = "jit"
#: The folder of jit's config in a project (``.jit/config.json``), and the catalog a config the setup
#: creates there keeps beside it (the default ``store`` is relative to the config: ``.jit/.jit/…``).
JIT_DIR = Path(PROJECT_CONFIG_FILE).parent.name
CATALOG_FILE = "catalog.db"
_MANIFEST = "setup.json"
_UNDONE = "-undone"
_MCP_WHAT = "Claude Code's server file"
_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(:-[^}]*)?\}")


def jit_command() -> list[str]:
    """The command that starts this installation of jit: the ``jit`` console script beside the
    running interpreter (a venv's ``bin/``), else ``python -m jit`` with this interpreter.

    Absolute, for a client's own file (one person's setup); the interpreter's path is kept as it is
    (not resolved), so a venv's ``python`` keeps its venv."""
    python = Path(sys.executable).absolute()
    for name in ("jit", "jit.exe"):
        script = python.parent / name
        if script.is_file() and os.access(script, os.X_OK):
            return [str(script)]
    return [str(python), "-m", "jit"]


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _is_jit(entry: Any) -> bool:
    """Whether an ``mcpServers`` entry starts ``jit serve`` (the console script or ``-m jit``)."""
    if not isinstance(entry, dict) or not isinstance(entry.get("command"), str):
        return False
    args = [a for a in entry.get("args") or [] if isinstance(a, str)]
    program = Path(entry["command"]).name.lower().removesuffix(".exe")
    runs_jit = program == "jit" or any(a == "-m" and b == "jit" for a, b in itertools.pairwise(args))
    return runs_jit and "serve" in args


def is_set_up(project: str | os.PathLike[str]) -> bool:
    """Whether ``project/.mcp.json`` already has a server that runs ``jit serve``."""
    path = Path(project).expanduser().resolve() / FALLBACK_CONFIG_FILE
    return path.is_file() and any(_is_jit(e) for e in _mcp_servers(path).values())


def _mcp_servers(path: Path) -> dict[str, Any]:
    """The ``mcpServers`` object of an ``.mcp.json``, read strictly."""
    data = read_json(path, _MCP_WHAT)
    if not isinstance(data, dict):
        raise ConfigError("the top level must be a JSON object", path=str(path))
    servers = data.get("mcpServers")
    if not isinstance(servers, dict):
        raise ConfigError("the file holds no 'mcpServers' object", path=str(path), key="mcpServers")
    return servers


def placeholders(entries: Mapping[str, Any], env: Mapping[str, str]) -> dict[str, str]:
    """``${VAR}`` references with no default that are unset here, each mapped to a stand-in value.

    The servers' environment is the client's, not this shell's: a variable unset here is no
    reason to refuse the setup, only to say that ``jit serve`` will need it."""
    text = json.dumps(entries)
    return {m.group(1): "jit-setup-placeholder" for m in _VAR.finditer(text)
            if m.group(2) is None and m.group(1) not in env}


def check_merged(text: str, target: Path, env: Mapping[str, str], source: Path, *, hint: str = "") -> Config:
    """Load ``text`` as the jit config at ``target`` (relative paths resolve as they will); ``hint``
    ends the error's message."""
    tmp = target.with_name(f".{target.name}.{os.getpid()}.setup.tmp")
    try:
        tmp.write_text(text, encoding="utf-8")
        return load_config(tmp, env=env)
    except ConfigError as exc:
        # Named by the file it is about to become, not the temporary copy it was checked in.
        where = ", ".join(p for p in (f"file {exc.path}" if exc.path else "", f"key {exc.key!r}" if exc.key else "")
                          if p)
        problem = exc.message.removesuffix(f" ({where})") if where else exc.message
        path = str(target) if exc.path in (None, str(tmp)) else exc.path
        raise ConfigError(f"the jit config with the servers of {source} would not load: {problem}{hint}",
                          path=path, key=exc.key) from None
    except OSError as exc:
        raise ConfigError(f"cannot write beside the jit config: {exc.strerror or exc}", path=str(target)) from None
    finally:
        tmp.unlink(missing_ok=True)


def _claude_config(env: Mapping[str, str]) -> Path:
    """Claude Code's user file: ``$CLAUDE_CONFIG_DIR/.claude.json``, else ``~/.claude.json``."""
    base = env.get("CLAUDE_CONFIG_DIR") or env.get("HOME") or str(Path.home())
    return Path(base).expanduser() / ".claude.json"


def _warnings(project: Path, moved: list[str], env: Mapping[str, str]) -> list[str]:
    """Servers Claude Code would still load beside jit in ``project``, from files the setup leaves alone."""
    out: list[str] = []
    for parent in project.parents:
        other = parent / FALLBACK_CONFIG_FILE
        if not other.is_file():
            continue
        try:
            names = sorted(_mcp_servers(other))
        except ConfigError as exc:
            out.append(f"{other} cannot be read ({exc.message}); Claude Code reads .mcp.json files of parent "
                       f"directories too")
            continue
        if names:
            out.append(f"{other} also gives Claude Code servers when it starts in {project} (it reads .mcp.json "
                       f"files of parent directories too): {', '.join(names)}; they would appear beside jit "
                       f"(move them with `jit setup claude-code {parent}`, or remove them)")
    user_file = _claude_config(env)
    try:
        user = json.loads(user_file.read_text(encoding="utf-8")) if user_file.is_file() else {}
    except (OSError, ValueError):
        user = {}
    if isinstance(user, dict):
        servers = user.get("mcpServers")
        same = sorted(set(moved) & set(servers)) if isinstance(servers, dict) else []
        if same:
            out.append(f"{user_file} holds user-scope servers of the same names: {', '.join(same)}; Claude Code "
                       f"loads them beside jit (`claude mcp remove --scope user NAME` removes one)")
        projects = user.get("projects")
        local = projects.get(str(project)) if isinstance(projects, dict) else None
        servers = local.get("mcpServers") if isinstance(local, dict) else None
        if isinstance(servers, dict) and servers:
            out.append(f"{user_file} holds local-scope servers for {project}: {', '.join(sorted(servers))}; "
                       f"Claude Code loads them beside jit (`jit import` can copy them into jit's config, "
                       f"`claude mcp remove --scope local NAME` removes one)")
    return out


def _stamp(root: Path, now: datetime) -> Path:
    """A fresh backup folder under ``root``, named by the UTC time (``-2``, ``-3``… on a clash)."""
    base = now.astimezone(UTC).strftime("%Y%m%dT%H%M%SZ")
    folder, n = root / base, 1
    while folder.exists() or folder.with_name(folder.name + _UNDONE).exists():
        n += 1
        folder = root / f"{base}-{n}"
    return folder


def _write(path: Path, data: bytes) -> None:
    write_atomic(path, lambda f: f.write(data))


def _moved_cwd(entry: dict[str, Any], source: Path, config_dir: Path) -> dict[str, Any]:
    """``entry`` with a relative ``cwd`` rewritten for the config's directory: jit reads it relative to
    the file holding it, so it names the directory it named in ``.mcp.json`` (one given through a
    ``${VAR}`` or from ``~`` is kept as written)."""
    cwd = entry.get("cwd")
    if source == config_dir or not isinstance(cwd, str) or not cwd or cwd.startswith("~") or "$" in cwd \
            or Path(cwd).is_absolute():
        return entry
    return {**entry, "cwd": os.path.relpath(source / cwd, config_dir)}


def _gitignore(catalog: Path, folder: Path) -> str:
    """``.jit/.gitignore``: what jit keeps there for one host (the catalog, its SQLite side files, the
    index and view files derived from it) stays out of git; jit's config beside it does not."""
    lines = ["# Written by `jit setup claude-code`. The catalog and the files jit derives from it are each",
             "# host's own (`jit sync` builds them); jit's config beside them is the project's, to commit."]
    if catalog.parent == folder:
        name = re.sub(r"([*?\[\\])", r"\\\1", catalog.name)
        lines += [f"/{name}", f"/{name}-*"]
    return "\n".join([*lines, "*.index/"]) + "\n"


def _remove_empty(folder: Path) -> None:
    """Remove ``folder`` if it is empty (a ``.jit/`` the setup made and then did not use)."""
    try:
        folder.rmdir()
    except OSError:
        pass


def _not_on_path(program: list[str], default: bool, env: Mapping[str, str]) -> list[str]:
    """A warning when ``.mcp.json``'s ``jit`` is not on ``PATH`` where the setup runs (nor, then, for
    Claude Code started from here)."""
    if not default or shutil.which(program[0], path=env.get("PATH", "")):
        return []
    return [f"`{program[0]}` is not on PATH here: Claude Code starts it from the PATH it is started with, so "
            f"put jit there first (this installation runs as {' '.join(jit_command())}: activate its virtual "
            f"environment, e.g. `source .venv/bin/activate` in jit's clone, or link its `jit` into a directory "
            f"on PATH)"]


def _shadowed(root: Path, target: Path, env: Mapping[str, str]) -> list[str]:
    """A warning when the project's ``config.json`` is itself a jit config, which the new
    ``.jit/config.json`` hides: jit reads that first in the project."""
    old = root / DEFAULT_CONFIG_FILE
    if target != root / PROJECT_CONFIG_FILE or not old.is_file():
        return []
    try:
        load_config(old, env=env)
    except ConfigError:
        return []  # the project's own config.json (its app's): none of jit's business
    return [f"{old} is a jit config too: jit reads {PROJECT_CONFIG_FILE} first in {root}, so that file's servers "
            f"and settings no longer apply there (to merge into it instead: `jit setup claude-code --undo`, then "
            f"`jit setup claude-code -c config.json`)"]


def setup_claude_code(project: str | os.PathLike[str] = ".", *, config: str | os.PathLike[str] | None = None,
                      name: str = "jit", command: list[str] | None = None, dry_run: bool = False,
                      env: Mapping[str, str] | None = None, now: datetime | None = None) -> dict[str, Any]:
    """Move ``project/.mcp.json``'s servers into jit's config and leave jit as its one server.

    ``config`` is jit's config file (default ``project/.jit/config.json``, :data:`PROJECT_CONFIG_FILE`;
    created when missing, else merged into, its other settings kept). ``name`` is jit's server
    name in ``.mcp.json``; ``command`` the program and leading arguments that start jit (default
    ``jit``, found on the ``PATH`` Claude Code starts it with, so the file works for everyone who
    pulls it). Returns what was (or, with ``dry_run``, would be) done: ``{"project", "mcp_file",
    "config", "backup", "moved", "already_in_config", "server", "warnings", "dry_run"}``. Raises
    :class:`ConfigError` (nothing written) when ``.mcp.json`` is missing, unreadable or empty,
    already runs jit, or holds a server named ``name``; when a moved server clashes with a
    different one of the same name in the config; or when the merged config would not load."""
    env = os.environ if env is None else env
    root = Path(project).expanduser().resolve()
    if not root.is_dir():
        raise ConfigError("the project directory does not exist", path=str(root))
    mcp_path = root / FALLBACK_CONFIG_FILE
    if not mcp_path.is_file():
        raise ConfigError(f"no {FALLBACK_CONFIG_FILE} in {root}: there are no project servers to move "
                          f"(Claude Code writes it with `claude mcp add --scope project`)", path=str(mcp_path))
    mcp_bytes = mcp_path.read_bytes()
    data = read_json(mcp_path, _MCP_WHAT)
    entries = _mcp_servers(mcp_path)
    running = [n for n, e in entries.items() if _is_jit(e)]
    if running:
        raise ConfigError(f"jit is already set up here: server {running[0]!r} runs `jit serve` (undo the setup "
                          f"with `jit setup claude-code --undo`)", path=str(mcp_path), key=f"mcpServers.{running[0]}")
    if not name or not name.strip():
        raise ConfigError("jit's server name must not be empty")
    if name in entries:
        raise ConfigError(f"a server named {name!r} is already in {FALLBACK_CONFIG_FILE}, the name jit's own entry "
                          f"would take: choose another with --name", path=str(mcp_path), key=f"mcpServers.{name}")
    if not entries:
        raise ConfigError("'mcpServers' is empty: there are no servers to move", path=str(mcp_path),
                          key="mcpServers")

    target = Path(config).expanduser().resolve() if config is not None else root / PROJECT_CONFIG_FILE
    if target == mcp_path:
        raise ConfigError(f"jit's config must be another file than {FALLBACK_CONFIG_FILE} (name it with -c)",
                          path=str(target))
    incoming = {server: _moved_cwd(entry, root, target.parent)
                for server, entry in parse_mcp_servers(entries, str(mcp_path)).items()}
    config_bytes = target.read_bytes() if target.is_file() else None
    raw: Any = read_json(target, "config file") if config_bytes is not None else {}
    if not isinstance(raw, dict):
        raise ConfigError("the top level must be a JSON object", path=str(target))
    if config_bytes is None and target.parent.name == JIT_DIR:
        raw = {"servers": {}, "store": CATALOG_FILE}  # the catalog beside the config, not in .jit/.jit/
    servers = raw.setdefault("servers", {})
    if not isinstance(servers, dict):
        raise ConfigError("'servers' must be an object", path=str(target), key="servers")
    moved, same = [], []
    for server, entry in incoming.items():
        if server in servers:
            if servers[server] != entry:
                raise ConfigError(
                    f"server {server!r} is in both {mcp_path} and the jit config, with different entries: rename "
                    f"or remove one of them, then run the setup again", path=str(target), key=f"servers.{server}")
            same.append(server)
            continue
        servers[server] = entry
        moved.append(server)
    config_text = json.dumps(raw, indent=2, ensure_ascii=False) + "\n"
    made_dir = not target.parent.exists()
    if made_dir:  # .jit/ itself: the merged config is checked where it will live
        try:
            target.parent.mkdir()
        except OSError as exc:
            raise ConfigError(f"cannot create the directory of the jit config: {exc.strerror or exc}",
                              path=str(target.parent)) from None
    try:
        merged = check_merged(config_text, target, {**env, **placeholders(incoming, env)}, mcp_path,
                              hint="" if config_bytes is None else "; -c FILE names another file for jit's config")
    except ConfigError:
        if made_dir:
            _remove_empty(target.parent)
        raise
    if made_dir and dry_run:
        _remove_empty(target.parent)

    program = list(command or [JIT_PROGRAM])
    shown = target.relative_to(root).as_posix() if target.is_relative_to(root) else str(target)
    jit_entry = {"type": "stdio", "command": program[0], "args": [*program[1:], "serve", "--stdio", "-c", shown]}
    new_mcp = {**data, "mcpServers": {name: jit_entry}}
    mcp_text = (json.dumps(new_mcp, indent=2, ensure_ascii=False) + "\n").encode("utf-8")
    config_new = config_text.encode("utf-8")
    jit_dir = root / JIT_DIR
    ignore = jit_dir / ".gitignore"
    ignore_text = None
    if not ignore.exists() and jit_dir in (target.parent, merged.store_path.parent):
        ignore_text = _gitignore(merged.store_path, jit_dir).encode("utf-8")

    backups = root / BACKUP_DIR
    folder = _stamp(backups, now or datetime.now(UTC))
    result: dict[str, Any] = {
        "project": str(root), "mcp_file": str(mcp_path), "config": str(target), "backup": str(folder),
        "moved": [*moved, *same], "already_in_config": same, "server": {name: jit_entry},
        "warnings": [*(f"server {s!r} uses ${{{v}}}, which is not set here: jit serve needs it in the "
                       f"environment Claude Code starts it with" for s, v in unset_vars(incoming, env)),
                     *_not_on_path(program, command is None, env), *_shadowed(root, target, env)],
        "dry_run": dry_run,
    }
    result["warnings"] += _warnings(root, list(incoming), env)
    if dry_run:
        return result

    try:
        folder.mkdir(parents=True)
        backup_ignore = backups / ".gitignore"
        if not backup_ignore.exists():  # backups hold a copy of the config: keep them out of the repository
            backup_ignore.write_text("*\n", encoding="utf-8")
        shutil.copy2(mcp_path, folder / FALLBACK_CONFIG_FILE)
        if config_bytes is not None:
            (folder / "config.json").write_bytes(config_bytes)
        manifest = {"version": 2, "client": "claude-code", "created": folder.name, "project": str(root),
                    "mcp_file": str(mcp_path), "config": str(target), "config_existed": config_bytes is not None,
                    "server_name": name, "moved": result["moved"],
                    "written": {"mcp_file": _sha256(mcp_text), "config": _sha256(config_new)},
                    "before": {"mcp_file": _sha256(mcp_bytes),
                               "config": _sha256(config_bytes) if config_bytes is not None else None},
                    # What the setup made beside the config, which the undo removes (unchanged, and a
                    # .jit/ of its making with nothing in it but the setup's files and the catalog's).
                    "made": {"directory": str(target.parent) if made_dir else None,
                             "catalog": str(merged.store_path),
                             "gitignore": None if ignore_text is None else {"path": str(ignore),
                                                                            "sha256": _sha256(ignore_text)}}}
        (folder / _MANIFEST).write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")
    except OSError as exc:
        shutil.rmtree(folder, ignore_errors=True)
        if made_dir:
            _remove_empty(target.parent)
        raise ConfigError(f"cannot write the backup: {exc.strerror or exc}; nothing was changed",
                          path=str(folder)) from None
    try:
        _write(target, config_new)
        try:
            _write(mcp_path, mcp_text)
        except OSError:
            _restore_config(target, config_bytes)
            raise
    except OSError as exc:
        if made_dir:
            _remove_empty(target.parent)
        raise ConfigError(f"cannot write the setup: {exc.strerror or exc}; both files are as they were "
                          f"(a copy is in {folder})", path=str(exc.filename or target)) from None
    if ignore_text is not None:
        try:
            _write(ignore, ignore_text)
        except OSError as exc:
            result["warnings"].append(f"cannot write {ignore} ({exc.strerror or exc}): keep jit's catalog out of "
                                      f"git yourself")
    return result


def unset_vars(incoming: Mapping[str, Any], env: Mapping[str, str]) -> list[tuple[str, str]]:
    return [(server, var) for server, entry in incoming.items() for var in placeholders({server: entry}, env)]


def _restore_config(target: Path, before: bytes | None) -> None:
    if before is None:
        target.unlink(missing_ok=True)
    else:
        _write(target, before)


def _latest(backups: Path) -> Path | None:
    """The newest setup not yet undone (folder names sort by time)."""
    if not backups.is_dir():
        return None
    done = [p for p in backups.iterdir() if p.is_dir() and not p.name.endswith(_UNDONE) and (p / _MANIFEST).is_file()]
    return max(done, key=lambda p: (p.name[:16], len(p.name), p.name), default=None)


def undo_setup(project: str | os.PathLike[str] = ".", *, force: bool = False) -> dict[str, Any]:
    """Undo the latest :func:`setup_claude_code` of ``project``: ``.mcp.json`` and jit's config
    back to their copies (a config the setup created is removed), and what the setup made beside
    the config removed (:func:`_remove_made`).

    Refused (:class:`ConfigError`, nothing restored) when there is no setup to undo, or when
    either file changed since the setup wrote it; with ``force`` the changed files are first
    copied into the backup folder as ``*.at-undo``. The backup folder is then renamed
    ``<time>-undone`` and kept. Returns ``{"project", "mcp_file", "config", "backup",
    "restored", "removed", "kept", "left"}`` (``left``: a folder the setup made that now holds
    what it did not write, kept, with why)."""
    root = Path(project).expanduser().resolve()
    backups = root / BACKUP_DIR
    folder = _latest(backups)
    if folder is None:
        raise ConfigError(f"no jit setup to undo in {root} (its backups would be in {backups})", path=str(backups))
    manifest = read_json(folder / _MANIFEST, "setup record")
    try:
        mcp_path, target = Path(manifest["mcp_file"]), Path(manifest["config"])
        written, existed = manifest["written"], bool(manifest["config_existed"])
    except (TypeError, KeyError) as exc:
        raise ConfigError(f"the setup record lacks {exc}", path=str(folder / _MANIFEST)) from None
    mcp_copy, config_copy = folder / FALLBACK_CONFIG_FILE, folder / "config.json"
    for copy in (mcp_copy, *((config_copy,) if existed else ())):
        if not copy.is_file():
            raise ConfigError("the backup is incomplete; nothing was restored", path=str(copy))

    changed = []
    for path, key in ((mcp_path, "mcp_file"), (target, "config")):
        now = path.read_bytes() if path.is_file() else None
        if now is None or _sha256(now) != written.get(key):
            changed.append((path, now))
    kept = []
    if changed and not force:
        names = " and ".join(f"{p}{' (gone)' if b is None else ''}" for p, b in changed)
        raise ConfigError(f"{names} changed since `jit setup` wrote {'them' if len(changed) > 1 else 'it'}; nothing "
                          f"was restored. The files as they were before the setup are in {folder}: restore them by "
                          f"hand, or run the undo again with --force (the current files are then kept there too)",
                          path=str(changed[0][0]))
    for path, now in changed:
        if now is not None:
            keep = folder / f"{path.name}.at-undo"
            keep.write_bytes(now)
            kept.append(str(keep))

    _write(mcp_path, mcp_copy.read_bytes())
    _restore_config(target, config_copy.read_bytes() if existed else None)
    removed, left = _remove_made(manifest.get("made"))
    done = folder.with_name(folder.name + _UNDONE)
    folder.rename(done)
    return {"project": str(root), "mcp_file": str(mcp_path), "config": str(target), "backup": str(done),
            "restored": [str(mcp_path), *((str(target),) if existed else ())],
            "removed": [*(() if existed else (str(target),)), *removed],
            "kept": [k.replace(str(folder), str(done)) for k in kept], "left": left}


def _remove_made(made: Any) -> tuple[list[str], list[str]]:
    """Remove what a setup made beside jit's config (its record's ``made``): the ``.jit/.gitignore`` it
    wrote, unless changed since; and the ``.jit/`` it made, when nothing is left in it but that file
    and the catalog jit built there for the setup's config (with SQLite's side files and the index
    beside it). Returns (removed, left): a folder holding anything else is left as it is, and named."""
    if not isinstance(made, dict):
        return [], []  # recorded by a jit that made nothing beside the config
    ignore = made.get("gitignore") if isinstance(made.get("gitignore"), dict) else {}
    ignore_path = Path(ignore["path"]) if ignore.get("path") else None
    ours = ignore_path is not None and ignore_path.is_file() \
        and _sha256(ignore_path.read_bytes()) == ignore.get("sha256")
    folder = Path(made["directory"]) if made.get("directory") else None
    if folder is None or not folder.is_dir():
        if ours:
            ignore_path.unlink()
            return [str(ignore_path)], []
        return [], []
    catalog = Path(made.get("catalog") or folder / CATALOG_FILE)

    def catalogs(p: Path) -> bool:
        return catalog.parent == folder and (p.name in (catalog.name, f"{catalog.name}.index")
                                             or p.name.startswith(f"{catalog.name}-"))

    others = sorted(p.name for p in folder.iterdir() if not (catalogs(p) or (ours and p == ignore_path)))
    if others:
        return [], [f"{folder}: it holds what the setup did not write ({', '.join(others)})"]
    removed = []
    for p in sorted(folder.iterdir()):
        if p.is_dir() and not p.is_symlink():
            shutil.rmtree(p)
        else:
            p.unlink()
        removed.append(str(p))
    folder.rmdir()
    return [*removed, str(folder)], []
