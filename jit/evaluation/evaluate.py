"""Selection quality on public benchmark data: jit's ranking and compile() beside plain baselines.

One run loads a tool pool (one or more ``tools.jsonl``) and a ``queries.jsonl``, builds
(or reuses) a jit catalog of the pool under ``.jit/eval/<dataset>.db``, and measures on
the same pool and the same queries:

* the baselines of :mod:`jit.evaluation.baselines` (climpt, bm25, dense) and "all tools in the prompt";
* jit's own retrieval ranking (``Compiler.rank``) with the same ranking metrics;
* jit's ``compile()``: gold groups recalled in the Full tier, in Full + Condensed, in
  any tier, and the tokens of the rendering, per shard.

Metrics follow the reference measurement of docs/quality.md: a query's gold is a list of *groups* (``gold_groups``,
or each ``gold`` item its own group); a group is recalled when any member is selected.
R@k is the share of a query's groups with a member in the top k; Hit@1 whether the
first tool is in some group; MRR 1 / rank of the first tool in any group; nDCG@10 uses
binary gain where each group counts once, at the rank of its first retrieved member,
with ideal ``min(#groups, 10)``. Queries with empty gold are skipped and counted.

Every number of a report comes from one run on one machine, so each comparison is a
ratio of two measured numbers. ``python -m jit.evaluation.evaluate livemcpbench`` (or ``jit eval``)
writes ``<out>/<dataset>.md``, ``.json`` and ``.png``.
"""

from __future__ import annotations

import json
import logging
import os
import statistics
import sys
import time
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
from rich.console import Console

from ..analysis.offline_analyzer import OfflineAnalyzer
from ..catalog.embedding_pass import embed_pending, embed_through_cache
from ..catalog.store import Store
from ..catalog.store_tools import text_hash
from ..config import AvailableTools, Config, EmbeddingConfig
from ..config_files import load_config
from ..embedding.factory import embedder_from_config
from ..embedding.protocol import Embedder
from ..errors import EvaluationError, JitError
from ..models import HARNESS_SERVER, ServerStatus, ToolDef
from ..pipeline import sync_harness_tools
from ..progress import ProgressCallback, Step, progress_display
from ..selection.compiler import Compiler
from ..selection.task import TaskContext
from ..selection.tiers import Tier
from .baselines import (
    CHARS_PER_TOKEN,
    CURVE_KS,
    BM25Ranker,
    ClimptRanker,
    DenseRanker,
    MethodResult,
    Ranker,
    TieBreak,
    base_text,
    definition_chars,
    list_chars,
)
from .datasets import (
    DATASETS,
    DatasetSpec,
    EvalQuery,
    Pool,
    _resolve,
    check_data,
    default_data_dir,
    load_pool,
    load_queries,
)
from .eval_report import EvalReport, machine_info
from .replay import CURVE, replay, replay_markdown

__all__ = ["build_catalog", "compared_model", "main", "run_evaluation", "run_replay", "write_quality_doc"]

# Named explicitly: under `python -m jit.evaluation.evaluate` __name__ is "__main__".
log = logging.getLogger("jit.evaluation.evaluate")

#: Shard used for compile() when none is named: the benchmark tasks are general
#: research-and-produce tasks, closest to the default "researcher" role.
DEFAULT_SHARDS = ("researcher",)
#: Tools per call of the analyzer when analyzing the catalog (one progress event each).
ANALYZE_BATCH = 256


# --------------------------------------------------------------------------- the catalog


def build_catalog(pool: Pool, path: Path, config: Config, embedder: Embedder, *,
                  analyzer: Any | None = None, progress: ProgressCallback | None = None) -> Store:
    """Open (or create) the catalog at ``path`` and make it hold exactly the pool (plus the
    config's harness tools), every server connected, every tool embedded, and analyzed
    by ``analyzer`` when given. Unchanged tools are neither rewritten nor re-embedded,
    so a second run is quick. ``progress`` hears of the steps ``embed`` and ``analyze``."""
    store = Store(path)
    try:
        servers = {t.server for t in pool.tools}
        for rec in store.servers():
            if rec.name not in servers and rec.name != HARNESS_SERVER:
                store.remove_server(rec.name)
        # Benchmark servers are not running; marked connected so selection treats
        # them as any live server (offline tools may be ranked differently).
        store.sync_catalog(pool.tools, status=ServerStatus.CONNECTED)
        # Harness tools of a user config take part as in `jit sync` (none by default).
        sync_harness_tools(store, config)
        embed_pending(store, embedder, progress=progress)
        if analyzer is not None:
            # Every tool, every run: analyses are cached by definition hash alone, so a
            # change of the analyzer's code or of the shards would otherwise leave the
            # cached catalog with stale analyses. The offline analyzer takes ~2 ms a tool.
            tools = store.tools()
            fresh = []
            with Step(progress, "analyze", "analyzing", len(tools), unit="tools",
                      detail=f"analyzer {analyzer.name}") as step:
                for i in range(0, len(tools), ANALYZE_BATCH):
                    fresh += analyzer.analyze([st.tool for st in tools[i : i + ANALYZE_BATCH]])
                    step.update(len(fresh))
            stale = [(st.definition_hash, a) for st, a in zip(tools, fresh, strict=True) if st.analysis != a]
            if stale:
                log.info("storing %d new or changed offline analyses", len(stale))
                store.put_analyses(stale)
    except BaseException:
        store.close()
        raise
    return store


def base_vectors(store: Store, embedder: Embedder, texts: Sequence[str], *,
                 progress: ProgressCallback | None = None) -> np.ndarray:
    """Embeddings of the baseline texts, through the catalog's content-hash cache
    (``progress`` hears of the step ``eval.embed``)."""
    hashes = [text_hash(t) for t in texts]
    text_of = dict(zip(hashes, texts, strict=True))
    vectors = embed_through_cache(store, embedder, text_of, progress=progress,
                                  step=("eval.embed", "embedding baseline texts"))
    return np.stack([np.frombuffer(vectors[h], dtype=np.float32) for h in hashes])


# --------------------------------------------------------------------------- the run


def _tooldef(item: Any) -> ToolDef:
    """The ToolDef inside a ``(StoredTool, score)`` pair (jit's ranking) or a ScoredTool (compile)."""
    if isinstance(item, tuple):
        item = item[0]
    while not isinstance(item, ToolDef):
        item = item.tool
    return item


def _tools_of(items: Sequence[Any]) -> list[tuple[str, str]]:
    return [(t.server, t.name) for t in map(_tooldef, items)]


def _render_chars(rendered: Any) -> int:
    text = rendered if isinstance(rendered, str) else json.dumps(rendered, ensure_ascii=False,
                                                                  separators=(",", ":"), default=str)
    return len(text)


#: The public sets' tasks are not scoped to a role (a LiveMCPBench task run as "researcher" may
#: write a PDF or send mail), so the default evaluation grants every shard what the read-only
#: policy withholds: these sets measure selection; least privilege is measured on the labelled
#: roles set (bench/eval_roles.py, docs/quality.md). A config passed in is used as it is.
UNSCOPED_GRANTS = ("capability:/write", "capability:/delete", "capability:/send", "capability:/execute",
                   "annotation:destructiveHint")


def unscoped_config() -> Config:
    """Every default, no harness tools (the pool is the benchmark's tools only), and every shard
    granted what the read-only policy withholds (:data:`UNSCOPED_GRANTS`)."""
    default = Config.default()
    return replace(default, available_tools=AvailableTools(),
                   shards={name: sc.model_copy(update={"allow": [*sc.allow, *UNSCOPED_GRANTS]})
                           for name, sc in default.shards.items()})


def _dataset(dataset: str | DatasetSpec, data_dir: Path | None) -> tuple[DatasetSpec, Path]:
    """The set named (or given) and its data directory, its files checked."""
    spec = dataset if isinstance(dataset, DatasetSpec) else DATASETS.get(dataset)
    if spec is None:
        raise EvaluationError(f"unknown dataset {dataset!r}; known: {', '.join(DATASETS)}")
    data_dir = Path(data_dir) if data_dir is not None else default_data_dir()
    check_data(spec, data_dir)
    return spec, data_dir


def run_replay(dataset: str | DatasetSpec, *, data_dir: Path | None = None, out_dir: Path | None = None,
               config: Config | None = None, sample: int | None = None, shards: Sequence[str] = DEFAULT_SHARDS,
               embedder: Embedder | None = None, cache_dir: Path | None = None, folds: int = 4,
               progress: ProgressCallback | None = None) -> dict[str, Any]:
    """The learning curve of one set (:mod:`jit.evaluation.replay`) per shard, on the set's cached
    catalog; written to ``<out_dir>/<name>-replay.json`` and ``.md`` when ``out_dir`` is given."""
    spec, data_dir = _dataset(dataset, data_dir)
    config = config or unscoped_config()
    pool = load_pool([_resolve(data_dir, f) for f in spec.tools])
    queries, _skipped, _kind = load_queries(_resolve(data_dir, spec.queries), pool,
                                            sample=sample if sample is not None else spec.sample)
    embedder = embedder or embedder_from_config(config.embedding)
    cache = Path(cache_dir) if cache_dir is not None else config.store_path.parent / "eval"
    store = build_catalog(pool, cache / f"{spec.name}.db", config, embedder,
                          analyzer=OfflineAnalyzer(config.shards), progress=progress)
    started = time.perf_counter()
    result: dict[str, Any] = {"dataset": spec.name, "folds": folds, "queries": len(queries), "curves": {}}
    try:
        for shard in shards:
            with Step(progress, "eval.replay", f"replay for shard {shard}", len(queries) * len(CURVE),
                      unit="queries") as step:
                result["curves"][shard] = replay(store, config, embedder, pool, queries, shard=shard, folds=folds,
                                                 advance=step.advance)
    finally:
        store.close()
    result["seconds"] = time.perf_counter() - started
    result["machine"] = machine_info()
    result["markdown"] = "\n\n".join(replay_markdown(spec.name, shard, folds, rows)
                                      for shard, rows in result["curves"].items())
    if out_dir is not None:
        Path(out_dir).mkdir(parents=True, exist_ok=True)
        (Path(out_dir) / f"{spec.name}-replay.json").write_text(json.dumps(result, indent=1), encoding="utf-8")
        (Path(out_dir) / f"{spec.name}-replay.md").write_text(result["markdown"] + "\n", encoding="utf-8")
    return result


def run_evaluation(
    dataset: str | DatasetSpec,
    *,
    data_dir: Path | None = None,
    out_dir: Path | None = None,
    config: Config | None = None,
    sample: int | None = None,
    shards: Sequence[str] = DEFAULT_SHARDS,
    embedder: Embedder | None = None,
    cache_dir: Path | None = None,
    include_jit: bool = True,
    progress: ProgressCallback | None = None,
    compare: Embedder | None = None,
    compare_rerank: bool = False,
) -> EvalReport:
    """Evaluate jit and the baselines on one dataset; write ``<out_dir>/<name>.{md,json,png}``.

    ``dataset`` is a name from :data:`DATASETS` or a :class:`DatasetSpec`. ``config``
    (default: every default, no harness tools) sets the selection weights, thresholds
    and token budget; ``shards`` are the roles compile() is run for. The catalog is
    cached at ``<cache_dir>/<name>.db`` (default: ``.jit/eval`` beside the config's store).
    ``include_jit=False`` measures the baselines only. ``progress`` (:mod:`jit.progress`)
    hears of each long step: the catalog's embedding and analysis, the baseline texts'
    embedding, then per query each baseline (``eval.baseline``), jit's ranking
    (``eval.rank``) and compile() per shard (``eval.compile``). ``compare``: a second embedding
    model measured in the same run (its own catalog, ``<name>.<model>.db``): the dense baseline,
    jit's ranking and compile() again, their rows marked ``[<model>]``. ``compare_rerank``: jit's
    ranking and compile() also with ``tool_selection.rerank`` the other way (the first model's
    catalog), their rows marked ``[rerank model]`` or ``[rerank off]``.
    """
    spec, data_dir = _dataset(dataset, data_dir)
    config = config or unscoped_config()
    unknown = [s for s in shards if s not in config.shards]
    if unknown:
        raise EvaluationError(f"unknown shard(s) {unknown}; the config defines {sorted(config.shards)}")
    started = time.perf_counter()
    pool = load_pool([_resolve(data_dir, f) for f in spec.tools])
    queries, skipped, gold_kind = load_queries(_resolve(data_dir, spec.queries), pool,
                                               sample=sample if sample is not None else spec.sample)
    log.info("%s: %d tools / %d servers, %d queries (%d skipped for empty gold)",
             spec.name, len(pool.tools), pool.servers, len(queries), skipped)
    embedder = embedder or embedder_from_config(config.embedding)
    cache = Path(cache_dir) if cache_dir is not None else config.store_path.parent / "eval"
    budget = config.tool_selection.token_budget
    def_chars = np.array([definition_chars(t) for t in pool.tools], dtype=np.int64)
    texts = [q.text for q in queries]

    analyzer = None
    if include_jit:
        # The offline analyzer, whatever the config says: results must not depend on an API key.
        analyzer = OfflineAnalyzer(config.shards)
    tiebreak = TieBreak(len(pool.tools))
    base = [base_text(t) for t in pool.tools]
    methods: list[MethodResult] = []
    compiles: list[dict[str, Any]] = []
    runs = [(embedder, cache / f"{spec.name}.db", "")]
    if compare is not None:
        # Its own catalog: a catalog's vectors are one model's (a change of model re-embeds it).
        runs.append((compare, cache / f"{spec.name}.{compare.model_name}.db", f" [{compare.model_name}]"))
    for model, db, label in runs:
        store = build_catalog(pool, db, config, model, analyzer=analyzer, progress=progress)
        compiler = None
        try:
            dense = DenseRanker(base_vectors(store, model, base, progress=progress), model)
            if not methods:  # the lexical baselines once, after the first catalog is ready
                methods += [_run_baseline(ranker, queries, texts, tiebreak, def_chars, budget, progress)
                            for ranker in (ClimptRanker(base), BM25Ranker(base))]
            methods.append(_run_baseline(dense, queries, texts, tiebreak, def_chars, budget, progress, label))
            if include_jit:
                compiler = Compiler(store, config, model)
                methods.append(_run_rank(compiler, queries, pool, def_chars, budget, progress, label))
                compiles += [_run_compile(compiler, shard, queries, pool, progress, label) for shard in shards]
                if compare_rerank and not label:
                    compiler.close()
                    other = "off" if config.tool_selection.rerank == "model" else "model"
                    flipped = replace(config, tool_selection=config.tool_selection.model_copy(update={"rerank": other}))
                    compiler = Compiler(store, flipped, model)
                    methods.append(_run_rank(compiler, queries, pool, def_chars, budget, progress, f" [rerank {other}]"))
                    compiles += [_run_compile(compiler, shard, queries, pool, progress, f" [rerank {other}]")
                                 for shard in shards]
        finally:
            if compiler is not None:
                compiler.close()
            store.close()

    report = EvalReport(
        dataset=spec.name,
        description=spec.description,
        pool={"tools": len(pool.tools), "servers": pool.servers, "files": [_display(f, data_dir) for f in pool.files],
              "duplicates_dropped": pool.duplicates_dropped},
        queries={"file": _display(str(_resolve(data_dir, spec.queries)), data_dir), "scored": len(queries),
                 "skipped_empty_gold": skipped, "gold": gold_kind,
                 "sample": sample if sample is not None else spec.sample},
        all_tools={"chars": list_chars(def_chars), "tokens": list_chars(def_chars) / CHARS_PER_TOKEN},
        methods=[m.summary() for m in methods],
        compile=compiles,
        selection=config.tool_selection.model_dump(),
        notes=([] if include_jit else ["baselines only: jit's ranking and compile() were not run"])
        + ([f"embedding model {embedder.model_name}; rows marked [{compare.model_name}] use {compare.model_name}"]
           if compare is not None else []),
        per_query=_per_query(queries, methods, compiles),
        machine=machine_info(),
        seconds=time.perf_counter() - started,
    )
    if out_dir is not None:
        report.write(Path(out_dir))
    return report


def _display(path: str, data_dir: Path) -> str:
    try:
        return str(Path(path).relative_to(data_dir))
    except ValueError:
        return str(path)


def _run_baseline(ranker: Ranker, queries: Sequence[EvalQuery], texts: Sequence[str], tiebreak: TieBreak,
                  def_chars: np.ndarray, budget: int, progress: ProgressCallback | None = None,
                  label: str = "") -> MethodResult:
    """One baseline's ranking of every query (``label`` marks a compared model's rows)."""
    result = MethodResult(ranker.name + label, "baseline")
    t0 = time.perf_counter()
    with Step(progress, "eval.baseline", f"baseline {ranker.name}{label}", len(queries), unit="queries") as step:
        for q, scores in zip(queries, ranker.scores(texts), strict=True):
            order = tiebreak.order(scores)
            result.add(order.tolist(), q.groups, def_chars[order], budget)
            step.advance()
    result.seconds = time.perf_counter() - t0
    return result


def _run_rank(compiler: Any, queries: Sequence[EvalQuery], pool: Pool, def_chars: np.ndarray,
              budget: int, progress: ProgressCallback | None = None, label: str = "") -> MethodResult:
    """jit's retrieval ranking (``Compiler.rank``) to the deepest curve depth."""
    depth = min(max(CURVE_KS), len(pool.tools))
    result = MethodResult("jit rank" + label, "jit", depth=depth)
    t0 = time.perf_counter()
    step = Step(progress, "eval.rank", "jit rank", len(queries), unit="queries")
    for q in queries:
        ranked = compiler.rank(q.text, k=depth)
        # A tool outside the pool (a harness tool of a user config) cannot be gold: -1
        # keeps its place in the ranking without matching any group.
        order = [pool.index.get(key, -1) for key in _tools_of(ranked)]
        chars = np.array([def_chars[i] if i >= 0 else definition_chars(_tooldef(st))
                          for i, st in zip(order, ranked, strict=True)], dtype=np.int64)
        result.add(order, q.groups, chars, budget)
        step.advance()
    result.seconds = time.perf_counter() - t0
    step.end()
    return result


def _run_compile(compiler: Any, shard: str, queries: Sequence[EvalQuery], pool: Pool,
                 progress: ProgressCallback | None = None, label: str = "") -> dict[str, Any]:
    """compile() once per query: the best tier each gold group reaches, and the cost."""
    sent = (Tier.FULL, Tier.CONDENSED, Tier.MINIMAL)
    tiers_per_query: list[list[str | None]] = []
    tokens_used, render_tokens, ms = [], [], []
    counts: dict[str, list[int]] = {t.value: [] for t in sent}
    budget = None
    step = Step(progress, "eval.compile", f"compile() for shard {shard}{label}", len(queries), unit="queries")
    for q in queries:
        t0 = time.perf_counter()
        ts = compiler.compile(TaskContext(shard=shard, task=q.text))
        ms.append(1000.0 * (time.perf_counter() - t0))
        budget = ts.budget
        best: dict[int, int] = {}  # pool index -> best tier rank (0 = Full)
        for scored in ts.tools:
            idx = pool.index.get((scored.server, scored.tool_name))
            if scored.tier in sent and idx is not None:
                best[idx] = min(scored.tier.rank, best.get(idx, scored.tier.rank))
        levels = [min((best[m] for m in g if m in best), default=None) for g in q.groups]
        tiers_per_query.append([None if lv is None else sent[lv].value for lv in levels])
        tokens_used.append(ts.tokens_used)
        render_tokens.append(_render_chars(ts.render("anthropic")) / CHARS_PER_TOKEN)
        for t in sent:
            counts[t.value].append(len(ts.tier(t)))
        step.advance()
    step.end()

    def recalled(*names: str) -> float:
        return statistics.fmean(sum(t in names for t in tiers) / len(tiers) for tiers in tiers_per_query)

    return {
        "shard": shard + label,
        "budget": budget,
        "recall_full": recalled("full"),
        "recall_full_condensed": recalled("full", "condensed"),
        "recall_any": recalled("full", "condensed", "minimal"),
        "tokens_used": statistics.fmean(tokens_used),
        "render_tokens": statistics.fmean(render_tokens),
        "tools": {name: statistics.fmean(v) for name, v in counts.items()},
        "p50_ms": statistics.median(ms),
        "p95_ms": float(np.percentile(ms, 95)),
        "tiers_per_query": tiers_per_query,
    }


def _per_query(queries: Sequence[EvalQuery], methods: Sequence[MethodResult],
               compiles: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Enough per query to recompute every metric: first-hit rank per group per method."""
    out = []
    for i, q in enumerate(queries):
        row: dict[str, Any] = {"id": q.id, "groups": len(q.groups),
                               "first_ranks": {m.name: m.ranks[i] for m in methods}}
        if compiles:
            row["compile_tiers"] = {c["shard"]: c["tiers_per_query"][i] for c in compiles}
        out.append(row)
    for c in compiles:
        del c["tiers_per_query"]
    return out


# --------------------------------------------------------------------------- machine


GENERATED_BEGIN = "<!-- BEGIN GENERATED by `python -m jit.evaluation.evaluate`; edit the text outside these markers -->"
GENERATED_END = "<!-- END GENERATED -->"


def write_quality_doc(path: Path, results_dir: Path) -> Path:
    """Collect every ``<dataset>.json`` report in ``results_dir`` into ``path``.

    Only the part between the GENERATED markers is rewritten, so a hand-written
    introduction above (and notes below) survive regeneration.
    """
    reports = []
    for f in sorted(results_dir.glob("*.json")):
        data = json.loads(f.read_text(encoding="utf-8"))
        if isinstance(data, dict) and {"dataset", "methods", "pool"} <= data.keys():
            reports.append(EvalReport.from_json(data))
    if not reports:
        raise EvaluationError(f"no evaluation results (<dataset>.json) in {results_dir}", path=str(results_dir))
    known = list(DATASETS)
    reports.sort(key=lambda r: (known.index(r.dataset) if r.dataset in known else len(known), r.dataset))
    m = reports[0].machine
    body = [GENERATED_BEGIN, "",
            f"Machine: {m.get('cpu')}, {m.get('cores')} cores, {m.get('ram_gib')} GiB RAM, Python {m.get('python')}, "
            f"{m.get('os')}; " + ", ".join(f"{k} {v}" for k, v in m.get("packages", {}).items()) + ".", ""]
    for r in reports:
        png = results_dir / f"{r.dataset}.png"
        chart = os.path.relpath(png, path.parent) if png.exists() else None
        body += [r.markdown(chart=chart), ""]
    body.append(GENERATED_END)
    generated = "\n".join(body)
    old = path.read_text(encoding="utf-8") if path.exists() else ""
    if GENERATED_BEGIN in old and GENERATED_END in old:
        head, rest = old.split(GENERATED_BEGIN, 1)
        text = head + generated + rest.split(GENERATED_END, 1)[1]
    else:
        text = (old or "# Selection quality\n\n") + ("\n" if old and not old.endswith("\n") else "") + generated + "\n"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def compared_model(embedding: EmbeddingConfig, model: str) -> EmbeddingConfig:
    """The embedding settings of ``--compare-model``: ``model`` is a sentence-transformers model
    directory (a model ``bench.train_retriever`` wrote, named by its directory), else a name as
    ``embedding.model`` takes."""
    local = Path(model)
    named = {"model": local.name, "path": str(local)} if local.is_dir() else {"model": model, "path": None}
    return embedding.model_copy(update=named)


def main(argv: Sequence[str] | None = None, *, raise_errors: bool = False,
         prog: str = "python -m jit.evaluation.evaluate") -> int:
    """``python -m jit.evaluation.evaluate DATASET... [options]``; ``all`` runs every dataset.

    A usage mistake (an unknown dataset or shard, a bad ``--sample``, half of your own set) is
    argparse's error: the usage line and exit code 2. A jit error is one line on stderr and exit
    code 2; with ``raise_errors`` it is raised instead, for ``jit eval`` (``prog``), which reports it
    with the exit code docs/cli.md gives its class."""
    import argparse

    parser = argparse.ArgumentParser(prog=prog, description=__doc__.split("\n\n")[0])
    parser.add_argument("datasets", nargs="+", metavar="DATASET",
                        help=f"one of {', '.join(DATASETS)}, or 'all'; with --queries, the name of your own set")
    parser.add_argument("--tools", type=Path, action="append", help="a tools.jsonl of your own pool; repeatable")
    parser.add_argument("--queries", type=Path, help="the queries.jsonl scored against --tools")
    parser.add_argument("--data-dir", type=Path, help="benchmark data (default: $JIT_DATA_DIR, else ../shared/data)")
    parser.add_argument("--out", type=Path, default=Path("docs/eval"), help="where <dataset>.md/.json/.png go")
    parser.add_argument("--config", type=Path, help="config.json for weights, thresholds, budget, shards "
                        "(default: built-in defaults, no harness tools)")
    parser.add_argument("--sample", type=int, help="score only this many queries (fixed random sample)")
    parser.add_argument("--shard", action="append", dest="shards", help="shard for compile(); repeatable "
                        f"(default: {', '.join(DEFAULT_SHARDS)})")
    parser.add_argument("--cache-dir", type=Path, help="where catalogs are cached (default: .jit/eval)")
    parser.add_argument("--baselines-only", action="store_true", help="skip jit's ranking and compile()")
    parser.add_argument("--replay", action="store_true",
                        help="measure learning instead: record the gold tools of a share of the queries as calls, "
                             "measure on the others (0, 10%%, 25%%, 50%% recorded; --folds)")
    parser.add_argument("--folds", type=int, default=4, help="--replay: the number of folds (default 4)")
    parser.add_argument("--compare-model", metavar="MODEL",
                        help="also measure this embedding model in the same run: a name as embedding.model takes, "
                             "or a sentence-transformers model directory")
    parser.add_argument("--compare-rerank", action="store_true",
                        help="also measure jit's ranking and compile() with tool_selection.rerank the other way")
    parser.add_argument("--quality", type=Path, help="also collect every result in --out into this Markdown file")
    parser.add_argument("-q", "--quiet", action="store_true",
                        help="no progress on stderr (a bar on a terminal, a line every few seconds otherwise)")
    args = parser.parse_args(argv)
    # Usage mistakes are argparse's: its usage line and exit code 2, as for an unknown option
    # (`jit eval` documents 2 as bad usage; an error reading data or the model stays a jit error).
    if args.sample is not None and args.sample < 1:
        parser.error("--sample must be a positive number of queries")
    if args.folds < 2:
        parser.error("--folds must be at least 2")
    if bool(args.tools) != bool(args.queries) or (args.queries and len(args.datasets) != 1):
        parser.error("your own set needs --tools (one or more), --queries and exactly one DATASET name")
    unknown = [d for d in args.datasets if d != "all" and d not in DATASETS]
    if unknown and not args.queries:
        parser.error(f"unknown dataset {unknown[0]!r}; known: {', '.join(DATASETS)}, all "
                     "(or your own set: --tools and --queries)")
    console = Console(stderr=True)
    handler: logging.Handler | None = None
    if not args.quiet:
        # Messages from jit only: the model loader and bm25s log their own chatter at INFO. On a
        # terminal they go through rich, above the progress bars, not through them.
        if console.is_terminal:
            from rich.logging import RichHandler

            handler = RichHandler(console=console, show_time=False, show_level=False, show_path=False)
        else:
            handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("%(message)s"))
        logging.getLogger("jit").addHandler(handler)
        logging.getLogger("jit").setLevel(logging.INFO)
    names: list[str | DatasetSpec] = list(DATASETS) if args.datasets == ["all"] else list(args.datasets)
    try:
        if args.queries:
            pools = tuple(str(t.resolve()) for t in args.tools)
            names = [DatasetSpec(str(names[0]), pools, str(args.queries.resolve()))]
        config = load_config(args.config) if args.config else None
        shards = (config or Config.default()).shards
        if args.shards and (unknown := [s for s in args.shards if s not in shards]):
            parser.error(f"unknown shard(s) {unknown}; the config defines {sorted(shards)}")
        for name in names:  # missing data is said before the model loads, not minutes later
            spec = name if isinstance(name, DatasetSpec) else DATASETS.get(name)
            if spec is not None:
                check_data(spec, args.data_dir if args.data_dir is not None else default_data_dir())
        # One model load for all datasets.
        embedding = (config or Config.default()).embedding
        embedder = embedder_from_config(embedding)
        compare = None
        if args.compare_model:
            if args.compare_model == embedding.model and embedding.path is None:
                parser.error(f"--compare-model {args.compare_model} is the model the run measures already")
            compare = embedder_from_config(compared_model(embedding, args.compare_model))
        for name in names:
            if args.replay:
                with progress_display(console, prefix="jit eval", quiet=args.quiet) as progress:
                    found = run_replay(name, data_dir=args.data_dir, out_dir=args.out, config=config,
                                       sample=args.sample, shards=args.shards or DEFAULT_SHARDS, embedder=embedder,
                                       cache_dir=args.cache_dir, folds=args.folds, progress=progress)
                print(found["markdown"])
                continue
            with progress_display(console, prefix="jit eval", quiet=args.quiet) as progress:
                report = run_evaluation(name, data_dir=args.data_dir, out_dir=args.out, config=config,
                                        sample=args.sample, shards=args.shards or DEFAULT_SHARDS, embedder=embedder,
                                        cache_dir=args.cache_dir, include_jit=not args.baselines_only,
                                        progress=progress, compare=compare, compare_rerank=args.compare_rerank)
            print(report.markdown())
            for note in report.skipped:  # an optional part missing: one line, the results are written
                print(f"{report.dataset}: {note}", file=sys.stderr)
        if args.quality:
            print(f"wrote {write_quality_doc(args.quality, args.out)}")
    except JitError as exc:
        if raise_errors:
            raise
        print(f"error: {exc}", file=sys.stderr)
        return 2
    finally:
        if handler is not None:
            logging.getLogger("jit").removeHandler(handler)
    return 0


if __name__ == "__main__":  # pragma: no cover
    from ..process import tuned

    with tuned():  # the process's owner (`jit eval` is tuned by jit.cli.main)
        raise SystemExit(main())
