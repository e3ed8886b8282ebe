"""The pages describe the product as it is: figures with the command and date that produced them, no
diary of the work sessions that got there (that history is in the git log)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
#: Every page: the README, each page under docs/ and the benchmarks' notes.
PAGES = sorted(["README.md", "bench/notes.md",
                *(path.relative_to(REPO).as_posix() for path in (REPO / "docs").rglob("*.md"))])
#: A work diary: "stop 27", "the VM's slow hours", run_all's old "not re-run by this invocation",
#: "earlier sessions", "this week", "A fourth probe (…)" and a table with before and now/after columns.
DIARY = re.compile(
    r"\b[Ss]tops? \d+\b|\b(?:slow|quick) hours?\b|not re-run by this invocation"
    r"|\b(?:earlier|previous|work) sessions?\b|\b(?:this|last|next) (?:week|stop)\b"
    r"|\b(?:second|third|fourth|fifth|sixth|seventh|eighth|ninth|tenth) probe\b"
    r"|^\|.*\|\s*before\s*\|\s*(?:now|after)\s*\|",
    re.IGNORECASE,
)


@pytest.mark.parametrize("page", PAGES)
def test_the_page_carries_no_session_diary(page: str) -> None:
    lines = (REPO / page).read_text(encoding="utf-8").splitlines()
    found = [f"{page}:{n}: {line.strip()}" for n, line in enumerate(lines, 1) if DIARY.search(line)]
    assert not found, "\n".join(found)


def test_every_page_is_checked() -> None:
    assert {"docs/reliability.md", "docs/serve.md", "docs/ARCHITECTURE.md", "README.md"} <= set(PAGES)


@pytest.mark.parametrize("line", [
    "**A fourth probe (2026-11-24)**, ~275 new cases", "Fixed since (stop 19): a header",
    "a quieter VM than earlier sessions, where", "| case | before | now |", "| sample | Before | After |",
    "measured in the VM's slow hours", "what changed this week",
])
def test_the_diary_pattern_catches_the_forms_a_diary_takes(line: str) -> None:
    assert DIARY.search(line)


@pytest.mark.parametrize("line", [
    "a request id still in flight in this session", "the first probe's vector is stored",
    "`jit serve` stops its upstreams on SIGTERM", "| case | what jit does | test |",
])
def test_the_diary_pattern_lets_the_product_speak(line: str) -> None:
    assert not DIARY.search(line)


def test_no_module_of_jit_or_bench_carries_session_diary() -> None:
    found = [f"{path.relative_to(REPO)}:{n}"
             for folder in ("jit", "bench") for path in sorted((REPO / folder).rglob("*.py"))
             for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1) if DIARY.search(line)]
    assert not found, found
