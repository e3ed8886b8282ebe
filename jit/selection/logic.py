"""The pyDatalog adapter: rule files, facts, queries.

``rules/schema.dl`` declares every predicate (``fact`` ones jit asserts,
``derive`` ones the policy defines and jit reads); ``rules/policy.dl`` and any
other ``*.dl`` file in the rules directory hold pyDatalog clauses. Both are
checked before anything is loaded: a syntax error, a literal that uses a
predicate nobody declares or defines, an arity that does not match, or a bare
lower-case constant is a :class:`~jit.errors.RuleError` naming the file and
line.

pyDatalog keeps its database per thread, so a :class:`LogicEngine` owns one
thread and runs every assert, retract and query there; callers on any thread
just call its methods. Facts are asserted through pyDatalog's engine layer
(``pyEngine.assert_``), which is about 8x faster than ``pyDatalog.assert_fact``
(13 µs instead of ~100 µs a fact, measured here).
"""

from __future__ import annotations

import ast
import hashlib
import re
import threading
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from ..errors import RuleError
from ..paths import bundled_dir

__all__ = [
    "Declaration",
    "Fact",
    "LogicEngine",
    "Rule",
    "RuleSet",
    "default_rules_dir",
]

#: A fact as jit passes it around: ``(predicate, arg, ...)``.
Fact = tuple[Any, ...]

SCHEMA_FILE = "schema.dl"

_DECL = re.compile(r"^(fact|derive)\s+([a-z][a-z0-9_]*)\s*\(([^()]*)\)\s*(?:#\s?(.*))?$")
_PARAM = re.compile(r"^[A-Z][A-Za-z0-9_]*$")
#: pyDatalog's aggregate functions, allowed on the right of a function head.
_AGGREGATES = frozenset(
    {"max_", "min_", "sum_", "len_", "rank_", "concat_", "running_sum_", "mean_", "tuple_", "range_", "format_"}
)

T = TypeVar("T")


def default_rules_dir() -> Path:
    """The repository's ``rules/`` (editable install) or the copy bundled in the wheel."""
    return bundled_dir("rules")


@dataclass(frozen=True, slots=True)
class Declaration:
    """One predicate declared in schema.dl."""

    name: str
    kind: str  # "fact" | "derive"
    params: tuple[str, ...]
    doc: str
    path: str
    line: int

    @property
    def arity(self) -> int:
        return len(self.params)


@dataclass(frozen=True, slots=True)
class Rule:
    """One clause or in-file fact of a policy file, kept for explanations."""

    head: str
    path: str
    line: int
    text: str
    #: Predicates the body reads (empty for a fact).
    uses: tuple[str, ...] = ()


@dataclass(frozen=True)
class RuleSet:
    """Validated rule files, ready to load into a :class:`LogicEngine`."""

    directory: Path
    declarations: dict[str, Declaration]
    rules: tuple[Rule, ...]
    #: ``(path, line, source)`` of every clause and in-file fact, in load order.
    statements: tuple[tuple[str, int, str], ...]
    fingerprint: str
    #: Every constant a rule or in-file fact names (``'read_file'``, ``'disabled'``, ``5``): a value
    #: outside this set can only matter to a rule through equality with another fact's value.
    constants: frozenset[Any] = frozenset()

    @classmethod
    def load(cls, directory: str | Path | None = None) -> RuleSet:
        """Read and check ``schema.dl`` plus every other ``*.dl`` file (sorted by name)."""
        d = Path(directory) if directory is not None else default_rules_dir()
        schema_path = d / SCHEMA_FILE
        if not d.is_dir():
            raise RuleError("rules directory not found", path=str(d))
        if not schema_path.is_file():
            raise RuleError(f"{SCHEMA_FILE} not found in the rules directory", path=str(schema_path))
        digest = hashlib.sha256()
        schema_text = _read(schema_path)
        digest.update(schema_text.encode())
        decls = _parse_schema(schema_text, str(schema_path))
        checker = _PolicyChecker(decls)
        for p in sorted(d.glob("*.dl")):
            if p.name == SCHEMA_FILE:
                continue
            text = _read(p)
            digest.update(p.name.encode() + b"\0" + text.encode())
            checker.check_file(text, str(p))
        checker.finish()
        return cls(d, decls, tuple(checker.rules), tuple(checker.statements), digest.hexdigest()[:16],
                   frozenset(checker.constants))

    def rules_for(self, head: str) -> list[Rule]:
        return [r for r in self.rules if r.head == head]

    def dependents(self, predicate: str) -> frozenset[str]:
        """Every predicate whose rules read ``predicate``, directly or through others."""
        return self._closure(predicate, lambda frontier: {r.head for r in self.rules if frontier & set(r.uses)})

    def derived(self) -> list[Declaration]:
        return [d for d in self.declarations.values() if d.kind == "derive"]

    def reads(self, predicate: str) -> frozenset[str]:
        """Every predicate the rules of ``predicate`` read, directly or through other rules."""
        return self._closure(predicate, lambda frontier: {u for r in self.rules if r.head in frontier for u in r.uses})

    @staticmethod
    def _closure(start: str, step: Callable[[set[str]], set[str]]) -> frozenset[str]:
        """What ``step`` reaches from ``start`` in one or more steps."""
        found: set[str] = set()
        frontier = {start}
        while frontier:
            frontier = step(frontier) - found
            found |= frontier
        return frozenset(found)


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise RuleError(f"cannot read rule file: {exc}", path=str(path)) from exc


def _parse_schema(text: str, path: str) -> dict[str, Declaration]:
    decls: dict[str, Declaration] = {}
    for lineno, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        m = _DECL.match(line)
        if not m:
            raise RuleError(
                "expected 'fact name(Arg, ...)' or 'derive name(Arg, ...)' (optionally followed by '# doc')",
                path=path, line=lineno,
            )
        kind, name, params_text, doc = m.groups()
        params = tuple(p.strip() for p in params_text.split(",")) if params_text.strip() else ()
        for p in params:
            if not _PARAM.match(p):
                raise RuleError(f"parameter {p!r} of {name} must be a capitalised name", path=path, line=lineno)
        if name in decls:
            raise RuleError(f"predicate {name} is declared twice (first at line {decls[name].line})",
                            path=path, line=lineno)
        decls[name] = Declaration(name, kind, params, (doc or "").strip(), path, lineno)
    return decls


class _PolicyChecker:
    """Walks pyDatalog clauses with Python's own parser (pyDatalog's syntax is Python's)."""

    def __init__(self, decls: dict[str, Declaration]) -> None:
        self.decls = decls
        self.defined: dict[str, tuple[int, str, int]] = {}  # name -> (arity, path, line)
        self.used: list[tuple[str, int, str, int]] = []  # (name, arity, path, line)
        self.rules: list[Rule] = []
        self.statements: list[tuple[str, int, str]] = []
        self.constants: set[Any] = set()

    def check_file(self, text: str, path: str) -> None:
        try:
            tree = ast.parse(text, filename=path)
        except SyntaxError as exc:
            raise RuleError(f"syntax error: {exc.msg}", path=path, line=exc.lineno) from None
        # ast.get_source_segment splits the whole text again for every statement: quadratic,
        # a quarter of a second for the bundled policy. Split once.
        lines = text.splitlines(keepends=True)
        for stmt in tree.body:
            src = _segment(lines, stmt)
            self._statement(stmt, path, src)
            self.constants.update(n.value for n in ast.walk(stmt) if isinstance(n, ast.Constant))
            self.statements.append((path, stmt.lineno, src))

    def _statement(self, stmt: ast.stmt, path: str, src: str) -> None:
        line = stmt.lineno
        expr = stmt.value if isinstance(stmt, ast.Expr) else None
        is_fact = isinstance(expr, ast.UnaryOp) and isinstance(expr.op, ast.UAdd | ast.USub)
        if is_fact and isinstance(expr.operand, ast.Call):
            if isinstance(expr.op, ast.USub):
                raise RuleError("a rule file may only add facts ('+ p(...)'), not retract them", path=path, line=line)
            name = self._define(expr.operand, path, line, allow_constants_only=True)
            self.rules.append(Rule(name, path, line, " ".join(src.split())))
            return
        if isinstance(expr, ast.Compare) and len(expr.ops) == 1 and isinstance(expr.ops[0], ast.LtE):
            head, body = expr.left, expr.comparators[0]
            name = self._head(head, path, line)
            first = len(self.used)
            for lit in _conjuncts(body):
                self._body_literal(lit, path, line)
            uses = tuple(sorted({u[0] for u in self.used[first:]}))
            self.rules.append(Rule(name, path, line, " ".join(src.split()), uses))
            return
        raise RuleError("expected a rule 'head(...) <= body' or a fact '+ name(...)'", path=path, line=line)

    def _head(self, head: ast.expr, path: str, line: int) -> str:
        if isinstance(head, ast.Call):
            return self._define(head, path, line)
        # (f[X] == aggregate_(...)) <= body : a pyDatalog function with an aggregate.
        if (
            isinstance(head, ast.Compare)
            and len(head.ops) == 1
            and isinstance(head.ops[0], ast.Eq)
            and isinstance(head.left, ast.Subscript)
            and isinstance(head.left.value, ast.Name)
        ):
            name = head.left.value.id
            keys = head.left.slice.elts if isinstance(head.left.slice, ast.Tuple) else [head.left.slice]
            self._record_definition(name, len(keys) + 1, path, line)
            return name
        raise RuleError("the head of a rule must be a predicate like name(X, Y)", path=path, line=line)

    def _define(self, call: ast.Call, path: str, line: int, allow_constants_only: bool = False) -> str:
        if not isinstance(call.func, ast.Name) or call.keywords:
            raise RuleError("a predicate must be a plain name applied to arguments", path=path, line=line)
        name = call.func.id
        for arg in call.args:
            self._argument(arg, path, line)
            if allow_constants_only and isinstance(arg, ast.Name):
                raise RuleError(f"fact {name} must have constant arguments, not variable {arg.id}",
                                path=path, line=line)
        self._record_definition(name, len(call.args), path, line)
        return name

    def _record_definition(self, name: str, arity: int, path: str, line: int) -> None:
        decl = self.decls.get(name)
        if decl is not None and decl.arity != arity:
            raise RuleError(
                f"{name} has {decl.arity} arguments in {Path(decl.path).name} line {decl.line}, not {arity}",
                path=path, line=line,
            )
        prev = self.defined.get(name)
        if prev is not None and prev[0] != arity:
            raise RuleError(f"{name} is used with {prev[0]} arguments at line {prev[2]}, here with {arity}",
                            path=path, line=line)
        self.defined.setdefault(name, (arity, path, line))

    def _body_literal(self, lit: ast.expr, path: str, line: int) -> None:
        if isinstance(lit, ast.UnaryOp) and isinstance(lit.op, ast.Invert):
            lit = lit.operand
        if isinstance(lit, ast.Call):
            if not isinstance(lit.func, ast.Name):
                raise RuleError("a predicate must be a plain name applied to arguments", path=path, line=line)
            for arg in lit.args:
                self._argument(arg, path, line)
            self.used.append((lit.func.id, len(lit.args), path, line))
            return
        if isinstance(lit, ast.Compare):
            # A comparison or an assignment such as (P == A // 5); f[X] inside reads function f.
            for node in ast.walk(lit):
                if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name):
                    keys = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
                    self.used.append((node.value.id, len(keys) + 1, path, line))
                elif isinstance(node, ast.Name) and not _is_variable(node.id) and node.id not in _AGGREGATES:
                    raise RuleError(f"{node.id!r} is neither a variable (capitalised) nor a quoted constant",
                                    path=path, line=line)
            return
        raise RuleError("a rule body is literals joined with '&'", path=path, line=line)

    def _argument(self, arg: ast.expr, path: str, line: int) -> None:
        if isinstance(arg, ast.Name) and not _is_variable(arg.id):
            raise RuleError(
                f"{arg.id!r} is neither a variable (capitalised) nor a quoted constant ('{arg.id}')",
                path=path, line=line,
            )
        if not isinstance(arg, ast.Name | ast.Constant | ast.UnaryOp):
            raise RuleError("predicate arguments must be variables or constants", path=path, line=line)

    def finish(self) -> None:
        used_names = set()
        for name, arity, path, line in self.used:
            used_names.add(name)
            decl = self.decls.get(name)
            if decl is not None:
                if decl.arity != arity:
                    raise RuleError(
                        f"{name} has {decl.arity} arguments in {Path(decl.path).name} line {decl.line}, not {arity}",
                        path=path, line=line,
                    )
                continue
            defined = self.defined.get(name)
            if defined is None:
                raise RuleError(
                    f"unknown predicate {name}/{arity}: not declared in {SCHEMA_FILE} and defined by no rule",
                    path=path, line=line,
                )
            if defined[0] != arity:
                raise RuleError(f"{name} is defined with {defined[0]} arguments at {defined[1]}:{defined[2]}",
                                path=path, line=line)
        for name, (_arity, path, line) in self.defined.items():
            if name not in self.decls and name not in used_names:
                raise RuleError(
                    f"{name} is not declared in {SCHEMA_FILE} and no rule uses it (a misspelt predicate?)",
                    path=path, line=line,
                )


def _segment(lines: list[str], node: ast.stmt) -> str:
    """The source of ``node`` (what ``ast.get_source_segment`` returns), from pre-split lines.

    Offsets are UTF-8 byte columns, as in ``ast``."""
    first, last = node.lineno - 1, (node.end_lineno or node.lineno) - 1
    start, end = node.col_offset, node.end_col_offset
    if first == last:
        return lines[first].encode()[start:end].decode()
    parts = [lines[first].encode()[start:].decode(), *lines[first + 1:last], lines[last].encode()[:end].decode()]
    return "".join(parts)


def _conjuncts(body: ast.expr) -> list[ast.expr]:
    if isinstance(body, ast.BinOp) and isinstance(body.op, ast.BitAnd):
        return _conjuncts(body.left) + _conjuncts(body.right)
    return [body]


def _is_variable(name: str) -> bool:
    return name[:1].isupper() or name.startswith("_")


# --------------------------------------------------------------------------- the engine


#: Remembered :meth:`LogicEngine.with_facts` answers at most (all are forgotten past it).
_ANSWERS_KEPT = 4096


class LogicEngine:
    """A pyDatalog database with the rules loaded, owned by one thread.

    Every public method may be called from any thread; the work runs on the
    engine's thread, one call at a time. Call :meth:`close` when done.
    """

    def __init__(self, rules: RuleSet) -> None:
        self.rules = rules
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="jit-datalog")
        self._closed = False
        self._lock = threading.Lock()
        #: Answers of :meth:`with_facts` queries, keyed by the session facts each one reads (see
        #: :meth:`_session`); forgotten whenever the engine's own facts change. Engine thread only.
        self._answers: dict[tuple, tuple[tuple[Any, ...], ...]] = {}
        self._reads: dict[str, frozenset[str]] = {}
        self._run(self._load)

    def _run(self, fn: Callable[..., T], *args: Any) -> T:
        if self._closed:
            raise RuntimeError("LogicEngine is closed")
        return self._pool.submit(fn, *args).result()

    def close(self) -> None:
        with self._lock:
            if not self._closed:
                self._closed = True
                self._pool.shutdown(wait=True)

    def __enter__(self) -> LogicEngine:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- on the engine thread

    def _load(self) -> None:
        from pyDatalog import pyDatalog, util

        pyDatalog.Logic()  # a fresh database for this thread
        for path, line, src in self.rules.statements:
            try:
                pyDatalog.load(src)
            except util.DatalogError as exc:
                raise RuleError(f"pyDatalog rejected the clause: {exc.value}", path=path,
                                line=line + max(0, (exc.lineno or 1) - 1)) from None
            except Exception as exc:  # noqa: BLE001 - pyDatalog raises plain errors for bad clauses
                raise RuleError(f"pyDatalog rejected the clause: {exc}", path=path, line=line) from None
        # A declared fact no rule reads positively and none is asserted yet would be unknown to
        # pyDatalog, and a rule negating it (``~task_system(W)``) would fail: define each one.
        from pyDatalog import pyEngine

        for decl in self.rules.declarations.values():
            if decl.kind == "fact" and f"{decl.name}/{len(decl.params)}" not in pyEngine.Logic.tl.logic.Db:
                probe = (decl.name, *(["\x00"] * len(decl.params)))
                self._change([probe], [])
                self._change([], [probe])

    @staticmethod
    def _literal(name: str, args: Sequence[Any]):  # noqa: ANN205 - a pyEngine.Literal
        from pyDatalog import pyEngine

        return pyEngine.Literal(name, [pyEngine.Term_of(a) for a in args])

    def _change(self, add: Iterable[Fact], remove: Iterable[Fact]) -> None:
        from pyDatalog import pyEngine

        for f in remove:
            pyEngine.retract(pyEngine.Clause(self._literal(f[0], f[1:]), []))
        for f in add:
            pyEngine.assert_(pyEngine.Clause(self._literal(f[0], f[1:]), []))

    def _query(self, name: str, args: Sequence[Any]) -> list[tuple[Any, ...]]:
        from pyDatalog import pyEngine

        if f"{name}/{len(args)}" not in pyEngine.Logic.tl.logic.Db:
            return []  # no rule and no fact defines it: nothing holds
        terms = [pyEngine.Var(f"_Q{i}") if a is None else pyEngine.Term_of(a) for i, a in enumerate(args)]
        result = pyEngine.Literal(name, terms).ask()
        if result is True:
            return [tuple(args)]
        return list(result or [])

    def _session(self, facts: Sequence[Fact], queries: Sequence[tuple[str, Sequence[Any]]]) -> list[list[tuple]]:
        """The answers of ``queries`` with ``facts`` asserted for the time of the session.

        A query's answer depends on the engine's own facts and on the session facts of the
        predicates its rules read (:meth:`RuleSet.reads`), nothing else; so it is remembered under
        those, and a session whose queries were all answered before asserts nothing. This matters
        because pyDatalog answers a negated literal by a sub-query per binding: the remote-systems
        rule (``~pointed(S)`` for each hosted system) took ~6.5 ms a compile, while the task words
        it reads are the same for most tasks."""
        keys = [(name, tuple(args), self._relevant(name, facts)) for name, args in queries]
        answers = [self._answers.get(k) for k in keys]
        if any(a is None for a in answers):
            self._change(facts, ())
            try:
                for i, (name, args) in enumerate(queries):
                    if answers[i] is None:
                        answers[i] = tuple(self._query(name, args))
            finally:
                self._change((), facts)
            if len(self._answers) + len(keys) > _ANSWERS_KEPT:
                self._answers.clear()
            self._answers.update(zip(keys, answers, strict=True))  # type: ignore[arg-type]
        return [list(a) for a in answers]  # type: ignore[arg-type]

    def _relevant(self, name: str, facts: Sequence[Fact]) -> frozenset[Fact]:
        reads = self._reads.get(name)
        if reads is None:
            reads = self._reads[name] = self.rules.reads(name) | {name}
        return frozenset(f for f in facts if f[0] in reads)

    def _apply(self, add: list[Fact], remove: list[Fact]) -> None:
        self._answers.clear()  # before the change: a change that fails half-way leaves no stale answer
        self._change(add, remove)

    # -- public

    def change(self, add: Iterable[Fact] = (), remove: Iterable[Fact] = ()) -> None:
        """Retract ``remove`` then assert ``add`` (lists of ``(predicate, args...)``)."""
        self._run(self._apply, list(add), list(remove))

    def query(self, name: str, *args: Any) -> list[tuple[Any, ...]]:
        """Every row of ``name``; ``None`` in ``args`` is a free variable, anything else is bound."""
        return self._run(self._query, name, args)

    def query_many(self, queries: Sequence[tuple[str, Sequence[Any]]]) -> list[list[tuple]]:
        """Several queries in one trip to the engine thread."""
        return self._run(lambda: [self._query(n, a) for n, a in queries])

    def with_facts(self, facts: Sequence[Fact], queries: Sequence[tuple[str, Sequence[Any]]]) -> list[list[tuple]]:
        """Assert ``facts``, answer ``queries``, retract ``facts`` again: one atomic session."""
        return self._run(self._session, list(facts), queries)
