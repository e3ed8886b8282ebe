"""Progress of long steps (jit/progress.py): the events the library reports, the plain lines
and the ``-q`` of ``jit sync`` through the console script, and ``jit eval`` without its
optional chart library.

Real parts throughout: SQLite catalogs, the offline analyzer, the test MCP server
(tests/servers/mutable_server.py) as a subprocess, the console script.
"""

from __future__ import annotations

import asyncio
import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import DATA, HashingEmbedder
from test_evaluate import _slice

from jit.analysis.analyze import analyze_pending
from jit.analysis.offline_analyzer import OfflineAnalyzer
from jit.catalog.embedding_pass import embed_pending
from jit.embedding.onnx_embedder import OnnxEmbedder
from jit.catalog.store import Store
from jit.config import DEFAULT_EMBEDDING_MODEL, DEFAULT_SHARDS
from jit.config_files import load_config
from jit.evaluation.eval_report import CHART_UNAVAILABLE
from jit.evaluation.evaluate import main, run_evaluation
from jit.models import ServerStatus, ToolDef
from jit.pipeline import sync
from jit.progress import ProgressBar, ProgressEvent, ProgressLines, Step, progress_display

MUTABLE = Path(__file__).parent / "servers" / "mutable_server.py"
JIT = str(Path(sys.executable).parent / "jit")
ENV = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "COLUMNS": "200"}


def _check_contract(events: list[ProgressEvent]) -> list[tuple[str, list[ProgressEvent]]]:
    """Every step's events start at 0, grow, and end with exactly one event at the total;
    a step begins only once the one before it has ended. The steps, in order."""
    steps: list[tuple[str, list[ProgressEvent]]] = []
    for e in events:
        if not steps or steps[-1][1][-1].finished:
            assert e.done == 0, f"step {e.step} does not start at 0"
            steps.append((e.step, [e]))
        else:
            assert e.step == steps[-1][0], f"step {e.step} began before {steps[-1][0]} ended"
            steps[-1][1].append(e)
    for _, evs in steps:
        # Each event counts more than the one before; only a step of unknown size may end on its count.
        assert all(a.done < b.done or (b is evs[-1] and a.total is None and a.done == b.done)
                   for a, b in zip(evs, evs[1:], strict=False)), [e.done for e in evs]
        assert evs[-1].finished and evs[-1].done == evs[-1].total
        assert all(e.total is None or e.done <= e.total for e in evs)
    assert steps[-1][1][-1].finished
    return steps


def _pool_tools(n: int) -> list[ToolDef]:
    rows = [json.loads(line) for line in (DATA / "livemcpbench" / "tools.jsonl").read_text("utf-8").splitlines()]
    return [ToolDef(server=r["server"], name=r["name"], description=r.get("description") or "",
                    input_schema=r.get("input_schema") or {"type": "object", "properties": {}}) for r in rows[:n]]


# --------------------------------------------------------------------------- the library's events


def test_step_keeps_the_contract_and_a_failed_step_has_no_end() -> None:
    events: list[ProgressEvent] = []
    with Step(events.append, "work", "working", 10, unit="items") as step:
        step.advance(3)
        step.update(2)  # not growing: not reported
        step.advance(20)  # clamped to the total, which ends the step
        step.advance()
    with Step(events.append, "open", "sizing", None) as step:
        step.advance(4)
    Step(events.append, "empty", "nothing", 0)
    steps = dict(_check_contract(events))
    assert [e.done for e in steps["work"]] == [0, 3, 10]
    assert [(e.done, e.total) for e in steps["open"]] == [(0, None), (4, None), (4, 4)]
    assert [(e.done, e.total) for e in steps["empty"]] == [(0, 0)]

    failed: list[ProgressEvent] = []
    with pytest.raises(RuntimeError), Step(failed.append, "work", "working", 5) as step:
        step.advance(2)
        raise RuntimeError("boom")
    assert [e.done for e in failed] == [0, 2] and not any(e.finished for e in failed)
    Step(None, "quiet", "no callable", 3).advance()  # no callable: nothing to call


def test_analysis_and_embedding_report_each_batch_up_to_the_total(tmp_path: Path, hashing_embedder) -> None:
    tools = _pool_tools(300)
    events: list[ProgressEvent] = []
    with Store(tmp_path / "catalog.db") as store:
        store.sync_catalog(tools, status=ServerStatus.CONNECTED)
        analyze_pending(store, OfflineAnalyzer(DEFAULT_SHARDS), batch_size=128, progress=events.append)
        embed_pending(store, hashing_embedder, chunk=100, progress=events.append)
        texts = len({t.tool.embedding_text() for t in store.tools()})
        # Nothing left: the second pass is one 0/0 step.
        embed_pending(store, hashing_embedder, progress=events.append)
    (_, analyze), (_, embed), (_, again) = _check_contract(events)
    assert [e.done for e in analyze] == [0, 128, 256, 300]
    assert analyze[0].unit == "tools" and "analyzer offline" in analyze[0].detail
    assert embed[-1].total == texts and [e.done for e in embed[1:-1]] == list(range(100, texts, 100))
    assert [(e.step, e.done, e.total) for e in again] == [("embed", 0, 0)]


class _LazyModel(HashingEmbedder):
    """The stand-in, with the load the real embedders do on first use (and the cache question)."""

    def __init__(self, exported: bool) -> None:
        super().__init__()
        self.loaded, self._exported = False, exported

    def exported(self) -> bool:
        return self._exported

    @property
    def dimension(self) -> int:
        self.loaded = True
        return super().dimension


@pytest.mark.parametrize("exported", [True, False])
def test_loading_the_model_is_a_step_of_its_own_that_names_a_first_export(tmp_path: Path, exported: bool) -> None:
    # The first sync on a machine exports the model to ONNX (~10 s): without this step it went quiet meanwhile.
    events: list[ProgressEvent] = []
    model = _LazyModel(exported)
    with Store(tmp_path / "catalog.db") as store:
        store.sync_catalog(_pool_tools(20), status=ServerStatus.CONNECTED)
        embed_pending(store, model, progress=events.append)
        store.sync_catalog(_pool_tools(30), status=ServerStatus.CONNECTED)
        embed_pending(store, model, progress=events.append)  # loaded now: no second load step
    steps = _check_contract(events)
    assert [name for name, _ in steps] == ["model", "embed", "embed"]
    load = steps[0][1]
    assert load[0].label == "loading the embedding model" and load[-1].total == 0
    assert ("exporting it to ONNX" in load[0].detail) is not exported and model.model_name in load[0].detail


def test_the_onnx_embedder_tells_a_cached_export_without_loading_anything(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("JIT_CACHE_DIR", str(tmp_path))  # an empty cache: the first load would export
    model = OnnxEmbedder()
    assert model.exported() is False and not model.loaded
    assert OnnxEmbedder(path=str(tmp_path / "no-such-model")).exported() is True  # the load will say what is wrong


@pytest.mark.slow  # a real MCP server as a subprocess
def test_sync_reports_discovery_analysis_and_embedding_in_order(tmp_path: Path, hashing_embedder) -> None:
    config = load_config(_mutable_config(tmp_path, servers=3, tools=200))
    events: list[ProgressEvent] = []
    with Store(config.store_path) as store:
        asyncio.run(sync(config, store, hashing_embedder, progress=events.append))
    steps = dict(_check_contract(events))
    assert [name for name, _ in _check_contract(events)] == ["discover", "analyze", "embed"]
    assert [e.done for e in steps["discover"]] == [0, 1, 2, 3] and steps["discover"][0].unit == "servers"
    assert steps["analyze"][-1].total == 600 and len(steps["analyze"]) == 4  # batches of 256
    assert steps["embed"][-1].total == 600 and len(steps["embed"]) == 4  # chunks of 256


# --------------------------------------------------------------------------- plain lines


def _event(done: int, elapsed: float, total: int | None = 1000, step: str = "embed") -> ProgressEvent:
    return ProgressEvent(step, "embedding", done, total, "texts", "model m", elapsed)


def test_plain_lines_start_report_every_tenth_or_interval_and_end() -> None:
    out = io.StringIO()
    lines = ProgressLines(out, "jit sync")
    for done, elapsed in ((0, 0.0), (50, 0.5), (100, 1.0), (150, 1.5), (160, 2.1), (210, 3.0),
                          (220, 8.5), (230, 9.0), (1000, 40.0)):
        lines(_event(done, elapsed))
    assert out.getvalue().splitlines() == [
        "jit sync: embedding: 1,000 texts (model m)",
        # a tenth passed, a second since the last line
        "jit sync: embedding: 100/1,000 texts (10%), 100 texts/s, 1.0s elapsed, about 9.0s left",
        "jit sync: embedding: 210/1,000 texts (21%), 70 texts/s, 3.0s elapsed, about 11.3s left",
        # no new tenth, but five seconds since the last line
        "jit sync: embedding: 220/1,000 texts (22%), 26 texts/s, 8.5s elapsed, about 30.1s left",
        "jit sync: embedding: 1,000/1,000 texts done in 40.0s (25 texts/s)",
    ]
    out.seek(0)
    out.truncate()
    lines(_event(0, 0.0, total=0))
    lines(_event(0, 0.0, total=None, step="view"))
    lines(_event(0, 2.5, total=0, step="view"))
    assert out.getvalue().splitlines() == ["jit sync: embedding: nothing to do (model m)",
                                           "jit sync: embedding: started (model m)",
                                           "jit sync: embedding: done in 2.5s"]


def test_plain_lines_show_control_characters_as_escapes() -> None:
    out = io.StringIO()
    ProgressLines(out, "jit")(ProgressEvent("x", "label\x1b[31m", 0, 0, "", "detail\u202e"))
    assert out.getvalue() == "jit: label\\x1b[31m: nothing to do (detail\\u202e)\n"


def test_a_terminal_gets_one_bar_per_step_with_count_and_rate() -> None:
    from rich.console import Console

    screen = io.StringIO()
    console = Console(file=screen, force_terminal=True, width=160, color_system=None)
    with progress_display(console, prefix="jit sync") as progress:
        assert isinstance(progress, ProgressBar)
        progress(_event(0, 0.0))
        progress(_event(500, 1.0))
        progress(_event(1000, 2.0))
        progress(ProgressEvent("view", "preparing [the] view", 0, None))
        progress(ProgressEvent("view", "preparing [the] view", 0, 0, elapsed=0.5))
    bars = [line for line in screen.getvalue().splitlines() if "embedding (model m)" in line]
    assert bars and "1,000/1,000 100%" in bars[-1] and "500 texts/s" in bars[-1]
    views = [line for line in screen.getvalue().splitlines() if "preparing [the] view" in line]  # not markup
    assert views and "/" not in views[-1] and "%" not in views[-1]  # no count for a step of unknown size
    with progress_display(console, quiet=True) as progress:
        assert progress is None


# --------------------------------------------------------------------------- jit sync


def _mutable_config(base: Path, *, servers: int, tools: int) -> Path:
    """``servers`` test MCP servers (tests/servers/mutable_server.py), each listing ``tools`` tools."""
    entries = {}
    for i in range(servers):
        spec = base / f"spec{i}.json"
        spec.write_text(json.dumps({"tools": [
            {"name": f"tool_{k}", "description": f"Does thing number {k} of server {i} with files and issues.",
             "inputSchema": {"type": "object", "properties": {"path": {"type": "string"}}}} for k in range(tools)
        ]}), encoding="utf-8")
        entries[f"srv{i}"] = {"command": sys.executable,
                              "args": [str(MUTABLE), "--spec", str(spec), "--calls", str(base / f"calls{i}.jsonl")]}
    (base / "available_tools.json").write_text('{"tools": []}', encoding="utf-8")
    path = base / "config.json"
    path.write_text(json.dumps({"servers": entries, "store": "catalog.db", "available_tools": "available_tools.json"}),
                    encoding="utf-8")
    return path


@pytest.mark.slow  # the console script, the model, real MCP servers
def test_jit_sync_writes_plain_progress_lines_off_a_terminal_and_q_silences_them(tmp_path: Path) -> None:
    path = _mutable_config(tmp_path, servers=2, tools=30)
    synced = subprocess.run([JIT, "sync", "-c", str(path)], capture_output=True, text=True, env=ENV, timeout=300)
    assert synced.returncode == 0, synced.stderr
    err = synced.stderr.splitlines()
    assert err[0] == "jit sync: discovering tools: 2 servers"
    for line in ("jit sync: discovering tools: 2/2 servers done in ",
                 "jit sync: analyzing: 60/60 tools done in ",
                 "jit sync: embedding: 60/60 texts done in ",
                 "jit sync: preparing the compiled view: done in "):
        assert any(x.startswith(line) for x in err), (line, err)
    assert "jit sync: analyzing: 60 tools (analyzer offline)" in err
    assert f"jit sync: embedding: 60 texts (model {DEFAULT_EMBEDDING_MODEL})" in err
    load = [i for i, x in enumerate(err) if x.startswith("jit sync: loading the embedding model: started (model ")]
    assert len(load) == 1 and err[load[0] + 1].startswith("jit sync: loading the embedding model: done in ")
    assert "│ srv0" in synced.stdout  # the summary table is on stdout

    (tmp_path / "spec1.json").write_text(json.dumps({"tools": [
        {"name": "fresh", "description": "A new tool.", "inputSchema": {"type": "object"}}]}), encoding="utf-8")
    quiet = subprocess.run([JIT, "sync", "-q", "-c", str(path)], capture_output=True, text=True, env=ENV, timeout=300)
    assert quiet.returncode == 0 and quiet.stderr == ""
    assert "│ srv1" in quiet.stdout and "embedding: 1 embedded" in quiet.stdout


# --------------------------------------------------------------------------- jit eval without matplotlib


def test_an_evaluation_without_matplotlib_writes_its_results_and_says_why_there_is_no_chart(
        tmp_path: Path, hashing_embedder, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # `import matplotlib` now fails
    spec = _slice(tmp_path)
    out = tmp_path / "out"
    (out / "slice.png").parent.mkdir()
    (out / "slice.png").write_bytes(b"an earlier run's chart")
    events: list[ProgressEvent] = []
    report = run_evaluation(spec, data_dir=tmp_path / "data", out_dir=out, embedder=hashing_embedder,
                            cache_dir=tmp_path / "cache", progress=events.append)
    assert report.skipped == [CHART_UNAVAILABLE]
    assert json.loads((out / "slice.json").read_text("utf-8"))["methods"] == report.methods
    assert "skipped" not in json.loads((out / "slice.json").read_text("utf-8"))
    md = (out / "slice.md").read_text("utf-8")
    assert "| bm25 |" in md and ".png" not in md
    assert not (out / "slice.png").exists()
    steps = _check_contract(events)
    assert [name for name, _ in steps][:3] == ["embed", "analyze", "eval.embed"]
    assert [e.label for e in events if e.finished][3:] == ["baseline climpt", "baseline bm25", "baseline dense",
                                                           "jit rank", "compile() for shard researcher"]
    assert all(e.total == 5 for e in events if e.step.startswith(("eval.baseline", "eval.rank", "eval.compile")))


@pytest.mark.slow  # the evaluator's own model
def test_jit_eval_without_matplotlib_ends_with_one_note_not_a_traceback(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    _slice(tmp_path)
    folder = tmp_path / "data" / "slice"
    argv = ["slice", "--tools", str(folder / "tools.jsonl"), "--queries", str(folder / "queries.jsonl"),
            "--out", str(tmp_path / "out"), "--cache-dir", str(tmp_path / "cache")]
    assert main(argv) == 0
    captured = capsys.readouterr()
    assert "### slice" in captured.out
    assert f"slice: {CHART_UNAVAILABLE}" in captured.err.splitlines()
    assert "Traceback" not in captured.err
    assert "jit eval: compile() for shard researcher: 5/5 queries done in " in captured.err
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["slice.json", "slice.md"]

    assert main([*argv, "-q"]) == 0
    assert capsys.readouterr().err == f"slice: {CHART_UNAVAILABLE}\n"
