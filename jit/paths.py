"""Where jit finds the data files it ships (``migrations/`` and ``rules/``), which config
file it reads when none is named (:func:`default_config_file`), how it writes the files it keeps
beside them (:func:`write_atomic`), whether a catalog location is a file or a
PostgreSQL URL (:func:`is_postgres_url`), and how a URL is shown without its secrets
(:func:`masked_url`).

In a checkout (editable install) they are the repository's top-level folders;
in a wheel they are bundled under ``jit/_bundled/`` (see pyproject.toml).
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import BinaryIO
from urllib.parse import unquote_plus, urlsplit, urlunsplit

__all__ = ["CONFIG_ENV_VAR", "DEFAULT_CONFIG_FILE", "FALLBACK_CONFIG_FILE", "PROJECT_CONFIG_FILE", "bundled_dir",
           "default_config_file", "is_postgres_url", "masked_url", "write_atomic"]

CONFIG_ENV_VAR = "JIT_CONFIG"
DEFAULT_CONFIG_FILE = "config.json"
#: The servers file Claude Code keeps in a project: read when the directory has no config.json.
FALLBACK_CONFIG_FILE = ".mcp.json"
#: jit's own config in a project, the one ``jit setup claude-code`` writes: read first when it
#: exists, so a project's own ``config.json`` (its app's) is never taken for jit's.
PROJECT_CONFIG_FILE = ".jit/config.json"


def is_postgres_url(location: str | Path) -> bool:
    """Whether a ``store`` setting names a PostgreSQL catalog (``postgresql://`` or
    ``postgres://``) rather than a SQLite file (jit/catalog/backend.py, docs/team.md)."""
    return isinstance(location, str) and location.lower().startswith(("postgresql://", "postgres://"))


def masked_url(url: str, *, bare_user: bool, query_key: Callable[[str], bool]) -> str:
    """``url`` safe to print: the password of its user part becomes ``***`` (the whole user part
    too when ``bare_user`` and it has no password: a user part alone is often a token), and so
    does every query value whose key ``query_key`` accepts. An unparsable URL keeps its scheme only."""
    try:
        parts = urlsplit(url)
        netloc = parts.netloc
        if "@" in netloc:
            user, host = netloc.rsplit("@", 1)
            user = user.split(":", 1)[0] + ":***" if ":" in user else "***" if bare_user else user
            netloc = f"{user}@{host}"
        items = []  # each query item as written, but a secret value
        for item in parts.query.split("&") if parts.query else ():
            key, eq, value = item.partition("=")
            items.append(f"{key}=***" if eq and value and query_key(unquote_plus(key)) else item)
        return urlunsplit((parts.scheme, netloc, parts.path, "&".join(items), parts.fragment))
    except ValueError:
        return url.split("://", 1)[0] + "://***"


def bundled_dir(name: str) -> Path:
    """The repository's ``name/`` folder, or the copy bundled into the wheel."""
    repo = Path(__file__).resolve().parent.parent / name
    return repo if repo.is_dir() else Path(__file__).resolve().parent / "_bundled" / name


def default_config_file(environ: Mapping[str, str]) -> str:
    """The config file jit reads when none is given: ``$JIT_CONFIG``, else ``./.jit/config.json``
    when it exists (:data:`PROJECT_CONFIG_FILE`), else ``./config.json``, else ``./.mcp.json`` when
    only that exists, so a project already set up for an MCP client works as it is. With none,
    ``config.json``: the file a "not found" error names.

    Standard library only: ``jit serve``'s early answer (jit/serve/early.py) resolves the same
    file before anything else is imported."""
    named = environ.get(CONFIG_ENV_VAR)
    if named:
        return named
    if os.path.isfile(PROJECT_CONFIG_FILE):
        return PROJECT_CONFIG_FILE
    if not os.path.exists(DEFAULT_CONFIG_FILE) and os.path.isfile(FALLBACK_CONFIG_FILE):
        return FALLBACK_CONFIG_FILE
    return DEFAULT_CONFIG_FILE


def write_atomic(path: Path, write: Callable[[BinaryIO], object], *, durable: bool = True) -> None:
    """Write ``path`` through ``write(file)`` on a temporary file in the same directory, then
    rename it into place: a reader sees the old file or the whole new one, never half.

    ``durable`` flushes the data to disk before the rename (a crash then cannot leave a short
    file under the final name); a cache that checks what it reads may skip that. The file is
    readable by all (0644), as an ordinary write would leave it, not 0600 as ``mkstemp`` does."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            write(f)
            if durable:
                f.flush()
                os.fsync(f.fileno())
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
