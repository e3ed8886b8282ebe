"""No module of jit binds a top-level name twice unless the second binding reads the first (``FIRST =
re.compile(rf"…{FIRST.pattern}…")`` refines a cue): a second ``_URL`` further down a long module silently
replaces the first for every function of it, and the selections change with no error."""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "jit"


def _bound(node: ast.stmt) -> list[str]:
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return [node.name]
    if isinstance(node, ast.Assign):
        return [t.id for t in node.targets if isinstance(t, ast.Name)]
    if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.value is not None:
        return [node.target.id]
    return []


def _reads(node: ast.stmt, name: str) -> bool:
    return any(isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, ast.Load) for n in ast.walk(node))


def test_no_module_binds_a_top_level_name_twice():
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        lines: dict[str, list[int]] = defaultdict(list)
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            for name in _bound(node):
                if lines[name] and not _reads(node, name):
                    found.append(f"{path.relative_to(PACKAGE.parent)}:{node.lineno} {name} (first at {lines[name][0]})")
                lines[name].append(node.lineno)
    assert not found, found


def test_the_check_finds_a_second_binding():
    tree = ast.parse("_URL = 1\ndef f():\n    return _URL\n_URL = 2\nFIRST = 3\nFIRST = FIRST + 1\n")
    second = [n for n in tree.body if _bound(n) == ["_URL"]][1]
    refined = [n for n in tree.body if _bound(n) == ["FIRST"]][1]
    assert not _reads(second, "_URL") and _reads(refined, "FIRST")
