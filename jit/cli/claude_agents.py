"""``jit setup claude-code --subagents``: one Claude Code sub-agent per shard, each seeing only its role's tools.

Each shard of jit's config becomes ``.claude/agents/jit-<shard>.md``
(jit/adapters/claude_agent_sdk.py builds it): a sub-agent whose one MCP server, declared in its
front matter, is ``jit serve --stdio -c <config> --expose-shard <shard>``, so only that sub-agent
connects to it, and whose ``disallowedTools`` keep out the project's own servers (jit's unscoped
one), which a sub-agent would otherwise inherit. What is written is what a team commits: the
program is ``jit`` from ``PATH`` and the config is named by its path in the project.

The files jit wrote are recorded, with their SHA-256, in ``.jit-setup/subagents.json``:

* a re-run writes what changed and nothing else (an unchanged file is left as it is), and removes
  the files of shards no longer in the config;
* a file of the same name jit did not write (a user's own agent), or one edited since jit wrote
  it, is never replaced silently: it is left, with a warning, unless ``force`` (its text is then
  copied into ``.jit-setup/`` first);
* :func:`undo_subagents` removes the recorded files still as jit wrote them, and the
  ``.claude/agents/`` (and ``.claude/``) it made when nothing else is in them; an edited file is
  left, and named.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import yaml

from ..adapters.claude_agent_sdk import RoleAgent, agent_name, frontmatter, role_agents
from ..config import DEFAULT_SHARDS
from ..config_files import load_config
from ..errors import ConfigError
from ..jsonfile import read_json
from ..paths import FALLBACK_CONFIG_FILE, PROJECT_CONFIG_FILE, write_atomic

__all__ = ["AGENTS_DIR", "RECORD_FILE", "render_agent", "undo_subagents", "write_subagents"]

#: Where Claude Code reads a project's sub-agents.
AGENTS_DIR = Path(".claude") / "agents"
#: The record of the files written, in the setup's backup folder (``.jit-setup/``, out of git).
RECORD_FILE = "subagents.json"
_BACKUP_DIR = ".jit-setup"
_HEADER = ("# Written by `jit setup claude-code --subagents` (one sub-agent per jit shard);\n"
           "# `jit setup claude-code --undo --subagents` removes it.\n")


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def render_agent(agent: RoleAgent) -> str:
    """The text of ``agent``'s ``.claude/agents/<name>.md``: YAML front matter, then the prompt."""
    body = yaml.safe_dump(frontmatter(agent), sort_keys=False, allow_unicode=True, width=1_000_000)
    return f"---\n{_HEADER}{body}---\n\n{agent.prompt}"


def _name_or_none(shard: str) -> str | None:
    try:
        return agent_name(shard)
    except ConfigError:
        return None


def _record_path(root: Path) -> Path:
    return root / _BACKUP_DIR / RECORD_FILE


def _read_record(root: Path) -> dict[str, Any]:
    path = _record_path(root)
    if not path.is_file():
        return {"version": 1, "files": {}, "made": []}
    record = read_json(path, "sub-agent record")
    if not isinstance(record, dict) or not isinstance(record.get("files"), dict):
        raise ConfigError("the record of the sub-agents jit wrote is not one jit reads", path=str(path))
    record.setdefault("made", [])
    return record


def _write_record(root: Path, record: dict[str, Any]) -> None:
    folder = root / _BACKUP_DIR
    folder.mkdir(exist_ok=True)
    ignore = folder / ".gitignore"
    if not ignore.exists():  # the backups and this record are this host's: keep them out of git
        ignore.write_text("*\n", encoding="utf-8")
    text = json.dumps(record, indent=2) + "\n"
    write_atomic(_record_path(root), lambda f: f.write(text.encode("utf-8")))


def _project_servers(root: Path) -> list[str]:
    """The servers of the project's ``.mcp.json`` (jit's own among them once set up)."""
    path = root / FALLBACK_CONFIG_FILE
    if not path.is_file():
        return []
    data = read_json(path, "Claude Code's server file")
    servers = data.get("mcpServers") if isinstance(data, dict) else None
    return list(servers) if isinstance(servers, dict) else []


def write_subagents(project: str | os.PathLike[str] = ".", *, config: str | os.PathLike[str] | None = None,
                    shards: Iterable[str] | None = None, hidden_servers: Iterable[str] | None = None,
                    force: bool = False, dry_run: bool = False, env: Mapping[str, str] | None = None,
                    now: datetime | None = None) -> dict[str, Any]:
    """Write ``PROJECT/.claude/agents/jit-<shard>.md`` for each shard of jit's config (or those named).

    ``config`` is jit's config (default ``PROJECT/.jit/config.json``), which the agents' servers read
    by its path in the project (in a dry run before the setup has created it, the default shards).
    ``shards`` names the ones to write (default: all); the agents of shards no longer in the config
    are removed, those of the others left. ``hidden_servers`` are the MCP servers the sub-agents must not inherit
    (default: every server of ``PROJECT/.mcp.json``). ``force`` replaces files jit did not write (or
    edited since), after copying them into ``.jit-setup/``. Returns ``{"project", "agents": [{"name",
    "shard", "path", "action"}], "removed", "warnings", "dry_run"}``, ``action`` one of ``written``,
    ``updated``, ``unchanged``, ``replaced`` and ``kept`` (a file not jit's, left as it is)."""
    env = os.environ if env is None else env
    root = Path(project).expanduser().resolve()
    if not root.is_dir():
        raise ConfigError("the project directory does not exist", path=str(root))
    target = Path(config).expanduser().resolve() if config is not None else root / PROJECT_CONFIG_FILE
    warnings: list[str] = []
    if target.is_file():
        shard_configs = load_config(target, env=env).shards
    elif dry_run:  # the setup's dry run: the config it would create has the default shards
        shard_configs = dict(DEFAULT_SHARDS)
        warnings.append(f"{target} does not exist yet: the sub-agents shown are the default shards'")
    else:
        raise ConfigError(f"no jit config at {target}: run `jit setup claude-code` first (or name one with -c)",
                          path=str(target))
    if target.is_relative_to(root):
        shown = target.relative_to(root).as_posix()
    else:
        shown = str(target)
        warnings.append(f"jit's config {target} is outside the project: the agent files name it by this absolute "
                        f"path, which holds only on this machine")
    hidden = list(hidden_servers) if hidden_servers is not None else _project_servers(root)
    agents = role_agents(shard_configs, shards=shards, command=["jit"], config_file=shown, hidden_servers=hidden)

    record = _read_record(root)
    files: dict[str, str] = dict(record["files"])
    folder = root / AGENTS_DIR
    made = list(record["made"])
    for part in (AGENTS_DIR.parent, AGENTS_DIR):
        if not (root / part).exists() and part.as_posix() not in made:
            made.append(part.as_posix())
    stamp = (now or datetime.now(UTC)).astimezone(UTC).strftime("%Y%m%dT%H%M%SZ")
    report, writes, copies = [], [], []
    for agent in agents:
        path = folder / f"{agent.name}.md"
        text = render_agent(agent).encode("utf-8")
        current = path.read_bytes() if path.is_file() else None
        ours = current is not None and files.get(path.name) == _sha256(current)
        if current is None:
            action = "written"
        elif current == text:
            action = "unchanged"
        elif ours:
            action = "updated"
        elif force:
            action = "replaced"
            copies.append((path, root / _BACKUP_DIR / f"{stamp}-subagents" / path.name))
        else:
            action = "kept"
            why = "was edited since jit wrote it" if path.name in files else "is not one jit wrote"
            warnings.append(f"{path} {why}: left as it is, so the {agent.shard} role has no sub-agent from jit "
                            f"(--force replaces it, keeping its text in {_BACKUP_DIR}/)")
        if action != "kept":
            files[path.name] = _sha256(text)
            if action != "unchanged":
                writes.append((path, text))
        report.append({"name": agent.name, "shard": agent.shard, "path": str(path), "action": action})
    # The agents of every shard in the config stay (``shards`` may name a few); those of shards gone go.
    wanted = {f"{a.name}.md" for a in agents} | {f"{_name_or_none(s)}.md" for s in shard_configs}
    removed, stale = [], []
    for name, digest in sorted(files.items()):
        if name in wanted:
            continue
        path = folder / name
        current = path.read_bytes() if path.is_file() else None
        if current is not None and _sha256(current) != digest:
            warnings.append(f"{path} was written by jit for a shard no longer wanted, and edited since: left as it is")
        elif current is not None:
            stale.append(path)
            removed.append(str(path))
        files.pop(name)
    result = {"project": str(root), "agents": report, "removed": removed, "warnings": warnings, "dry_run": dry_run}
    if dry_run:
        return result
    try:
        for path, copy in copies:
            copy.parent.mkdir(parents=True, exist_ok=True)
            copy.write_bytes(path.read_bytes())
        if writes:
            folder.mkdir(parents=True, exist_ok=True)
        for path, text in writes:
            write_atomic(path, lambda f, data=text: f.write(data))
        for path in stale:
            path.unlink()
        _write_record(root, {"version": 1, "files": files, "made": made if files else []})
    except OSError as exc:
        raise ConfigError(f"cannot write the sub-agents: {exc.strerror or exc}",
                          path=str(exc.filename or folder)) from None
    return result


def undo_subagents(project: str | os.PathLike[str] = ".") -> dict[str, Any]:
    """Remove the sub-agent files :func:`write_subagents` wrote in ``project`` and that are still as it
    wrote them, then the ``.claude/agents/`` and ``.claude/`` it made if nothing else is in them.
    Returns ``{"project", "removed", "left"}`` (``left``: a file edited since, kept, with why). Raises
    :class:`ConfigError` when jit wrote no sub-agents there."""
    root = Path(project).expanduser().resolve()
    record = _read_record(root)
    if not record["files"] and not _record_path(root).is_file():
        raise ConfigError(f"jit wrote no sub-agents in {root} (its record would be {_record_path(root)})",
                          path=str(_record_path(root)))
    removed, left = [], []
    for name, digest in sorted(record["files"].items()):
        path = root / AGENTS_DIR / name
        if not path.is_file():
            continue
        if _sha256(path.read_bytes()) != digest:
            left.append(f"{path}: edited since jit wrote it")
            continue
        path.unlink()
        removed.append(str(path))
    for part in sorted(record["made"], key=len, reverse=True):  # .claude/agents, then .claude
        try:
            (root / part).rmdir()
            removed.append(str(root / part))
        except OSError:
            pass  # not empty (or gone): what is in it is not ours
    _record_path(root).unlink()
    return {"project": str(root), "removed": removed, "left": left}
