"""No name is read that nothing binds, in jit, its benchmarks, its scripts or its tests.

A name used only on a path the tests do not take fails there and nowhere else: a benchmark that
lost an import in a refactor (``bench_store``'s ``embedder_from_config``) ran no more, and an
assertion whose message names nothing would raise a NameError instead of saying what failed.
pyflakes reads every file without running it.
"""

from __future__ import annotations

from pathlib import Path

from pyflakes import api, messages

ROOT = Path(__file__).resolve().parent.parent
#: What pyflakes says of a name that is read and never bound.
UNDEFINED = (messages.UndefinedName, messages.UndefinedExport, messages.UndefinedLocal)


class _Collect:
    """A pyflakes reporter that keeps the undefined names and the files it could not read."""

    def __init__(self) -> None:
        self.found: list[str] = []

    def flake(self, message: messages.Message) -> None:
        if isinstance(message, UNDEFINED):
            self.found.append(str(message))

    def syntaxError(self, filename: str, msg: str, lineno: int, offset: int, text: str) -> None:  # noqa: N802
        self.found.append(f"{filename}:{lineno}: {msg}")

    def unexpectedError(self, filename: str, msg: str) -> None:  # noqa: N802
        self.found.append(f"{filename}: {msg}")


def test_every_name_read_is_bound():
    reporter = _Collect()
    api.checkRecursive([str(ROOT / d) for d in ("jit", "bench", "scripts", "tests")], reporter)
    assert reporter.found == []
