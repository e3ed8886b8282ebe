"""Shared fixtures. Everything here is real: SQLite with sqlite-vec, the MiniLM model.

Test tiers: ``pytest -m "not slow"`` is the fast tier (in-process peers on the
SDK's in-memory transport, no model); the slow tier is real subprocesses and
the model. A test that asks for the model (the ``embedder`` or
``livemcpbench_store`` fixture) is marked ``slow`` here, so it cannot land in
the fast tier by accident; subprocess tests carry the mark themselves.
"""

from __future__ import annotations

import atexit
import functools
import json
import os
import re
import shutil
import signal
import tempfile
import zlib
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.pop("ANTHROPIC_API_KEY", None)
#: The session's own cache of ONNX exports (jit/embedding/onnx_cache.py), never the user's
#: ~/.cache/jit; the subprocesses tests start inherit it, so the model is exported once a session.
os.environ["JIT_CACHE_DIR"] = tempfile.mkdtemp(prefix="jit-test-cache-")
atexit.register(shutil.rmtree, os.environ["JIT_CACHE_DIR"], True)
# A suite started under nohup ignores SIGHUP, and one started in the background of a script ignores
# SIGINT; every process a test starts inherits that, and jit rightly leaves an ignored stop signal
# alone (jit/process.py; Python installs no KeyboardInterrupt for an ignored SIGINT), so the tests
# of jit's SIGHUP and Ctrl-C handling would wait for an exit that cannot come. The processes tests
# start get the default actions, as from a terminal.
if hasattr(signal, "SIGHUP") and signal.getsignal(signal.SIGHUP) is signal.SIG_IGN:
    signal.signal(signal.SIGHUP, signal.SIG_DFL)
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)

from jit.catalog.store import Store  # noqa: E402
from jit.embedding.torch_embedder import SentenceTransformerEmbedder  # noqa: E402
from jit.models import ToolDef  # noqa: E402

DATA = Path(__file__).parent / "data"
REPO = Path(__file__).resolve().parent.parent


#: Fixtures that load the embedding model: their tests are in the slow tier.
MODEL_FIXTURES = frozenset({"embedder", "livemcpbench_store"})


@pytest.hookimpl(tryfirst=True)  # before -m reads the marks
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if MODEL_FIXTURES & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.slow)


@pytest.fixture(scope="session")
def embedder() -> SentenceTransformerEmbedder:
    """The real default model, loaded once per test session (~3 s)."""
    return SentenceTransformerEmbedder()


class HashingEmbedder:
    """A deterministic stand-in for the model (jit's ``Embedder`` protocol): feature hashing of words.

    Each lower-cased word (``snake_case`` and ``camelCase`` split) adds one to a
    CRC32-chosen dimension; rows are L2-normalised. Texts sharing words are
    near, others orthogonal: enough for tests about *what* gets embedded, stored
    and ranked lexically, in microseconds and with no model to load. Semantic
    rankings (the golden selections) need the real model and stay in the slow tier.
    """

    def __init__(self, dimension: int = 384, model_name: str = "test-hashing-384") -> None:
        self._dimension = dimension
        self._name = model_name
        self.texts_embedded = 0

    @property
    def model_name(self) -> str:
        return self._name

    @property
    def dimension(self) -> int:
        return self._dimension

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        out = np.zeros((len(texts), self._dimension), dtype=np.float32)
        for row, text in enumerate(texts):
            spaced = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", " ", text)
            for word in re.findall(r"[a-z0-9]+", spaced.lower()):
                out[row, zlib.crc32(word.encode()) % self._dimension] += 1.0
            norm = np.linalg.norm(out[row])
            if norm:
                out[row] /= norm
            else:
                out[row, 0] = 1.0  # a unit vector even for a text with no words
        self.texts_embedded += len(texts)
        return out


@pytest.fixture(scope="session")
def hashing_embedder() -> HashingEmbedder:
    """The model's deterministic stand-in for the fast tier (see :class:`HashingEmbedder`)."""
    return HashingEmbedder()


@pytest.fixture
def store(tmp_path: Path):
    with Store(tmp_path / "catalog.db") as s:
        yield s


@pytest.fixture(scope="session")
def pg_cluster():
    """One throwaway PostgreSQL cluster for the session (tests/pgcluster.py), stopped and removed
    at its end; skipped only where PostgreSQL's binaries (or psycopg) are truly absent."""
    from pgcluster import Cluster, find_bindir, memory_dir

    try:
        import psycopg  # noqa: F401
    except ImportError:
        pytest.skip("psycopg is not installed (pip install -e '.[test]')")
    bindir = find_bindir()
    if bindir is None:
        pytest.skip("PostgreSQL's server binaries are absent (Debian: apt-get install postgresql; "
                    "or set JIT_PG_BINDIR); scripts/test.sh installs them where apt-get is usable")
    cluster = Cluster(bindir, parent=memory_dir()).start()
    atexit.register(cluster.stop)  # also after an interrupted session
    yield cluster
    cluster.stop()


@pytest.fixture
def pg_url(pg_cluster) -> str:
    """The URL of a fresh, empty database of the session's cluster."""
    return pg_cluster.new_database()


@pytest.fixture(params=["sqlite", "postgresql"])
def any_store(request, tmp_path: Path):
    """A fresh catalog on each backend: SQLite, then PostgreSQL (``pg_cluster``)."""
    location = tmp_path / "catalog.db" if request.param == "sqlite" else request.getfixturevalue("pg_url")
    with Store(location, local_path=tmp_path / "catalog") as s:
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


@pytest.fixture(scope="session")
def livemcpbench_store(tmp_path_factory, embedder, livemcpbench_tools):
    """The 527 LiveMCPBench tools on their 70 servers (all connected), embedded with the real
    model and analyzed by the offline analyzer; shared by the session, treat as read-only."""
    from jit.analysis.analyze import analyze_pending
    from jit.analysis.offline_analyzer import OfflineAnalyzer
    from jit.catalog.embedding_pass import embed_pending
    from jit.config import DEFAULT_SHARDS
    from jit.models import ServerStatus

    with Store(tmp_path_factory.mktemp("livemcpbench") / "catalog.db") as s:
        s.sync_catalog(livemcpbench_tools, status=ServerStatus.CONNECTED)
        embed_pending(s, embedder)
        analyze_pending(s, OfflineAnalyzer(DEFAULT_SHARDS))
        yield s


EXAMPLE_SERVERS = REPO / "examples" / "servers"


def write_example_config(directory: Path, servers: dict | None = None, **keys) -> Path:
    """A ``config.json`` in ``directory`` running the repo's example servers (examples/servers/).

    ``workspace`` is rooted at ``directory/workspace`` (created with two files),
    ``tracker`` keeps its data in ``directory/tracker.json``; the catalog is
    ``directory/catalog.db``. ``servers`` adds or replaces entries (``None``
    removes one); ``keys`` set other top-level keys.
    """
    import sys

    ws = directory / "workspace"
    (ws / "src").mkdir(parents=True, exist_ok=True)
    (ws / "README.md").write_text("# demo project\n\nA workspace for jit's tests.\n", encoding="utf-8")
    (ws / "src" / "app.py").write_text("def main():\n    return 'hello'\n", encoding="utf-8")
    entries = {
        "workspace": {"command": sys.executable, "args": [str(EXAMPLE_SERVERS / "workspace.py"), "--root", str(ws)]},
        "tracker": {"command": sys.executable,
                    "args": [str(EXAMPLE_SERVERS / "tracker.py"), "--data", str(directory / "tracker.json")]},
    }
    for name, entry in (servers or {}).items():
        if entry is None:
            entries.pop(name, None)
        else:
            entries[name] = entry
    body = {
        "servers": entries,
        "store": "catalog.db",
        "rules": str(REPO / "rules"),
        "available_tools": str(REPO / "available_tools.json"),
        "connection": {"reconnect_initial_delay": 0.05, "reconnect_max_delay": 0.3, "reconnect_attempts": 2,
                       "ping_interval": 0},
        **keys,
    }
    path = directory / "config.json"
    path.write_text(json.dumps(body, indent=2), encoding="utf-8")
    return path


def example_servers_in_process(config):
    """``config`` (a :class:`jit.config.Config`) with each entry that runs an example server
    (examples/servers/, as :func:`write_example_config` writes them) turned into that server's
    object in this process, on the SDK's in-memory transport: the same code, path argument and
    files as the process, recorded in the catalog as ``stdio`` as the process is.

    For a test's preparing sync, which only needs the catalog the servers give: each process
    costs a second of imports. What the test then drives (``jit serve``) still starts them."""
    import dataclasses

    from jit.client.transports import InProcessServerConfig
    from jit.servers_config import StdioServerConfig

    servers = dict(config.servers)
    for name, entry in config.servers.items():
        if (isinstance(entry, StdioServerConfig) and len(entry.args) == 3
                and Path(entry.args[0]).parent == EXAMPLE_SERVERS):
            server = _example_server_module(Path(entry.args[0]).stem).create_server(Path(entry.args[2]))
            servers[name] = InProcessServerConfig(server, enabled=entry.enabled, timeout=entry.timeout,
                                                  call_timeout=entry.call_timeout, transport="stdio")
    return dataclasses.replace(config, servers=servers)


@functools.cache
def _example_server_module(name: str):
    """examples/servers/NAME.py as a module (its ``serving`` helper, beside it, loaded first)."""
    import importlib.util
    import sys

    def load(module_name: str, path: Path):
        spec = importlib.util.spec_from_file_location(module_name, path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module

    if "serving" not in sys.modules:  # the example servers' `from serving import run_cli`
        sys.modules["serving"] = load("serving", EXAMPLE_SERVERS / "serving.py")
    return load(f"example_{name}", EXAMPLE_SERVERS / f"{name}.py")
