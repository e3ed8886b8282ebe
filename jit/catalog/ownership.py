"""Which config a server in the catalog belongs to, and what a config's commands see.

Several configs may share one catalog: the default ``store`` is
``.jit/catalog.db`` next to the config file, so every config in a directory
lands in the same file. Two rules keep them from hurting each other:

* **Ownership.** Each server row records the configs that configure it (by
  :func:`config_identity`, the config file's absolute path). A sync forgets a
  server only when its own config owned it and no other config still does;
  servers of other configs are kept and reported, and forgotten only when asked
  (``jit sync --prune-foreign``). A server name configured in two configs is one
  server with two owners (same tools, analyses and usage); a sync warns when the
  other config points that name at another program or URL (:func:`differing_targets`).
* **Scope.** Every read a config's commands make (``jit compile``, ``tools``,
  ``servers``, ``show``, ``jit serve``) is limited to that config's servers plus
  the harness pseudo-server (:meth:`Store.set_scope`), so a compile never
  serves another config's tools.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import CatalogBusyError, StoreError
from ..models import HARNESS_SERVER
from .backend import redact
from .store import Store
from .store_servers import Reconciled

if TYPE_CHECKING:
    from ..config import Config

__all__ = [
    "config_identity",
    "config_scope",
    "describe_kept",
    "describe_differing",
    "differing_targets",
    "open_catalog",
]


def config_identity(config: Config) -> str:
    """The owner name a config's servers are recorded under: its file's absolute path.

    A config with no file (``Config.default()``) is named after its directory."""
    if config.path is not None:
        return str(config.path)
    return f"(no config file in {config.store_path.parent})"


def config_scope(config: Config) -> frozenset[str]:
    """The servers a config's commands see: its own (enabled or not) and the harness."""
    return frozenset(config.servers) | {HARNESS_SERVER}


def open_catalog(config: Config) -> Store:
    """The config's catalog, with reads scoped to the config's servers.

    A catalog that cannot be opened (not an SQLite file; a PostgreSQL server down, refusing
    the user, read-only before its schema exists) is a :class:`StoreError` naming the catalog
    (a URL redacted) and the config's ``store`` key, for the CLI and ``jit serve`` alike."""
    try:
        timeouts = config.catalog
        store = Store(config.store_location, local_path=config.store_path,
                      connect_timeout=timeouts.connect_timeout, statement_timeout=timeouts.statement_timeout)
    except StoreError as exc:
        where = redact(str(config.store_location))
        # A catalog another process holds is no fault of the `store` setting: name only the catalog.
        key = "" if isinstance(exc, CatalogBusyError) else ", config key 'store'"
        message = exc.message.removesuffix(f" (catalog {where})")  # PostgreSQL's errors name it already
        raise type(exc)(f"{message} (catalog {where}{key})", **exc.details) from exc
    store.set_scope(config_scope(config))
    return store


def _target(entry: Any) -> tuple[Any, ...]:
    """What a server entry connects to: its transport and program, arguments and working directory,
    or its URL (not its env or headers: the same server may run with another key)."""
    return (getattr(entry, "transport", None), getattr(entry, "command", None), tuple(getattr(entry, "args", ())),
            getattr(entry, "cwd", None), getattr(entry, "url", None))


def differing_targets(config: Config, shared: dict[str, list[str]]) -> dict[str, list[str]]:
    """Of the servers ``config`` shares with other configs (``Reconciled.shared``), those another
    config points at something else (another program, arguments or URL): server -> those configs.

    A server name is one server in the catalog, so two configs giving one name to two different
    servers replace each other's tools at every sync (each reads the other's as changed, its usage
    moved to history) and compile the other's tools. A config that cannot be read is left out."""
    from ..config_files import load_config  # only when a server name is shared: reads the other config files

    differing: dict[str, list[str]] = {}
    loaded: dict[str, Config | None] = {}
    for server, owners in sorted(shared.items()):
        mine = config.servers.get(server)
        for owner in owners:
            if owner not in loaded:
                try:
                    loaded[owner] = load_config(owner) if Path(owner).is_file() else None
                except Exception:  # noqa: BLE001 - a broken or moved config of someone else's: nothing to compare
                    loaded[owner] = None
            other = loaded[owner]
            theirs = other.servers.get(server) if other is not None else None
            if mine is not None and theirs is not None and _target(theirs) != _target(mine):
                differing.setdefault(server, []).append(owner)
    return differing


def describe_differing(differing: dict[str, list[str]]) -> list[str]:
    """One warning per server name two configs give to different servers, for ``jit sync``."""
    return [f"server {server!r} is also configured by {', '.join(owners)}, where it runs something else: the "
            "configs share one catalog, where a server name is one server, so each sync replaces the other's "
            "tools (read as changed, their usage moved to history); give one of them another name, or each "
            "config its own `store`" for server, owners in sorted(differing.items())]


def describe_kept(result: Reconciled) -> list[str]:
    """One line per group of kept servers, for ``jit sync``'s output."""
    by_owners: dict[tuple[str, ...], list[str]] = {}
    for server, owners in sorted(result.kept.items()):
        by_owners.setdefault(tuple(owners), []).append(server)
    lines = []
    for owners, servers in by_owners.items():
        where = ", ".join(o if Path(o).exists() or not o.startswith("/") else f"{o} (file no longer exists)"
                          for o in owners)
        lines.append(f"kept {len(servers)} server{'s' * (len(servers) != 1)} configured by {where}: "
                     f"{', '.join(servers)}")
    if result.unowned:
        lines.append(f"kept {len(result.unowned)} server{'s' * (len(result.unowned) != 1)} no config claims "
                     f"(synced before jit recorded which config owns a server): {', '.join(result.unowned)}")
    if lines:
        lines.append("`jit sync --prune-foreign` forgets servers this config does not configure")
    return lines
