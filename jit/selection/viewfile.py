"""The compiled catalog view, kept on disk so a new process does not derive it again.

Building a snapshot from nothing reads and parses every tool's definition and
works out, per tool, the class its Datalog facts put it in
(:mod:`jit.selection.catalog_view`); at 100,000 tools that is most of a new
process's first compile. What the build derives per tool is small: its state,
server and name, its name as the model sees it, its class per derived predicate,
the labels of its effective analysis and its Condensed line. A :class:`SavedView`
holds exactly that plus the classes' facts and the global facts they were derived
with; a new process loads it, asserts the classes' facts, asks the rules for their
rows and is ready, reading definitions only for the tools a compile renders
(:class:`jit.selection.records.ToolRecords`); the token budget measures a candidate's
Condensed line without reading its definition. It also keeps the shard tables the
snapshot had asked for (points, skeleton slots and denials per tool): the rules take
0.1-0.3 s per shard to answer them at 10,000 tools, and ``jit sync`` asks them for every
configured shard before it writes the file.

A view file is found by :func:`view_key`: the catalog's identity
(``Store.catalog_id``) and scope, the rules' fingerprint, every config setting the
view derives from (shards, ``available_tools.json``, which servers are enabled,
definition pinning), the embedding model, jit's version, :data:`FORMAT` and the
format of the index file it names. The catalog versions are not in the key: a
file made at an older version is a snapshot like any other, brought up to date
by the view's incremental build
(the states of the tools are compared, only the changed ones derived again).
Rules edited, another config or another jit: another key, built from the catalog.

Files live in ``<catalog>.index/`` beside the retrieval index files
(:mod:`jit.selection.indexcache`), are written through a rename, and one that
cannot be read is ignored (the view is built from the catalog and written again).
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
import os
import threading
import zipfile
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from .. import __version__
from ..config import Config
from ..models import ToolState
from ..paths import write_atomic
from .indexcache import FORMAT as INDEX_FORMAT
from .logic import Fact
from .policy import DERIVED, SHARD_POINTS
from .snapshot import ShardTables

__all__ = ["FORMAT", "KEEP", "FileWriter", "SavedView", "ViewFiles", "view_key"]

log = logging.getLogger(__name__)

#: Bump when what a view file holds, or how a tool's facts and classes are derived, changes.
FORMAT = 7
#: View files kept per catalog (one per config and rule set that compiles against it).
KEEP = 8


@dataclass(frozen=True)
class SavedView:
    """What a snapshot derives per tool, without definitions (see the module docstring)."""

    version: int
    usage_version: int
    index_key: str
    #: Tool id -> its state (``Store.tool_states``), server and raw name, and name as the model sees it.
    states: dict[int, ToolState]
    heads: dict[int, tuple[str, str]]
    names: dict[int, str]
    #: The classes' projected facts (tool column dropped).
    projections: list[frozenset]
    #: Tool ids ascending, and per tool its class per derived predicate as an index into ``projections``.
    ids: np.ndarray
    classes: np.ndarray
    #: The global facts the classes were derived with (the servers' stand-ins follow from them).
    global_facts: frozenset
    #: Kind -> label -> ids of the tools whose effective analysis has it.
    labels: dict[str, dict[str, frozenset[int]]]
    #: Shard -> its tables: points, skeleton slots and denial reasons per tool (only the shards the
    #: snapshot had asked for).
    shards: dict[str, ShardTables] = field(default_factory=dict)
    #: Tool id -> its Condensed line (``render.tool_summary``), for the tools whose line was known.
    summaries: dict[int, str] = field(default_factory=dict)


class FileWriter:
    """Writes files for the next process, in order, on one thread started on first use.

    Its thread is not a daemon: a process that ends without :meth:`close` still finishes
    the writes it queued (``concurrent.futures`` joins its threads at exit). A write is
    atomic and a failed one costs the next process a build (the writers log ``OSError``);
    anything else a write raises is logged here, since nobody waits for its result."""

    def __init__(self) -> None:
        self._pool: ThreadPoolExecutor | None = None
        self._last: Future[None] | None = None
        self._lock = threading.Lock()

    def submit(self, write: Callable[[], None]) -> None:
        with self._lock:
            if self._pool is None:
                self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="jit-view-files")
            self._last = self._pool.submit(self._run, write)

    @staticmethod
    def _run(write: Callable[[], None]) -> None:
        try:
            write()
        except Exception:  # noqa: BLE001 - a file for the next process: never worth a compile
            log.exception("could not write the compiled view's files for the next process")

    def flush(self) -> None:
        """Wait for every write queued so far."""
        with self._lock:
            last = self._last
        if last is not None:
            last.result()

    def close(self) -> None:
        with self._lock:
            pool, self._pool, self._last = self._pool, None, None
        if pool is not None:
            pool.shutdown(wait=True)


def view_key(catalog_id: str | None, scope: frozenset[str] | None, rules_fingerprint: str, config: Config,
             model_name: str) -> str:
    """The name of the view file for this catalog, scope, rule set, config and model."""
    parts = {
        "format": FORMAT,
        "index_format": INDEX_FORMAT,  # the file names an index file: one of this format
        "jit": __version__,
        "derived": DERIVED,  # the predicates the classes are columns of, the shard tables' points
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


#: A state's columns (``ToolState``): the two hashes (hex digests) as byte arrays; the server
#: status as a code into the header's list; the rest as numbers.
_HASHES = ("definition_hash", "text_hash")
_NUMBERS = ("needs_embedding", "approved", "calls", "errors")


class ViewFiles:
    """The view files of one catalog; a no-op for an in-memory catalog.

    A file, ``<key>.view``, is an ``.npz`` archive (no pickles): the numeric columns as
    arrays, the rest in a JSON header, so a view of 100,000 tools loads without parsing a
    number at a time."""

    def __init__(self, catalog_path: str) -> None:
        self.directory = None if catalog_path == ":memory:" else Path(f"{catalog_path}.index")

    def path(self, key: str) -> Path | None:
        """The file of the view ``key`` names (None for an in-memory catalog), whether or not it exists."""
        return None if self.directory is None else self.directory / f"{key}.view"

    def load(self, key: str) -> SavedView | None:
        path = self.path(key)
        if path is None:
            return None
        try:
            with np.load(path, allow_pickle=False) as data:
                head = json.loads(bytes(data["header"]).decode("utf-8"))
                if head.get("format") != FORMAT or head.get("key") != key:
                    raise ValueError("the file does not match its key")
                ids, classes = data["ids"], data["classes"]
                columns = {name: data[name] for name in (*_HASHES, *_NUMBERS, "created_at", "status", "label_offsets",
                                                         "label_ids", *_shard_columns(len(head["shards"])))}
            view = _view_from(head, ids, classes, columns)
        except FileNotFoundError:
            return None
        except (OSError, ValueError, KeyError, TypeError, IndexError, AttributeError, EOFError,
                UnicodeDecodeError, zipfile.BadZipFile) as exc:
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
        path = self.path(key)
        if path is None:
            return
        ids = view.ids.tolist()
        states = [view.states[i] for i in ids]
        statuses = sorted({s.status for s in states})
        code = {name: c for c, name in enumerate(statuses)}
        kinds = {kind: sorted(by_label) for kind, by_label in view.labels.items()}
        members = [sorted(view.labels[kind][label]) for kind in sorted(kinds) for label in kinds[kind]]
        header = {
            "format": FORMAT, "key": key, "version": view.version, "usage_version": view.usage_version,
            "index_key": view.index_key, "statuses": statuses, "labels": {k: kinds[k] for k in sorted(kinds)},
            "servers": [view.heads[i][0] for i in ids], "tools": [view.heads[i][1] for i in ids],
            "names": [view.names[i] for i in ids],
            "summaries": [view.summaries.get(i) for i in ids],  # get: a compile may be adding one
            "projections": [sorted(p, key=repr) for p in view.projections],
            "global_facts": sorted(view.global_facts, key=repr),
            "shards": sorted(view.shards),
        }
        strings: dict[str, int] = {}  # the skeleton slots' and denial reasons' texts, each once
        try:
            arrays = {
                "ids": view.ids,
                "classes": view.classes.astype(np.int32),
                **{name: _ascii([getattr(s, name) for s in states]) for name in _HASHES},
                **{name: np.array([getattr(s, name) for s in states], dtype=np.int64) for name in _NUMBERS},
                "created_at": np.array([np.nan if s.analyzed_at is None else s.analyzed_at for s in states],
                                       dtype=np.float64),
                "status": np.array([code[s.status] for s in states], dtype=np.int64),
                "label_offsets": np.cumsum([0, *map(len, members)], dtype=np.int64),
                "label_ids": np.array([i for m in members for i in m], dtype=np.int64),
            }
            for k, shard in enumerate(header["shards"]):
                tables = view.shards[shard]
                for name in SHARD_POINTS:
                    points = tables.points.get(name, {})
                    arrays[f"shard{k}_{name}"] = np.array([points.get(i, _NO_POINTS) for i in ids], dtype=np.int64)
                for name, table in (("skeleton", tables.skeleton), ("denied", tables.denied)):
                    arrays.update(_sparse(f"shard{k}_{name}", table, strings))
            header["strings"] = list(strings)
            blob = json.dumps(header, separators=(",", ":")).encode("utf-8")
            arrays["header"] = np.frombuffer(blob, dtype=np.uint8)
            path.parent.mkdir(parents=True, exist_ok=True)
            write_atomic(path, lambda f: np.savez(f, **arrays), durable=False)
            files = sorted(path.parent.glob("*.view"), key=lambda p: p.stat().st_mtime, reverse=True)
            for old in files[KEEP:]:
                old.unlink(missing_ok=True)
        except (OSError, ValueError) as exc:
            log.warning("could not keep the compiled view in %s: %s", self.directory, exc)


#: A tool without points of a shard (a ``SHARD_POINTS`` predicate has no row for it).
_NO_POINTS = np.iinfo(np.int64).min


def _shard_columns(n: int) -> list[str]:
    return [f"shard{k}_{part}" for k in range(n) for part in (
        *SHARD_POINTS, "skeleton_ids", "skeleton_offsets", "skeleton_values", "denied_ids", "denied_offsets",
        "denied_values")]


def _sparse(prefix: str, table: dict[int, tuple[str, ...]], strings: dict[str, int]) -> dict[str, np.ndarray]:
    """``tool -> texts`` as three arrays: the tools, where each one's texts start, and the texts
    as indices into ``strings`` (filled as it goes)."""
    ids = sorted(table)
    values = [strings.setdefault(v, len(strings)) for i in ids for v in table[i]]
    return {f"{prefix}_ids": np.array(ids, dtype=np.int64),
            f"{prefix}_offsets": np.cumsum([0, *(len(table[i]) for i in ids)], dtype=np.int64),
            f"{prefix}_values": np.array(values, dtype=np.int64)}


def _unsparse(prefix: str, columns: dict[str, np.ndarray], strings: list[str]) -> dict[int, tuple[str, ...]]:
    ids, offsets = columns[f"{prefix}_ids"].tolist(), columns[f"{prefix}_offsets"].tolist()
    values = [strings[v] for v in columns[f"{prefix}_values"].tolist()]
    if len(offsets) != len(ids) + 1 or offsets[-1] != len(values):
        raise ValueError("a shard table of the wrong shape")
    return {i: tuple(values[offsets[k]:offsets[k + 1]]) for k, i in enumerate(ids)}


def _ascii(values: list[str]) -> np.ndarray:
    """Hex digests as a byte-string array (a quarter of the size of a str array)."""
    if not all(v.isascii() and "\x00" not in v for v in values):
        raise ValueError("a state hash that is not a plain digest")
    return np.array([v.encode("ascii") for v in values], dtype=bytes)


def _view_from(head: dict[str, Any], ids: np.ndarray, classes: np.ndarray,
               columns: dict[str, np.ndarray]) -> SavedView:
    """A :class:`SavedView` from a file's parts, checked for shape (ValueError otherwise)."""
    n = len(ids)
    projections = [_facts(p) for p in head["projections"]]
    strings = [head["servers"], head["tools"], head["names"]]
    numeric = [columns[c] for c in (*_HASHES, *_NUMBERS, "created_at", "status")]
    if ids.ndim != 1 or classes.shape[0] != n or any(len(c) != n for c in (*strings, *numeric)):
        raise ValueError("columns of different lengths")
    if classes.size and (int(classes.min()) < 0 or int(classes.max()) >= len(projections)):
        raise ValueError("a class out of range")
    id_list = ids.tolist()
    statuses = head["statuses"]
    status = [statuses[c] for c in columns["status"].tolist()]
    created = [None if math.isnan(c) else c for c in columns["created_at"].tolist()]  # NaN: no analysis
    definition, text = (columns[name].astype(str).tolist() for name in _HASHES)
    servers, tools, names = strings
    summaries = head["summaries"]
    if len(summaries) != n or not all(v is None or isinstance(v, str) for v in summaries):
        raise ValueError("a summaries column of the wrong length or kind")
    needs_embedding, approved, calls, errors = (columns[name].tolist() for name in _NUMBERS)
    states = dict(zip(id_list, map(ToolState._make, zip(definition, text, needs_embedding, created, status, approved,
                                                        calls, errors, strict=True)), strict=True))
    offsets, members = columns["label_offsets"].tolist(), columns["label_ids"]
    labels: dict[str, dict[str, frozenset[int]]] = {}
    at = 0
    for kind, names_of_kind in head["labels"].items():
        labels[kind] = {}
        for label in names_of_kind:
            labels[kind][label] = frozenset(members[offsets[at]:offsets[at + 1]].tolist())
            at += 1
    shards = {}
    for k, shard in enumerate(head["shards"]):
        points = {}
        for name in SHARD_POINTS:
            column = columns[f"shard{k}_{name}"]
            if len(column) != n:
                raise ValueError("a shard table of the wrong length")
            points[name] = {i: p for i, p in zip(id_list, column.tolist(), strict=True) if p != _NO_POINTS}
        shards[str(shard)] = ShardTables(points, _unsparse(f"shard{k}_skeleton", columns, head["strings"]),
                                         _unsparse(f"shard{k}_denied", columns, head["strings"]))
    return SavedView(
        version=int(head["version"]), usage_version=int(head["usage_version"]), index_key=str(head["index_key"]),
        states=states, heads=dict(zip(id_list, zip(servers, tools, strict=True), strict=True)),
        names=dict(zip(id_list, names, strict=True)), projections=projections, ids=ids,
        classes=classes.astype(np.int64), global_facts=_facts(head["global_facts"]), labels=labels, shards=shards,
        summaries={i: v for i, v in zip(id_list, summaries, strict=True) if v is not None},
    )
