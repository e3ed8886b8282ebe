"""jit's distribution has a name of its own, and every install line a user may copy installs it.

``jit`` on PyPI is an unrelated project: ``pip install 'jit[postgres]'`` in a fresh environment
installed that instead. The distribution is ``jit-mcp`` (the import package and the command stay
``jit``), installed from a clone; the lines that tell a user what to install are checked here
wherever they are written: README, docs, error messages, scripts, tests and examples.
"""

from __future__ import annotations

import re
import sys
import tomllib
from pathlib import Path

import pytest
from conftest import REPO

from jit.catalog.store import open_backend
from jit.errors import StoreError

PYPROJECT = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
DISTRIBUTION = PYPROJECT["project"]["name"]

#: An install of the distribution named ``jit`` (``pip install jit``, ``pip install 'jit[postgres]'``),
#: or an extra of it written as ``jit[...]``, anywhere in a line.
_JIT_DIST = re.compile(r"""pip install(?:\s+-[-\w]+)*\s+["']?jit(?![\w.-])|["'`]jit\[""")
#: ``-e .[a,b]`` / ``-e '.[a]'`` / ``jit-mcp[a]``: the extras an install line asks for.
_EXTRAS = re.compile(r"""(?:\.|jit-mcp)\[([\w,\s-]+)\]""")


def written_files() -> list[Path]:
    """Every file whose text may tell someone what to install (this test's own file aside)."""
    found = [REPO / "README.md", REPO / "pyproject.toml"]
    for folder, patterns in (("docs", ("*.md",)), ("jit", ("*.py",)), ("scripts", ("*",)), ("tests", ("*.py",)),
                             ("examples", ("*.py",)), ("bench", ("*.py", "*.md")), (".ci", ("*",))):
        for pattern in patterns:
            found += sorted((REPO / folder).rglob(pattern))
    return [p for p in found if p.is_file() and p != Path(__file__).resolve()]


def install_lines() -> list[tuple[Path, str]]:
    return [(p, line) for p in written_files() for line in p.read_text(encoding="utf-8").splitlines()
            if "pip install" in line]


def test_the_distribution_has_a_name_of_its_own_and_installs_the_jit_package_and_command():
    assert DISTRIBUTION == "jit-mcp"
    assert PYPROJECT["project"]["scripts"] == {"jit": "jit.cli:main"}
    assert PYPROJECT["tool"]["hatch"]["build"]["targets"]["wheel"]["packages"] == ["jit"]


def test_no_line_installs_the_unrelated_distribution_named_jit():
    assert _JIT_DIST.search("pip install 'jit[postgres]'") and _JIT_DIST.search("pip install jit")
    assert _JIT_DIST.search("pip install --quiet jit") and _JIT_DIST.search("or the 'jit[bench]' extra")
    assert not _JIT_DIST.search("pip install -e '.[postgres]' in jit's clone") and not _JIT_DIST.search(
        "pip install jit-mcp")
    wrong = [f"{p.relative_to(REPO)}: {line.strip()}" for p in written_files()
             for line in p.read_text(encoding="utf-8").splitlines() if _JIT_DIST.search(line)]
    assert not wrong, "\n".join(wrong)


def test_every_extra_an_install_line_asks_for_exists():
    extras = set(PYPROJECT["project"]["optional-dependencies"])
    asked = {(p.relative_to(REPO), name.strip()) for p, line in install_lines() for m in _EXTRAS.finditer(line)
             for name in m.group(1).split(",") if name.strip() and not name.strip().startswith("$")}
    assert {name for _, name in asked} >= {"postgres", "test"}, "the README and docs/team.md name these extras"
    assert not {(str(p), n) for p, n in asked if n not in extras}, extras


def test_the_missing_driver_error_says_what_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "jit.catalog.backend_pg", None)  # as if psycopg were absent
    with pytest.raises(StoreError, match=re.escape("pip install 'psycopg[binary]>=3.2,<4'")) as caught:
        open_backend("postgresql://jit:secret@db.invalid/jit")
    assert "secret" not in str(caught.value) and "postgres` extra" in caught.value.message


def test_an_evaluation_report_names_the_jit_that_ran_without_asking_for_a_distribution_named_jit(monkeypatch):
    """``importlib.metadata.version("jit")`` finds nothing in an environment holding ``jit-mcp``
    (or finds PyPI's unrelated ``jit``): the report takes jit's own version."""
    import importlib.metadata as md

    import jit
    from jit.evaluation.eval_report import machine_info

    def version(name: str) -> str:
        if name == "jit":
            raise md.PackageNotFoundError(name)
        return "1.0"

    monkeypatch.setattr(md, "version", version)
    assert machine_info()["packages"]["jit"] == jit.__version__
