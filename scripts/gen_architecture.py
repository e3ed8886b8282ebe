"""Write the module table of docs/ARCHITECTURE.md from the package itself.

Every module of ``jit/`` gets one row: its path and the summary of its docstring (the
docstring's first paragraph). The table sits between two marker comments under
``## Modules``; nothing outside them is touched. The modules are read with :mod:`ast`,
never imported, so a module moved, added or broken mid-refactor is listed as it stands.

    python scripts/gen_architecture.py          # rewrite the table
    python scripts/gen_architecture.py --check  # exit 1 if the committed table is stale

``tests/test_docs.py`` fails when the committed table differs from what this writes.
"""

from __future__ import annotations

import argparse
import ast
import re
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
PACKAGE = REPO / "jit"
DOC = REPO / "docs" / "ARCHITECTURE.md"
COMMAND = "python scripts/gen_architecture.py"
BEGIN = f"<!-- The module table is written by `{COMMAND}` from each module's docstring: do not edit it by hand. -->"
END = "<!-- End of the generated module table. -->"

#: The subpackages in the order of the layers (core below, front ends on top); a
#: subpackage not named here follows them in alphabetical order.
WINGS = ("embedding", "injection", "catalog", "client", "analysis", "selection", "serve", "evaluation", "cli")


class GenerationError(Exception):
    """A module the table cannot describe (no docstring), or a page without the markers."""


def _rst_to_markdown(text: str) -> str:
    """``code`` and :role:`~a.b.name` as Markdown code spans; a table cell's pipes escaped."""
    def role(m: re.Match[str]) -> str:  # :class:`~jit.models.ToolDef` -> `ToolDef`, as Sphinx shows it
        target = m.group(2)
        return f"`{target.rpartition('.')[2] if m.group(1) else target}`"

    text = re.sub(r":[a-z]+:`(~?)([^`]+)`", role, text)
    text = re.sub(r"``([^`]+)``", r"`\1`", text)
    return text.replace("|", "\\|")


def summary(path: Path, name: str) -> str:
    """The first paragraph of the docstring of the module at ``path`` (``name`` in errors), on one line."""
    try:
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    except SyntaxError as exc:
        raise GenerationError(f"{name} does not parse: {exc}") from exc
    doc = ast.get_docstring(tree)
    if not doc or not doc.strip():
        raise GenerationError(f"{name} has no docstring: give it one saying what it holds")
    first = doc.strip().split("\n\n", 1)[0]
    return _rst_to_markdown(" ".join(first.split()))


def _order(rel: Path) -> tuple:
    """Top-level modules first (the package's own ``__init__`` first of all), then each
    subpackage, its ``__init__`` first, in the order of :data:`WINGS`."""
    if len(rel.parts) == 1:
        return (0, 0, rel.name != "__init__.py", rel.name != "__main__.py", rel.name)
    wing = rel.parts[0]
    rank = WINGS.index(wing) if wing in WINGS else len(WINGS)
    return (1, rank, wing, rel.name != "__init__.py", rel.as_posix())


def _label(rel: Path) -> str:
    """How the table names a module: a subpackage's ``__init__.py`` by its directory."""
    if rel.name == "__init__.py" and len(rel.parts) > 1:
        return rel.parent.as_posix() + "/"
    return rel.as_posix()


def table(package: Path = PACKAGE) -> str:
    """The Markdown table of every module under ``package``."""
    paths = [p for p in package.rglob("*.py") if "__pycache__" not in p.parts]
    rels = sorted((p.relative_to(package) for p in paths), key=_order)
    rows = [f"| `{_label(rel)}` | {summary(package / rel, f'{package.name}/{rel.as_posix()}')} |" for rel in rels]
    return "\n".join(["| module | holds |", "|---|---|", *rows]) + "\n"


def render(page: str, package: Path = PACKAGE) -> str:
    """``page`` with the text between the markers replaced by the current table."""
    start, end = page.find(BEGIN), page.find(END)
    if start < 0 or end < start:
        raise GenerationError(f"{DOC.relative_to(REPO)} lacks the markers {BEGIN!r} … {END!r}")
    return page[: start + len(BEGIN)] + "\n\n" + table(package) + "\n" + page[end:]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if the committed table is stale, writing nothing")
    args = parser.parse_args(argv)
    page = DOC.read_text(encoding="utf-8")
    try:
        new = render(page)
    except GenerationError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if new == page:
        return 0
    if args.check:
        print(f"{DOC.relative_to(REPO)}: the module table is stale; run `{COMMAND}`", file=sys.stderr)
        return 1
    DOC.write_text(new, encoding="utf-8")
    print(f"wrote the module table of {DOC.relative_to(REPO)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
