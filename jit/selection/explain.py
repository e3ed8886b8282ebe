"""Which rules a tool set's explanation cites, each named once.

A tool's reasons say where its points came from: ``relevance +65 (policy.dl:99)``. The
citation is the rule (or in-file fact) that can give *those* points: of a predicate's
rules, the ones whose head ends in that value or in a variable (``shard_points(Sh, T, P)
<= … (P == A // 5)`` can give any). So a line cites the relevance tier that fired, not all
six (``policy.dl:98,99,100,101,102,103``), and the tool set's
:meth:`~jit.selection.toolset.ToolSet.legend` gives each cited rule's text once.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..analysis.deprecation import is_deprecated
from ..models import StoredTool, ToolAnalysis
from .logic import Rule, RuleSet
from .scored_tool import ScoredTool

__all__ = ["Citation", "RuleCitations", "explained_facts"]

#: A head argument that is not a constant (a variable, an expression): it may take any value.
_ANY = object()


@dataclass(frozen=True, slots=True)
class Citation:
    """One rule as the legend shows it."""

    key: str  # "policy.dl:99": how reasons refer to it
    predicate: str
    path: str
    line: int
    head: str  # "relevance_points(10, 25, 65)"
    text: str  # the clause as written, on one line

    def to_dict(self) -> dict[str, Any]:
        return {"file": self.path, "line": self.line, "predicate": self.predicate, "head": self.head,
                "text": self.text}


class RuleCitations:
    """Reason texts that cite rules, made once per ``(kind, value)`` and remembered with the rules
    they cite, so a tool set's legend is read off its tools' reasons. Thread-safe as a cache:
    rules do not change under a compiler, and a race only makes the same text twice."""

    def __init__(self, rules: RuleSet) -> None:
        #: Predicate -> its rules as ``(citation, the value its head ends in, or _ANY)``.
        self._rules: dict[str, list[tuple[Citation, Any]]] = {}
        for r in rules.rules:
            head, last = _head(r)
            c = Citation(f"{Path(r.path).name}:{r.line}", r.head, r.path, r.line, head, r.text.removeprefix("+ "))
            self._rules.setdefault(r.head, []).append((c, last))
        self._citations = {c.key: c for found in self._rules.values() for c, _last in found}
        #: Reason text -> the keys it cites.
        self._cited: dict[str, tuple[str, ...]] = {}
        #: ``(label, predicate, value)`` -> reason text.
        self._texts: dict[tuple[str, str, Any], str] = {}

    def cite(self, predicate: str, value: Any) -> tuple[str, ...]:
        """Keys of the rules of ``predicate`` that can give ``value``; every rule of it when none
        names that value (a rule file that computes it some other way)."""
        found = self._rules.get(predicate, [])
        exact = [c.key for c, last in found if last is _ANY or last == value]
        return tuple(exact or (c.key for c, _last in found))

    def reason(self, label: str, predicate: str, value: Any) -> str:
        """``label (policy.dl:99)``: ``label`` followed by the rules behind ``value`` of ``predicate``."""
        text = self._texts.get((label, predicate, value))
        if text is None:
            keys = self.cite(predicate, value)
            text = f"{label} ({_compact(keys)})" if keys else f"{label} ({predicate})"
            self._cited[text] = keys
            self._texts[(label, predicate, value)] = text
        return text

    def cited(self, reasons: list[str]) -> list[str]:
        """The keys ``reasons`` cite, in order, each once."""
        return list(dict.fromkeys(k for r in reasons for k in self._cited.get(r, ())))

    def legend(self, tools: list[ScoredTool]) -> dict[str, Citation]:
        """Every rule the tools' reasons cite, by file and line."""
        keys = {k for s in tools for r in s.reasons for k in self._cited.get(r, ())}
        found = [self._citations[k] for k in keys]
        return {c.key: c for c in sorted(found, key=lambda c: (c.path, c.line))}


def _compact(keys: tuple[str, ...]) -> str:
    """``policy.dl:83,84``: lines of one file after its name once."""
    by_file: dict[str, list[str]] = {}
    for k in keys:
        name, _, line = k.rpartition(":")
        by_file.setdefault(name, []).append(line)
    return "; ".join(f"{name}:{','.join(lines)}" for name, lines in by_file.items())


def _head(rule: Rule) -> tuple[str, Any]:
    """A clause's head as written and the constant it ends in (``_ANY`` for a variable)."""
    text = rule.text.removeprefix("+ ")
    try:
        expr = ast.parse(text, mode="eval").body
    except SyntaxError:  # RuleSet.load parsed it already; a multi-line clause is joined differently
        return text.split("<=")[0].strip(), _ANY
    node = expr.left if isinstance(expr, ast.Compare) and isinstance(expr.ops[0], ast.LtE) else expr
    head = ast.get_source_segment(text, node) or text
    if isinstance(node, ast.Call) and node.args:
        try:
            return head, ast.literal_eval(node.args[-1])
        except ValueError:
            return head, _ANY
    return head, _ANY


def explained_facts(st: StoredTool, a: ToolAnalysis | None, blocked: Any) -> dict[str, Any]:
    """The facts an explanation shows for a tool (``blocked``: the rules' reason, if any): what
    the rules saw of it, from its definition ``st`` and effective analysis ``a``."""
    a = a or ToolAnalysis(analyzer="none")
    facts: dict[str, Any] = {
        "server_status": st.server_status.value,
        "analyzed": st.analysis is not None,
        "categories": list(a.categories),
        "capabilities": list(a.capabilities),
        "domains": list(a.domains),
        "affinity": dict(a.shard_affinity),
    }
    if st.calls:
        facts["usage"] = {"calls": st.calls, "errors": st.errors}
    if not st.approved:
        facts["definition"] = "changed since approved: awaiting `jit approve`"
    if a.flags:
        facts["flags"] = list(a.flags)
    if is_deprecated(st.tool.description):
        facts["deprecated"] = True
    if blocked is not None:
        facts["blocked"] = blocked
    return facts
