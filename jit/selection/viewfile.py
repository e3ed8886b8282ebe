"""The compiled catalog view, kept on disk so a new process does not derive it again.

Building a snapshot from nothing reads and parses every tool's definition and
works out, per tool, the class its Datalog facts put it in
(:mod:`jit.selection.catalog_view`); at 100,000 tools that is most of a new
process's first compile. What the build derives per tool is small: its state,
server and name, its name as the model sees it, its class per derived predicate
and the labels of its effective analysis. A :class:`SavedView` holds exactly that
plus the classes' facts and the global facts they were derived with; a new process
loads it, asserts the classes' facts, asks the rules for their rows and is ready,
reading definitions only for the tools a compile renders
(:class:`jit.selection.records.ToolRecords`).

A view file is found by :func:`view_key`: the catalog's identity
(``Store.catalog_id``) and scope, the rules' fingerprint, every config setting the
view derives from (shards, ``available_tools.json``, which servers are enabled,
definition pinning), the embedding model, jit's version and :data:`FORMAT`. The
catalog versions are not in the key: a file made at an older version is a
snapshot like any other, brought up to date by the view's incremental build
(the states of the tools are compared, only the changed ones derived again).
Rules edited, another config or another jit: another key, built from the catalog.

Files live in ``<catalog>.index/`` beside the retrieval index files
(:mod:`jit.selection.indexcache`), are JSON written through a rename, and one that
cannot be read is ignored (the view is built from the catalog and written again).
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .. import __version__
from ..config import Config
from ..paths import write_atomic
from .logic import Fact

__all__ = ["FORMAT", "KEEP", "SavedView", "ViewFiles", "view_key"]

log = logging.getLogger(__name__)

#: Bump when what a view file holds, or how a tool's facts and classes are derived, changes.
FORMAT = 1
#: View files kept per catalog (one per config and rule set that compiles against it).
KEEP = 8


@dataclass(frozen=True)
class SavedView:
    """What a snapshot derives per tool, without definitions (see the module docstring)."""

    version: int
    usage_version: int
    index_key: str
    #: Tool id -> its state (``Store.tool_states``), server and raw name, and name as the model sees it.
    states: dict[int, tuple]
    heads: dict[int, tuple[str, str]]
    names: dict[int, str]
    #: The classes' projected facts (tool column dropped), and per tool its class per derived
    #: predicate as an index into ``projections``.
    projections: list[frozenset]
    classes: dict[int, tuple[int, ...]]
    #: The global facts the classes were derived with (the servers' stand-ins follow from them).
    global_facts: frozenset
    #: Kind -> label -> ids of the tools whose effective analysis has it.
    labels: dict[str, dict[str, frozenset[int]]]


def view_key(catalog_id: str | None, scope: frozenset[str] | None, rules_fingerprint: str, config: Config,
             model_name: str) -> str:
    """The name of the view file for this catalog, scope, rule set, config and model."""
    parts = {
        "format": FORMAT,
        "jit": __version__,
        "catalog": catalog_id,
        "scope": sorted(scope) if scope is not None else None,
        "rules": rules_fingerprint,
        "model": model_name,
        "shards": {name: s.model_dump(mode="json") for name, s in sorted(config.shards.items())},
        "available_tools": config.available_tools.model_dump(mode="json"),
        "enabled": {name: s.enabled for name, s in sorted(config.servers.items())},
        "pin_definitions": config.security.pin_definitions,
    }
    return hashlib.blake2b(json.dumps(parts, sort_keys=True).encode(), digest_size=16).hexdigest()


def _facts(rows: list[list[Any]]) -> frozenset[Fact]:
    return frozenset(tuple(r) for r in rows)


class ViewFiles:
    """The view files of one catalog; a no-op for an in-memory catalog or without a catalog identity."""

    def __init__(self, catalog_path: str) -> None:
        self.directory = None if catalog_path == ":memory:" else Path(f"{catalog_path}.index")

    def _path(self, key: str) -> Path | None:
        return None if self.directory is None else self.directory / f"view-{key}.json"

    def load(self, key: str) -> SavedView | None:
        path = self._path(key)
        if path is None:
            return None
        try:
            data = json.loads(path.read_bytes())
            if data.get("format") != FORMAT or data.get("key") != key:
                raise ValueError("the file does not match its key")
            ids: list[int] = data["ids"]
            n = len(ids)
            columns = (data["states"], data["servers"], data["tools"], data["names"], data["classes"])
            if any(len(c) != n for c in columns):
                raise ValueError("columns of different lengths")
            projections = [_facts(p) for p in data["projections"]]
            classes = {i: tuple(c) for i, c in zip(ids, data["classes"], strict=True)}
            if any(not 0 <= k < len(projections) for c in classes.values() for k in c):
                raise ValueError("a class out of range")
            view = SavedView(
                version=int(data["version"]), usage_version=int(data["usage_version"]),
                index_key=str(data["index_key"]),
                states={i: tuple(s) for i, s in zip(ids, data["states"], strict=True)},
                heads={i: (s, t) for i, s, t in zip(ids, data["servers"], data["tools"], strict=True)},
                names=dict(zip(ids, data["names"], strict=True)),
                projections=projections, classes=classes,
                global_facts=_facts(data["global_facts"]),
                labels={kind: {label: frozenset(members) for label, members in by_label.items()}
                        for kind, by_label in data["labels"].items()},
            )
        except FileNotFoundError:
            return None
        except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
            log.warning("ignoring the unreadable compiled view %s (%s); building it from the catalog", path, exc)
            return None
        try:
            os.utime(path)  # recently used: pruned last
        except OSError:
            pass
        return view

    def save(self, key: str, view: SavedView) -> None:
        """Write ``view`` under ``key`` (atomically) and prune the least recently used files. A
        directory that cannot be written to costs the next process a build, nothing more."""
        path = self._path(key)
        if path is None:
            return
        ids = sorted(view.states)
        data = {
            "format": FORMAT, "key": key, "version": view.version, "usage_version": view.usage_version,
            "index_key": view.index_key, "ids": ids,
            "states": [view.states[i] for i in ids],
            "servers": [view.heads[i][0] for i in ids],
            "tools": [view.heads[i][1] for i in ids],
            "names": [view.names[i] for i in ids],
            "classes": [view.classes[i] for i in ids],
            "projections": [sorted(p, key=repr) for p in view.projections],
            "global_facts": sorted(view.global_facts, key=repr),
            "labels": {kind: {label: sorted(members) for label, members in by_label.items()}
                       for kind, by_label in view.labels.items()},
        }
        try:
            blob = json.dumps(data, separators=(",", ":")).encode()
            path.parent.mkdir(parents=True, exist_ok=True)
            write_atomic(path, lambda f: f.write(blob), durable=False)
            files = sorted(path.parent.glob("view-*.json"), key=lambda p: p.stat().st_mtime, reverse=True)
            for old in files[KEEP:]:
                old.unlink(missing_ok=True)
        except (OSError, ValueError) as exc:
            log.warning("could not keep the compiled view in %s: %s", self.directory, exc)
