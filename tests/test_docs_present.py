"""The pages describe the product as it is: figures with the command and date that produced them, no
diary of the work sessions that got there (that history is in the git log)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
#: Pages kept free of session diary; extend as more pages are rewritten.
PAGES = ("docs/benchmarks.md", "docs/quality.md", "docs/selection.md", "bench/notes.md")
#: "stop 27", "the VM's slow hours", run_all's old "not re-run by this invocation".
DIARY = re.compile(r"\b[Ss]tops? \d+\b|\b(?:slow|quick) hours?\b|not re-run by this invocation")


@pytest.mark.parametrize("page", PAGES)
def test_the_page_carries_no_session_diary(page: str) -> None:
    lines = (REPO / page).read_text(encoding="utf-8").splitlines()
    found = [f"{page}:{n}: {line.strip()}" for n, line in enumerate(lines, 1) if DIARY.search(line)]
    assert not found, "\n".join(found)


def test_no_module_of_jit_or_bench_carries_session_diary() -> None:
    found = [f"{path.relative_to(REPO)}:{n}"
             for folder in ("jit", "bench") for path in sorted((REPO / folder).rglob("*.py"))
             for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1) if DIARY.search(line)]
    assert not found, found
