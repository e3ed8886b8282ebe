"""Where jit finds the data files it ships (``migrations/`` and ``rules/``), and how it
writes the files it keeps beside them (:func:`write_atomic`).

In a checkout (editable install) they are the repository's top-level folders;
in a wheel they are bundled under ``jit/_bundled/`` (see pyproject.toml).
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import BinaryIO

__all__ = ["bundled_dir", "write_atomic"]


def bundled_dir(name: str) -> Path:
    """The repository's ``name/`` folder, or the copy bundled into the wheel."""
    repo = Path(__file__).resolve().parent.parent / name
    return repo if repo.is_dir() else Path(__file__).resolve().parent / "_bundled" / name


def write_atomic(path: Path, write: Callable[[BinaryIO], object], *, durable: bool = True) -> None:
    """Write ``path`` through ``write(file)`` on a temporary file in the same directory, then
    rename it into place: a reader sees the old file or the whole new one, never half.

    ``durable`` flushes the data to disk before the rename (a crash then cannot leave a short
    file under the final name); a cache that checks what it reads may skip that. The file is
    readable by all (0644), as an ordinary write would leave it, not 0600 as ``mkstemp`` does."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            write(f)
            if durable:
                f.flush()
                os.fsync(f.fileno())
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
