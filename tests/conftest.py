"""Shared fixtures. Everything here is real: SQLite with sqlite-vec, the MiniLM model."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.pop("ANTHROPIC_API_KEY", None)

from jit.embed import SentenceTransformerEmbedder  # noqa: E402
from jit.models import ToolDef  # noqa: E402
from jit.store import Store  # noqa: E402

DATA = Path(__file__).parent / "data"
REPO = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="session")
def embedder() -> SentenceTransformerEmbedder:
    """The real default model, loaded once per test session (~3 s)."""
    return SentenceTransformerEmbedder()


@pytest.fixture
def store(tmp_path: Path):
    with Store(tmp_path / "catalog.db") as s:
        yield s


def load_livemcpbench_tools() -> list[ToolDef]:
    """The 527 real tool definitions of LiveMCPBench (Apache-2.0, see tests/data)."""
    out = []
    for line in (DATA / "livemcpbench" / "tools.jsonl").read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        out.append(ToolDef(server=row["server"], name=row["name"], description=row.get("description") or "",
                           input_schema=row.get("input_schema") or {"type": "object", "properties": {}}))
    return out


@pytest.fixture(scope="session")
def livemcpbench_tools() -> list[ToolDef]:
    return load_livemcpbench_tools()
