"""Tools that derive alike, as equivalence classes of their facts: what the Datalog engine holds of the catalog.

The rules' per-tool predicates (:data:`~jit.selection.policy.DERIVED`: ``blocked``, ``offline``,
``tier_cap``, the per-tool points, and per shard the shard points, ``skeleton`` and ``denied``)
read only a tool's own facts and the global ones (server statuses, shards). Two tools whose
facts are equal once their id, and their name and server where no rule can tell
them apart, are dropped (:func:`abstract`) derive equal rows, up to those values
(:func:`concrete`). So the engine holds one *class* per distinct projection of
those facts, per derived predicate, instead of every tool: 2,967 classes and
18,225 facts for 10,000 or 100,000 real tools, where one fact per tool and label
would be ~200,000 Python objects per 10,000 tools. :class:`Classes` counts each
class's members, asserts a class's facts when its first member arrives and
retracts them when its last one leaves, and asks the rules for the rows of a
class once (:meth:`Classes.rows_for`); :class:`~jit.selection.derivation.Derivation`
assigns the tools to classes and applies the rows to them.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..analysis.analyze import EffectiveTool
from ..analysis.deprecation import is_deprecated
from ..catalog.approval import CHANGED_FLAG
from ..config import ANNOTATION_HINTS
from ..errors import RuleError
from ..models import HARNESS_SERVER, StoredTool
from .logic import Fact, LogicEngine, RuleSet
from .policy import DERIVED, SHARD_POINTS, SHARD_PREDICATES, TASK_TABLES

__all__ = ["AS_APPROVED", "TOOL_FACTS", "Classes", "Globals", "abstract", "check_task_tables", "class_arrays",
           "concrete", "server_marks", "tool_facts"]

#: The catalog facts asserted per tool (``T`` first); the rest of the engine's facts are global.
TOOL_FACTS = frozenset({"tool", "harness", "analyzed", "category", "capability", "domain", "affinity", "flag",
                         "usage", "override_excluded", "declared_skeleton", "annotation", "shard_tool",
                         "deprecated"})
#: Marks a role's reason to deny a tool awaiting approval that its last approved definition gives.
AS_APPROVED = "(as last approved: its changed definition awaits approval)"
#: Stand-in values start with a NUL, which no rule constant, name or label holds (see abstract).
MARK = "\x00"
NAME_MARK = "\x00name"
SERVER_MARK = "\x00server "


@dataclass(frozen=True)
class Globals:
    """The facts the engine holds besides the classes, and what they make of tool values."""

    #: Server statuses, as the rules see them.
    facts: frozenset
    #: Server -> the stand-in its tools derive with (servers no rule can tell apart; see server_marks).
    marks: dict[str, str]
    #: ``facts`` plus the stand-ins' own: what the engine holds.
    engine: frozenset
    #: Values a rule can tell apart from others: its constants, the config's shards and
    #: categories, and every value of ``facts`` (see abstract).
    fixed: frozenset


class Classes:
    """The classes the engine holds: their projection, how many (tool, predicate) pairs use
    each, for which predicates, and the rows asked of them per (predicate, shard)."""

    def __init__(self, engine: LogicEngine, rules: RuleSet) -> None:
        self.engine = engine
        #: What each derived predicate reads of a tool's facts (the projection its classes share).
        self.reads = tuple(rules.reads(p) for p in DERIVED)
        self.ids: dict[frozenset, int] = {}
        self.projection: dict[int, frozenset] = {}
        self.refs: dict[int, int] = {}
        self.preds: dict[int, set[int]] = {}
        self.rows: dict[tuple[str, str | None], dict[int, list[tuple]]] = {}
        self._last = 0

    def acquire(self, projection: frozenset, k: int, add: list[Fact]) -> int:
        """The class of tools whose facts project to ``projection`` for derived predicate ``k``;
        a new class asserts its facts (``add``) and is asked for its rows."""
        cid = self.ids.get(projection)
        if cid is None:
            self._last -= 1  # negative: never a catalog id
            cid = self.ids[projection] = self._last
            self.projection[cid] = projection
            self.refs[cid] = 0
            self.preds[cid] = set()
            add.extend((f[0], cid, *f[1:]) for f in projection)
        self.refs[cid] += 1
        self.preds[cid].add(k)
        return cid

    def release(self, cids: list[int]) -> list[Fact]:
        """Drop one membership of each class; the facts of classes left empty, to retract."""
        drop: list[Fact] = []
        for cid in cids:
            self.refs[cid] -= 1
            if self.refs[cid] == 0:
                projection = self.projection.pop(cid)
                del self.ids[projection], self.refs[cid], self.preds[cid]
                for rows in self.rows.values():
                    rows.pop(cid, None)
                drop.extend((f[0], cid, *f[1:]) for f in projection)
        return drop

    def rows_for(self, k: int, shard: str | None, cids: list[int] | None) -> dict[int, list[tuple]]:
        """Rows of derived predicate ``k`` (for ``shard``) per class: of ``cids`` (asked one by one,
        the class bound) or of every class (one query, the tool left free). Kept in ``rows``."""
        pred = DERIVED[k]
        pos = 1 if pred in SHARD_PREDICATES else 0
        table = self.rows.setdefault((pred, shard), {})
        if cids is None:
            args: tuple = (shard, None, None) if pos else ((None,) if pred == "offline" else (None, None))
            found: dict[int, list[tuple]] = {}
            for row in self.engine.query(pred, *args):
                found.setdefault(row[pos], []).append(row)
            for cid, preds in self.preds.items():
                if k in preds:
                    table[cid] = found.get(cid, [])
        else:
            queries = [(pred, (shard, cid, None) if pos else ((cid,) if pred == "offline" else (cid, None)))
                       for cid in cids]
            for cid, rows in zip(cids, self.engine.query_many(queries) if queries else [], strict=True):
                table[cid] = rows
        return table

    def rows_of(self, k: int, shard: str | None, todo: list[int], class_of: dict[int, tuple[int, ...]],
                 heads: dict[int, tuple[str, str]], full: bool,
                 arrays: tuple[np.ndarray, np.ndarray] | None = None) -> Iterator[tuple[int, int | None, list[tuple]]]:
        """Each tool of ``todo`` that has rows of derived predicate ``k``: ``(tool, class, rows)``.

        The rows' tool column holds the class, not the tool (readers take the tool from the
        triple), and the rows are shared by the class's tools; rows with a stand-in (the name
        or server a rule returned) are made the tool's own, and the class is then None.
        ``full``: every class is asked, and with ``arrays`` (``class_of`` as arrays, the tools
        of ``todo`` only) just the tools of classes that have rows are visited."""
        pos = 1 if DERIVED[k] in SHARD_PREDICATES else 0
        table = self.rows.get((DERIVED[k], shard))
        if full or table is None:
            table = self.rows_for(k, shard, None)
            if arrays is not None:
                ids, cids = arrays
                having = np.fromiter((c for c, r in table.items() if r), dtype=np.int64)
                todo = ids[np.isin(cids[:, k], having)].tolist()
        else:
            fresh = sorted({class_of[i][k] for i in todo} - set(table))
            if fresh:
                table = self.rows_for(k, shard, fresh)
        marked: dict[int, bool] = {}
        for i in todo:
            cid = class_of[i][k]
            rows = table.get(cid)
            if not rows:
                continue
            has_mark = marked.get(cid)
            if has_mark is None:
                has_mark = marked[cid] = any(isinstance(v, str) and v.startswith(MARK) for r in rows for v in r)
            if has_mark:
                server, name = heads[i]
                yield i, None, [concrete(r, pos, i, server, name) for r in rows]
            else:
                yield i, cid, rows

    def fold(self, k: int, shard: str, todo: list[int], class_of: dict[int, tuple[int, ...]],
              heads: dict[int, tuple[str, str]], full: bool, table: dict[int, Any],
              arrays: tuple[np.ndarray, np.ndarray] | None = None, *, twins: Mapping[int, int] | None = None) -> None:
        """A shard predicate's rows into ``table`` per tool: the largest points (``SHARD_POINTS``)
        or the values, sorted (``skeleton``: the slots; ``denied``: the reasons). Folded once per
        class, as its tools share their rows. ``twins`` (``denied`` only): tool -> the class of its
        last approved definition, whose reasons the tool also gets, marked :data:`AS_APPROVED`."""
        points = DERIVED[k] in SHARD_POINTS
        folded: dict[int, Any] = {}
        for t, cid, rows in self.rows_of(k, shard, todo, class_of, heads, full, arrays):
            value = folded.get(cid) if cid is not None else None
            if value is None:
                value = max(int(r[2]) for r in rows) if points else {str(r[2]) for r in rows}
                if cid is not None:
                    folded[cid] = value
            if points:
                table[t] = max(value, table.get(t, -10**6))
            else:
                table[t] = tuple(sorted(set(table.get(t, ())) | value))
        for t, cid in (twins or {}).items():
            known = self.rows.get((DERIVED[k], shard), {})
            rows = known[cid] if cid in known else self.rows_for(k, shard, [cid])[cid]
            server, name = heads[t]
            own = set(table.get(t, ()))
            more = {str(concrete(r, 1, t, server, name)[2]) for r in rows} - own
            if more:
                table[t] = tuple(sorted(own | {f"{reason} {AS_APPROVED}" for reason in more}))


def tool_facts(st: StoredTool, effective: EffectiveTool,
               globs: Sequence[tuple[str, str, str]] = ()) -> frozenset:
    """One tool's catalog facts: its state, the MCP annotations its server set, whether its
    description marks it deprecated (:mod:`jit.analysis.deprecation`), what
    :func:`~jit.analysis.analyze.effective_tool` made of ``available_tools.json`` for it (this
    module does not interpret that file itself), and which ``(shard, effect, glob)`` tool
    selectors of the config its ``server/name`` matches (``shard_tool``: matched here, so
    the rules never need the tool's name, and tools that match no glob stay in one class)."""
    i, t, a = st.id, st.tool, effective.analysis
    out: set[Fact] = {("tool", i, t.server, t.name)}
    for hint, value in (t.annotations or {}).items():
        if hint in ANNOTATION_HINTS and isinstance(value, bool):
            out.add(("annotation", i, hint, "true" if value else "false"))
    if globs:
        qualified = f"{t.server}/{t.name}"
        out.update(("shard_tool", i, shard, effect) for shard, effect, glob in globs
                   if fnmatch.fnmatchcase(qualified, glob))
    if t.server == HARNESS_SERVER:
        out.add(("harness", i))
    if st.analysis is not None:
        out.add(("analyzed", i))
    if is_deprecated(t.description):
        out.add(("deprecated", i))
    out.update(("category", i, c) for c in a.categories)
    out.update(("capability", i, c) for c in a.capabilities)
    out.update(("domain", i, d) for d in a.domains)
    out.update(("affinity", i, s, int(p)) for s, p in a.shard_affinity.items())
    out.update(("flag", i, f) for f in a.flags)
    if not st.approved:  # a changed definition is capped like hostile text until approved
        out.add(("flag", i, CHANGED_FLAG))
    if st.calls:
        out.add(("usage", i, st.calls, st.errors))
    if effective.excluded:
        out.add(("override_excluded", i))
    out.update(("declared_skeleton", i, s) for s in effective.skeleton)
    return frozenset(out)


def class_arrays(class_of: dict[int, tuple[int, ...]]) -> tuple[np.ndarray, np.ndarray]:
    """``class_of`` as ``(tool ids ascending, their classes: one column per derived predicate)``."""
    ids = sorted(class_of)
    cids = np.array([class_of[i] for i in ids], dtype=np.int64).reshape(len(ids), len(DERIVED))
    return np.array(ids, dtype=np.int64), cids


def check_task_tables(rules: RuleSet) -> None:
    """Task tables are asked once per compile over labels; a rule making one read a tool's
    facts would need every tool in the engine, which :func:`abstract` avoids."""
    for name in TASK_TABLES:
        per_tool = rules.reads(name) & TOOL_FACTS
        if per_tool:
            rule = next(r for r in rules.rules if r.head in ({name} | rules.reads(name)) and set(r.uses) & per_tool)
            raise RuleError(f"{name} is a task table and may not read per-tool facts ({', '.join(sorted(per_tool))})",
                            path=rule.path, line=rule.line)


def server_marks(global_facts: frozenset, constants: frozenset) -> tuple[dict[str, str], frozenset]:
    """Servers no rule can tell apart from others with the same global facts, and their stand-ins.

    A server named by no rule constant, and found in the global facts only as their first
    argument (``server_status(S, St)``), matters to the rules only through those facts: its
    tools derive like those of any server with the same ones. Returns server -> stand-in and
    the stand-ins' global facts."""
    about: dict[Any, list[Fact]] = {}
    elsewhere: set[Any] = set(constants)
    for f in global_facts:
        about.setdefault(f[1], []).append(f)
        elsewhere.update(f[2:])
    marks: dict[str, str] = {}
    facts: set[Fact] = set()
    for server, own in about.items():
        if not isinstance(server, str) or server in elsewhere or server.startswith(MARK):
            continue
        profile = sorted((f[0], *f[2:]) for f in own)
        mark = SERVER_MARK + repr(profile)
        marks[server] = mark
        facts.update((f[0], mark, *f[1:]) for f in profile)
    return marks, frozenset(facts)


def abstract(st: StoredTool, facts: frozenset, marks: dict[str, str], fixed: frozenset) -> frozenset:
    """A tool's facts without its id (``T`` dropped), its server replaced by its stand-in and its
    name by one shared stand-in, where no rule can tell them apart: tools whose abstract facts are
    equal derive equal rows, up to their id, server and name (:func:`concrete`).

    The rules' per-tool predicates may read only the tool's own facts and the global ones (as
    :class:`CatalogView` assumes for incremental updates): then a value that is no rule constant
    and equals no other value the tool's facts or the global facts hold matters only as itself.
    """
    t = st.tool
    values = [v for f in facts if f[0] != "tool" for v in f[2:]]
    if any(isinstance(v, str) and v.startswith(MARK) for v in (*values, t.server, t.name)):
        return frozenset(f[:1] + f[2:] for f in facts)  # a NUL in tool text: nothing is abstracted
    own = set(values)
    server = marks.get(t.server, t.server) if t.server not in own and t.server != t.name else t.server
    name = NAME_MARK if t.name not in fixed and t.name not in own and t.name != t.server else t.name
    return frozenset(("tool", server, name) if f[0] == "tool" else f[:1] + f[2:] for f in facts)


def concrete(row: tuple, pos: int, tool: int, server: str, name: str) -> tuple:
    """A class's derived row for one of its tools: the tool's id at ``pos``, stand-ins replaced."""
    out = list(row)
    out[pos] = tool
    for j, v in enumerate(out):
        if isinstance(v, str) and v.startswith(MARK):
            out[j] = name if v == NAME_MARK else server if v.startswith(SERVER_MARK) else v
    return tuple(out)
