"""examples/harness.py end to end: real servers, real compile, the Anthropic SDK over a mocked HTTP transport.

The mock answers with real Messages API response bodies and plays a model that
wants one particular tool per shard: it calls the tool if it is among the request's
``tools``, else asks ``jit_expand_tools`` for it first, then ends its turn once the
tool's result has come back.
"""

from __future__ import annotations

import ast
import importlib.util
import itertools
import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import anthropic
import httpx2
import pytest
from conftest import REPO, write_example_config

from jit.selection.render import META_TOOL
from jit.selection.tiers import Tier

pytestmark = pytest.mark.anyio

#: Per shard: the tool the mocked model wants, its arguments, and text its result must contain.
WANTS = {
    "coder": ("workspace__search_text", {"query": "hello"}, "src/app.py"),
    "researcher": ("tracker__search_notes", {"query": "release"}, "Release plan"),
}


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def load_harness():
    spec = importlib.util.spec_from_file_location("harness_example", REPO / "examples" / "harness.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses resolve string annotations through sys.modules
    spec.loader.exec_module(module)
    return module


class MockModel:
    """An ``httpx2.MockTransport`` handler speaking the Messages API."""

    def __init__(self) -> None:
        self.requests: list[dict] = []
        self._ids = itertools.count(1)
        self._lock = threading.Lock()

    def message(self, content: list[dict], stop_reason: str) -> httpx2.Response:
        body = {
            "id": f"msg_{next(self._ids):04d}", "type": "message", "role": "assistant", "model": "claude-sonnet-4-6",
            "content": content, "stop_reason": stop_reason, "stop_sequence": None,
            "usage": {"input_tokens": 812, "output_tokens": 64},
        }
        return httpx2.Response(200, json=body, headers={"request-id": f"req_{next(self._ids)}"})

    def tool_use(self, name: str, arguments: dict) -> httpx2.Response:
        block = {"type": "tool_use", "id": f"toolu_{next(self._ids):04d}", "name": name, "input": arguments}
        return self.message([{"type": "text", "text": f"Calling {name}."}, block], "tool_use")

    def __call__(self, request: httpx2.Request) -> httpx2.Response:
        assert request.url.path == "/v1/messages" and request.method == "POST"
        body = json.loads(request.content)
        with self._lock:
            self.requests.append(body)
        shard = next(s for s in WANTS if f"the {s} agent" in body["system"])
        want, arguments, _ = WANTS[shard]
        names = [t["name"] for t in body["tools"]]
        last = body["messages"][-1]
        results = [b for b in last["content"] if b.get("type") == "tool_result"] if last["role"] == "user" \
            and isinstance(last["content"], list) else []
        called = [b for m in body["messages"] if m["role"] == "assistant" for b in m["content"]
                  if b.get("type") == "tool_use" and b["name"] == want]
        if called and results:
            return self.message([{"type": "text", "text": f"Done: {results[-1]['content'][:80]}"}], "end_turn")
        if want in names:
            return self.tool_use(want, arguments)
        meta = next(t for t in body["tools"] if t["name"] == META_TOOL)
        assert want in meta["description"], f"{want} is neither loaded nor listed for {shard}"
        return self.tool_use(META_TOOL, {"names": [want]})


def started_as_python(config: Path, fake: Path) -> str:
    """The example config's servers started as ``python`` (as the repository's config.json starts
    them), with a ``python`` first on the ``PATH`` returned that is not this interpreter: it cannot
    start an MCP server, as a system Python without the MCP SDK cannot."""
    body = json.loads(config.read_text())
    for entry in body["servers"].values():
        assert entry["command"] == sys.executable
        entry["command"] = "python"
    config.write_text(json.dumps(body))
    fake.mkdir()
    (fake / "python").write_text("#!/bin/sh\necho 'not the python that has jit' >&2\nexit 1\n")
    (fake / "python").chmod(0o755)
    return os.pathsep.join([str(fake), os.environ.get("PATH", "")])


async def test_harness_spawns_two_shards_and_calls_tools_through_jit(tmp_path, embedder, monkeypatch):
    path = write_example_config(tmp_path)
    monkeypatch.setenv("PATH", started_as_python(path, tmp_path / "bin"))  # the harness runs them on its own
    (tmp_path / "tracker.json").write_text(json.dumps({
        "notes": [{"id": 1, "title": "Release plan", "text": "Decided: ship the release on Friday after the "
                   "tests pass.", "tags": ["release"], "created_at": 0}],
        "next_note": 2,
    }))
    model = MockModel()
    client = anthropic.Anthropic(api_key="test", http_client=httpx2.Client(transport=httpx2.MockTransport(model)))
    harness = load_harness()

    runs = await harness.main(path, client, embedder=embedder)

    by_shard = {r.shard: r for r in runs}
    assert set(by_shard) == {"coder", "researcher"}
    for shard, (want, arguments, expected) in WANTS.items():
        run = by_shard[shard]
        first = next(r for r in model.requests if f"the {shard} agent" in r["system"])
        # The first request carries exactly the compiled rendering: the Full tier plus the meta-tool.
        assert first["tools"] == run.toolset.render("anthropic")
        assert first["messages"] == [{"role": "user", "content": run.task}]
        # The tool call went through the ClientManager to the real server, and its result back to the model.
        assert run.calls == [{"server": want.split("__")[0], "tool": want.split("__")[1], "arguments": arguments,
                              "is_error": False}]
        sent = [b for m in run.messages if m["role"] == "user" and isinstance(m["content"], list)
                for b in m["content"]]
        assert any(expected in b["content"] and not b["is_error"] for b in sent)
        assert run.answer.startswith("Done:") and run.failure is None


def load_deferred_harness():
    spec = importlib.util.spec_from_file_location("deferred_harness_example", REPO / "examples" / "deferred_harness.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("provider", ["anthropic", "openai"])
async def test_deferred_harness_runs_offline_and_loads_tools_without_rewriting_the_tools(tmp_path, embedder,
                                                                                          provider):
    """examples/deferred_harness.py with its scripted model: every request passed the SDK's request
    types (the harness checks before sending), a tool the compile did not send in full was found by
    jit's search and called on its real server, and the ``tools`` array only ever grew at its end."""
    path = write_example_config(tmp_path)
    (tmp_path / "tracker.json").write_text(json.dumps({
        "notes": [{"id": 1, "title": "Release plan", "text": "Decided: ship on Friday.", "tags": ["release"],
                   "created_at": 0}],
        "next_note": 2,
    }))
    harness = load_deferred_harness()
    model = harness.ScriptedModel(provider)
    # A tight budget keeps a wanted tool out of the Full tier, so it must be searched for.
    runs = await harness.main(path, harness.offline_client(provider, model), provider, embedder=embedder, budget=600)

    searched = 0
    for run in runs:
        want, arguments = harness.OFFLINE_WANTS[run.shard]
        deferred = run.toolset.get(want).tier is not Tier.FULL
        searched += deferred
        # A tool not sent in full is searched for (jit's search) and loaded; a Full one is called at once.
        assert run.searches == ([[want]] if deferred else [])
        assert run.calls == [{"server": want.split("__")[0], "tool": want.split("__")[1], "arguments": arguments,
                              "is_error": False}]
        assert run.answer == "Done."
        # The tools array only grows at its end (a tool the compile excluded is appended when
        # searched for): each request's array is a byte-identical prefix of the next one's.
        sent = [json.dumps(t) for t in run.sent]
        assert len(sent) == 2 + deferred
        assert all(later.startswith(earlier[:-1]) for earlier, later in zip(sent, sent[1:], strict=False))
    assert searched and len(model.requests) == sum(len(r.sent) for r in runs)


#: What the examples may import besides ``jit`` and the standard library: the frameworks they
#: show jit with (the MCP SDK for the example servers, the model providers' SDKs, anyio), and
#: the example servers' shared helper beside them.
EXAMPLE_FRAMEWORKS = {"anyio", "pydantic", "mcp", "anthropic", "openai", "httpx", "httpx2", "serving",
                      # examples/frameworks/: the agent frameworks and the helper the examples share there.
                      "pydantic_ai", "agents", "langchain_core", "langgraph", "langchain_anthropic", "google", "jit_agent"}


def test_the_examples_import_only_jit_itself_the_standard_library_and_their_frameworks():
    """The README says everything a harness needs is importable from ``jit``: an example reaching
    into ``jit.selection.render`` or ``jit.models`` would show otherwise. The framework adapters
    (``jit.adapters.*``) are the exception, each a public module of its own."""
    import jit

    seen: set[str] = set()
    for path in sorted((REPO / "examples").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                modules = [(a.name, None) for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module != "__future__":
                modules = [(node.module, [a.name for a in node.names])]
            else:
                continue
            for module, names in modules:
                where = f"{path.relative_to(REPO)}:{node.lineno}"
                top = module.split(".")[0]
                seen.add(top)
                if top == "jit" and module.startswith("jit.adapters."):
                    # A framework adapter is its own public module: its framework is an optional extra,
                    # so `import jit` does not load it.
                    public = importlib.import_module(module).__all__
                    assert set(names) <= set(public), f"{where}: {names} not all in {module}.__all__"
                elif top == "jit":
                    assert module == "jit", f"{where}: imports {module}, not jit itself"
                    assert not names or set(names) <= set(jit.__all__), f"{where}: {names} not all in jit.__all__"
                else:
                    assert top in sys.stdlib_module_names or top in EXAMPLE_FRAMEWORKS, f"{where}: imports {module}"
    assert "jit" in seen and "mcp" in seen


@pytest.mark.slow  # the example in its own process, with the model and the example servers
def test_the_deferred_harness_from_a_shell_runs_its_servers_on_its_python_and_says_when_calls_fail(tmp_path):
    """``python examples/deferred_harness.py --offline`` where the first ``python`` on PATH is not the
    one running it: the servers the config starts as ``python`` run on the example's interpreter. Then,
    with the tracker broken (its tools still in the catalog), the researcher's call fails: the example
    says which and why, and exits non-zero instead of printing "Done." over ``calls: []``."""
    path = write_example_config(tmp_path)
    (tmp_path / "tracker.json").write_text(json.dumps({"notes": [], "next_note": 1}))
    env = {**os.environ, "PATH": started_as_python(path, tmp_path / "bin"), "HF_HUB_OFFLINE": "1"}
    argv = [sys.executable, str(REPO / "examples" / "deferred_harness.py"), "--offline", "--config", str(path)]

    def run() -> subprocess.CompletedProcess[str]:
        return subprocess.run(argv, capture_output=True, text=True, env=env, cwd=tmp_path, timeout=300)

    done = run()
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.count("'is_error': False") == 2 and "failed" not in done.stderr

    (tmp_path / "tracker.json").write_text("[broken", encoding="utf-8")  # the tracker no longer starts
    failed = run()
    assert failed.returncode == 1, failed.stdout + failed.stderr
    lines = failed.stderr.strip().splitlines()
    assert lines[-2] == "the example failed, no tool call succeeded for", failed.stderr
    assert lines[-1].startswith("researcher: search_notes failed: ") and "server_unavailable" in lines[-1]
    assert "'is_error': True" in failed.stdout

