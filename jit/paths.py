"""Where jit finds the data files it ships: ``migrations/`` and ``rules/``.

In a checkout (editable install) they are the repository's top-level folders;
in a wheel they are bundled under ``jit/_bundled/`` (see pyproject.toml).
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["bundled_dir"]


def bundled_dir(name: str) -> Path:
    """The repository's ``name/`` folder, or the copy bundled into the wheel."""
    repo = Path(__file__).resolve().parent.parent / name
    return repo if repo.is_dir() else Path(__file__).resolve().parent / "_bundled" / name
