"""Evaluation: metric code on hand-checked rankings, the baselines' formulas, input errors,
and one small end-to-end run with the real model on a slice of LiveMCPBench."""

from __future__ import annotations

import json
import math
import random
from pathlib import Path

import numpy as np
import pytest
from conftest import DATA, HashingEmbedder

from jit.config import DEFAULT_EMBEDDING_MODEL
from jit.errors import EvaluationError
from jit.evaluation.baselines import (
    BM25Ranker,
    ClimptRanker,
    MethodResult,
    TieBreak,
    definition_chars,
    first_ranks,
    hit_at_1,
    list_chars,
    ndcg_at,
    recall_at,
    reciprocal_rank,
)
from jit.evaluation.datasets import DatasetSpec, load_pool, load_queries
from jit.evaluation.eval_report import EvalReport
from jit.evaluation.evaluate import GENERATED_BEGIN, GENERATED_END, main, run_evaluation, write_quality_doc
from jit.models import ToolDef
from jit.text import bm25_tokens


def _tool(server: str, name: str, description: str = "", **schema_props: str) -> dict:
    props = {k: {"type": "string", "description": v} for k, v in schema_props.items()}
    return {"server": server, "name": name, "description": description,
            "input_schema": {"type": "object", "properties": props}}


def _write_jsonl(path: Path, rows: list) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


# --------------------------------------------------------------------------- metrics


def test_metrics_of_a_hand_checked_ranking() -> None:
    # Ranking (best first): 3, 7, 1, 9, 4, 2. Gold groups: {1, 5}, {9}, {8}.
    # Group {1,5}: 1 is at rank 3 (5 never appears)  -> 3
    # Group {9}:   9 is at rank 4                    -> 4
    # Group {8}:   never retrieved                   -> None
    order = [3, 7, 1, 9, 4, 2]
    ranks = first_ranks(order, [[1, 5], [9], [8]])
    assert ranks == [3, 4, None]
    # R@k = share of the 3 groups first hit within k: R@1 = 0, R@3 = 1/3, R@5 = 2/3.
    assert recall_at(ranks, 1) == 0.0
    assert recall_at(ranks, 3) == pytest.approx(1 / 3)
    assert recall_at(ranks, 5) == pytest.approx(2 / 3)
    # The first tool (3) is in no group; the first gold tool is at rank 3.
    assert hit_at_1(ranks) == 0.0
    assert reciprocal_rank(ranks) == pytest.approx(1 / 3)
    # DCG@10  = 1/log2(3+1) + 1/log2(4+1)        = 0.5 + 0.430677 = 0.930677
    # IDCG@10 = 1/log2(2) + 1/log2(3) + 1/log2(4) = 1 + 0.630930 + 0.5 = 2.130930  (min(3 groups, 10) hits on top)
    # nDCG@10 = 0.930677 / 2.130930 = 0.436747
    assert ndcg_at(ranks, 10) == pytest.approx(0.436747, abs=1e-6)


def test_perfect_ranking_scores_one_and_an_empty_one_scores_zero() -> None:
    perfect = first_ranks([4, 6, 0], [[6], [4]])
    assert perfect == [2, 1]
    assert (recall_at(perfect, 2), hit_at_1(perfect), reciprocal_rank(perfect), ndcg_at(perfect)) == (1, 1, 1, 1)
    missed = first_ranks([], [[1], [2]])
    assert missed == [None, None]
    assert (recall_at(missed, 10), hit_at_1(missed), reciprocal_rank(missed), ndcg_at(missed)) == (0.0, 0.0, 0.0, 0.0)


def test_a_tool_in_two_groups_earns_ndcg_gain_once() -> None:
    # Tool 2 belongs to both groups and is ranked first: both groups are recalled at rank 1,
    # but rank 1 earns one binary gain. DCG = 1/log2(2) = 1; IDCG = 1 + 1/log2(3) = 1.630930.
    ranks = first_ranks([2, 8, 9], [[2], [2, 5]])
    assert ranks == [1, 1]
    assert recall_at(ranks, 1) == 1.0
    assert ndcg_at(ranks, 10) == pytest.approx(1 / 1.630930, abs=1e-6)


def test_ndcg_ideal_is_capped_at_k_groups() -> None:
    # 12 groups, the first 10 ranks each hit a new group: DCG equals the ideal of min(12, 10) hits.
    ranks = [*range(1, 11), None, None]
    assert ndcg_at(ranks, 10) == pytest.approx(1.0)
    assert recall_at(ranks, 10) == pytest.approx(10 / 12)


def test_list_chars_matches_the_serialised_definitions() -> None:
    tools = [ToolDef("s", "a", "first"), ToolDef("s", "b", "第二", {"type": "object", "properties": {"x": {}}})]
    payload = [{"name": t.name, "description": t.description, "input_schema": t.input_schema} for t in tools]
    expected = len(json.dumps(payload, ensure_ascii=False, separators=(",", ":")))
    assert list_chars([definition_chars(t) for t in tools]) == expected
    assert list_chars([]) == 2  # "[]"


def test_budget_recall_takes_the_longest_prefix_that_fits() -> None:
    # Definitions of 10, 20 and 30 chars; a budget of 10 tokens is 40 chars.
    # Prefix of 1 tool: 10 + 2 brackets = 12; of 2: 30 + 2 + 1 comma = 33; of 3: 60 + 2 + 2 = 64 > 40.
    # So the first 2 tools fit: group {1} (rank 2) is in, group {2} (rank 3) is out -> 0.5.
    result = MethodResult("m", "baseline")
    result.add([0, 1, 2], [[1], [2]], np.array([10, 20, 30]), budget_tokens=10)
    assert result.budget_recall == [0.5]
    summary = result.summary()
    assert summary["R@budget"] == 0.5
    assert summary["R@5"] == 1.0
    assert summary["curve"] == []  # 3 tools: no top-5 prefix exists


# --------------------------------------------------------------------------- baselines


def test_equal_scores_are_ordered_by_a_fixed_permutation_not_file_order() -> None:
    scores = np.zeros(50)
    first, second = TieBreak(50).order(scores), TieBreak(50).order(scores)
    assert first.tolist() == second.tolist()
    assert first.tolist() != list(range(50))
    assert first.tolist() == np.argsort(np.random.default_rng(0).permutation(50)).tolist()
    scores[17] = 0.5  # a real score difference still wins over the permutation
    assert TieBreak(50).order(scores)[0] == 17


def test_bm25_tokens_split_identifiers_and_keep_cjk_runs() -> None:
    assert bm25_tokens("getUserById HTTPServer mp3_player web-search 使用必应搜索 État") == [
        "get", "user", "by", "id", "http", "server", "mp", "3", "player", "web", "search", "使用必应搜索", "état",
    ]


def test_bm25_scores_follow_okapi_with_ln_idf() -> None:
    # N = 3 docs, avgdl = (2 + 3 + 1) / 3 = 2; "alpha" has df = 2: idf = ln(1 + (3 - 2 + 0.5) / (2 + 0.5)) = ln 1.6.
    # doc 0: tf 1, dl 2: 1 / (1.2 * (0.25 + 0.75 * 2/2) + 1) = 1 / 2.2
    # doc 1: tf 2, dl 3: 2 / (1.2 * (0.25 + 0.75 * 3/2) + 2) = 2 / 3.65
    # (bm25s omits Okapi's constant (k1 + 1) factor: rankings are the same.)
    ranker = BM25Ranker(["alpha beta", "alpha alpha gamma", "delta"])
    (scores,) = ranker.scores(["Alpha alpha"])  # repeated query terms count once
    idf = math.log(1.6)
    assert scores == pytest.approx([idf / 2.2, idf * 2 / 3.65, 0.0], abs=1e-9)
    (none,) = ranker.scores(["zeta"])
    assert none.tolist() == [0.0, 0.0, 0.0]


def test_climpt_is_cosine_of_raw_term_frequencies() -> None:
    # query {a:1, b:1}; doc 0 {a:1, b:1} -> cos 1; doc 1 {a:2, c:1} -> 2 / (sqrt 2 * sqrt 5) = 0.632456.
    (scores,) = ClimptRanker(["a b", "a a c", ""]).scores(["A b"])
    assert scores == pytest.approx([1.0, 0.632456, 0.0], abs=1e-6)


# --------------------------------------------------------------------------- input files


def test_pool_files_merge_and_the_first_duplicate_wins(tmp_path: Path) -> None:
    a = _write_jsonl(tmp_path / "a.jsonl", [_tool("s", "t", "from a"), _tool("s", "u")])
    b = _write_jsonl(tmp_path / "b.jsonl", [_tool("s", "t", "from b"), _tool("x", "t")])
    pool = load_pool([a, b])
    assert [t.key for t in pool.tools] == ["s/t", "s/u", "x/t"]
    assert pool.tools[0].description == "from a"
    assert pool.duplicates_dropped == 1
    assert pool.servers == 2


def test_missing_file_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(EvaluationError, match=r"nope\.jsonl: file not found"):
        load_pool([tmp_path / "nope.jsonl"])


def test_malformed_json_line_names_file_and_line(tmp_path: Path) -> None:
    path = tmp_path / "tools.jsonl"
    path.write_text(json.dumps(_tool("s", "t")) + "\n\n" + '{"server": "s", "name": \n', encoding="utf-8")
    with pytest.raises(EvaluationError, match=r"tools\.jsonl:3: invalid JSON") as info:
        load_pool([path])
    assert info.value.details["line"] == 3


def test_tool_row_without_a_name_is_rejected(tmp_path: Path) -> None:
    path = _write_jsonl(tmp_path / "tools.jsonl", [_tool("s", "t"), {"server": "s", "description": "x"}])
    with pytest.raises(EvaluationError, match=r"tools\.jsonl:2: 'name' must be a non-empty string"):
        load_pool([path])


def test_query_gold_must_reference_pool_tools(tmp_path: Path) -> None:
    pool = load_pool([_write_jsonl(tmp_path / "tools.jsonl", [_tool("s", "t")])])
    queries = _write_jsonl(tmp_path / "q.jsonl", [
        {"id": "1", "query": "do t", "gold": [{"server": "s", "name": "t"}]},
        {"id": "2", "query": "do u", "gold": [{"server": "s", "name": "u"}]},
    ])
    with pytest.raises(EvaluationError, match=r"q\.jsonl:2: gold tool s/u is not in the tool pool"):
        load_queries(queries, pool)


def test_query_without_any_gold_field_is_rejected(tmp_path: Path) -> None:
    pool = load_pool([_write_jsonl(tmp_path / "tools.jsonl", [_tool("s", "t")])])
    queries = _write_jsonl(tmp_path / "q.jsonl", [{"id": "1", "query": "do t"}])
    with pytest.raises(EvaluationError, match=r"q\.jsonl:1: query has neither 'gold' nor 'gold_groups'"):
        load_queries(queries, pool)


def test_empty_gold_is_skipped_and_counted_and_gold_groups_win(tmp_path: Path) -> None:
    pool = load_pool([_write_jsonl(tmp_path / "tools.jsonl", [_tool("s", "t"), _tool("s", "u"), _tool("r", "u")])])
    queries = _write_jsonl(tmp_path / "q.jsonl", [
        {"id": "a", "query": "one", "gold": [{"server": "s", "name": "t"}],
         "gold_groups": [[{"server": "s", "name": "u"}, {"server": "r", "name": "u"}]]},
        {"id": "b", "query": "two", "gold": [], "gold_groups": []},
        {"id": "c", "query": "three", "gold": [{"server": "s", "name": "t"}, {"server": "r", "name": "u"}]},
    ])
    scored, skipped, kind = load_queries(queries, pool)
    assert skipped == 1
    assert kind == "mixed"
    assert [(q.id, q.groups) for q in scored] == [("a", ((1, 2),)), ("c", ((0,), (2,)))]


def test_sample_is_fixed_and_keeps_file_order(tmp_path: Path) -> None:
    pool = load_pool([_write_jsonl(tmp_path / "tools.jsonl", [_tool("s", "t")])])
    rows = [{"id": str(i), "query": f"q{i}", "gold": [{"server": "s", "name": "t"}]} for i in range(40)]
    queries = _write_jsonl(tmp_path / "q.jsonl", rows)
    scored, _, _ = load_queries(queries, pool, sample=7)
    expected = sorted(random.Random(0).sample(range(40), 7))
    assert [int(q.id) for q in scored] == expected
    assert [q.id for q in load_queries(queries, pool, sample=7)[0]] == [q.id for q in scored]


def test_unknown_dataset_and_missing_data_dir_are_clear_errors(tmp_path: Path) -> None:
    with pytest.raises(EvaluationError, match="unknown dataset 'nope'; known: livemcpbench"):
        run_evaluation("nope", data_dir=tmp_path)
    with pytest.raises(EvaluationError, match="data directory not found"):
        run_evaluation("livemcpbench", data_dir=tmp_path / "absent")


def test_cli_reports_errors_without_a_traceback(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["livemcpbench", "--data-dir", str(tmp_path / "absent"), "--out", str(tmp_path / "out"), "-q"]) == 2
    assert "error: data directory not found" in capsys.readouterr().err
    # Usage mistakes are argparse's (exit 2 with the usage line), as an unknown option is.
    for argv, said in ((["mine", "--tools", str(tmp_path / "tools.jsonl")], "needs --tools (one or more), --queries"),
                       (["nope"], "unknown dataset 'nope'; known: livemcpbench"),
                       (["livemcpbench", "--sample", "0"], "--sample must be a positive number"),
                       (["livemcpbench", "--shard", "nobody"], "unknown shard(s) ['nobody']; the config defines")):
        with pytest.raises(SystemExit) as exited:
            main([*argv, "--data-dir", str(tmp_path), "-q"])
        err = capsys.readouterr().err
        assert exited.value.code == 2 and "usage:" in err and said in err, (argv, err)
    missing = ["mine", "--tools", str(tmp_path / "tools.jsonl"), "--queries", str(tmp_path / "q.jsonl"), "-q"]
    assert main(missing) == 2
    assert f"error: {tmp_path / 'tools.jsonl'}: file not found" in capsys.readouterr().err


# --------------------------------------------------------------------------- end to end


def _slice(tmp_path: Path, n_tools: int = 30, n_queries: int = 5) -> DatasetSpec:
    """The first queries of LiveMCPBench with gold, their gold tools, and other tools up to n_tools."""
    tools = [json.loads(line) for line in (DATA / "livemcpbench" / "tools.jsonl").read_text("utf-8").splitlines()]
    rows = [json.loads(line) for line in (DATA / "livemcpbench" / "queries.jsonl").read_text("utf-8").splitlines()]
    queries = [r for r in rows if r["gold_groups"]][:n_queries]
    gold = {(t["server"], t["name"]) for q in queries for g in q["gold_groups"] for t in g}
    keep = [t for t in tools if (t["server"], t["name"]) in gold]
    keep += [t for t in tools if (t["server"], t["name"]) not in gold][: n_tools - len(keep)]
    folder = tmp_path / "data" / "slice"
    folder.mkdir(parents=True)
    _write_jsonl(folder / "tools.jsonl", keep)
    _write_jsonl(folder / "queries.jsonl", [*queries, {"id": "empty", "query": "nothing", "gold": [],
                                                       "gold_groups": []}])
    return DatasetSpec("slice", ("slice/tools.jsonl",), "slice/queries.jsonl", description="a test slice")


@pytest.mark.slow
def test_small_end_to_end_run_writes_tables_json_and_chart(tmp_path: Path, embedder) -> None:
    spec = _slice(tmp_path)
    out = tmp_path / "out"
    report = run_evaluation(spec, data_dir=tmp_path / "data", out_dir=out, embedder=embedder,
                            cache_dir=tmp_path / "cache")

    assert report.pool["tools"] == 30
    assert report.queries == {"file": "slice/queries.jsonl", "scored": 5, "skipped_empty_gold": 1,
                              "gold": "gold_groups", "sample": None}
    names = [m["method"] for m in report.methods]
    assert names[:3] == ["climpt", "bm25", "dense"]
    for m in report.methods:
        for key in ("R@5", "R@10", "R@20", "Hit@1", "MRR", "nDCG@10", "R@budget"):
            assert 0.0 <= m[key] <= 1.0
        assert m["R@5"] <= m["R@10"] <= m["R@20"]
    # With 30 tools, R@20 of any full-pool ranking is high and R@30 would be 1: check via per-query ranks.
    ranks = [r for row in report.per_query for r in row["first_ranks"]["bm25"]]
    assert all(r is not None and 1 <= r <= 30 for r in ranks)
    assert report.all_tools["tokens"] == report.all_tools["chars"] / 4
    assert names[3] == "jit rank"
    (c,) = report.compile
    assert c["shard"] == "researcher" and c["budget"] == 4000
    assert 0.0 <= c["recall_full"] <= c["recall_full_condensed"] <= c["recall_any"] <= 1.0
    assert 0 < c["tokens_used"] <= 4000
    assert len(report.per_query[0]["compile_tiers"]["researcher"]) == report.per_query[0]["groups"]

    data = json.loads((out / "slice.json").read_text("utf-8"))
    assert EvalReport.from_json(data).methods == report.methods
    md = (out / "slice.md").read_text("utf-8")
    assert "| bm25 |" in md and "![recall against tokens, slice](slice.png)" in md
    assert (out / "slice.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"

    # A second run reuses the cached catalog and vectors: only the 5 queries are embedded
    # (by the dense baseline; jit is left out of this run).
    before = embedder.texts_embedded
    again = run_evaluation(spec, data_dir=tmp_path / "data", embedder=embedder, cache_dir=tmp_path / "cache",
                           include_jit=False)
    assert embedder.texts_embedded - before == 5
    timeless = [{k: v for k, v in m.items() if k != "ms_per_query"} for m in report.methods[:3]]
    assert [{k: v for k, v in m.items() if k != "ms_per_query"} for m in again.methods] == timeless
    assert again.compile == [] and again.notes == ["baselines only: jit's ranking and compile() were not run"]

    # The quality document collects the results and keeps its hand-written text.
    doc = tmp_path / "quality.md"
    doc.write_text(f"# Quality\n\nHand-written intro.\n\n{GENERATED_BEGIN}\nold\n{GENERATED_END}\n\nOutro.\n", "utf-8")
    write_quality_doc(doc, out)
    text = doc.read_text("utf-8")
    assert text.startswith("# Quality\n\nHand-written intro.\n")
    assert text.rstrip().endswith("Outro.")
    assert "\nold\n" not in text and "### slice" in text and "Machine:" in text
    assert "![recall against tokens, slice](out/slice.png)" in text


def test_a_compared_model_is_measured_in_the_same_run_over_a_catalog_of_its_own(tmp_path: Path) -> None:
    spec = _slice(tmp_path)
    first, second = HashingEmbedder(), HashingEmbedder(dimension=256, model_name="other-model")
    report = run_evaluation(spec, data_dir=tmp_path / "data", out_dir=tmp_path / "out", embedder=first,
                            compare=second, cache_dir=tmp_path / "cache", shards=["researcher"])

    names = [m["method"] for m in report.methods]
    assert names == ["climpt", "bm25", "dense", "jit rank", "dense [other-model]", "jit rank [other-model]"]
    assert [c["shard"] for c in report.compile] == ["researcher", "researcher [other-model]"]
    assert report.notes == ["embedding model test-hashing-384; rows marked [other-model] use other-model"]
    # Each model embedded the pool in its own catalog, the vectors of one never read as the other's.
    assert (tmp_path / "cache" / "slice.db").is_file() and (tmp_path / "cache" / "slice.other-model.db").is_file()
    assert first.texts_embedded >= 30 and second.texts_embedded >= 30
    assert set(report.per_query[0]["first_ranks"]) == set(names)
    md = (tmp_path / "out" / "slice.md").read_text("utf-8")
    assert "| jit rank [other-model] (top" in md and "| researcher [other-model] |" in md


def test_the_second_stage_is_measured_the_other_way_in_the_same_run_over_the_same_catalog(tmp_path: Path) -> None:
    spec = _slice(tmp_path)
    embedder = HashingEmbedder()
    report = run_evaluation(spec, data_dir=tmp_path / "data", out_dir=tmp_path / "out", embedder=embedder,
                            compare_rerank=True, cache_dir=tmp_path / "cache", shards=["researcher"])

    names = [m["method"] for m in report.methods]
    assert names == ["climpt", "bm25", "dense", "jit rank", "jit rank [rerank model]"]
    assert [c["shard"] for c in report.compile] == ["researcher", "researcher [rerank model]"]
    assert sorted(p.name for p in (tmp_path / "cache").glob("*.db")) == ["slice.db"]
    md = (tmp_path / "out" / "slice.md").read_text("utf-8")
    assert "| jit rank [rerank model] (top" in md and "| researcher [rerank model] |" in md


def test_compare_model_must_be_another_model(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["livemcpbench", "--data-dir", str(DATA), "--compare-model", DEFAULT_EMBEDDING_MODEL, "-q"])
    assert exited.value.code == 2
    assert f"--compare-model {DEFAULT_EMBEDDING_MODEL} is the model the run measures already" in capsys.readouterr().err


def test_compare_model_takes_a_model_directory_or_a_name(tmp_path: Path) -> None:
    from jit.config import EmbeddingConfig
    from jit.evaluation.evaluate import compared_model

    trained = tmp_path / "tools-minilm"
    trained.mkdir()
    local = compared_model(EmbeddingConfig(), str(trained))
    assert (local.model, local.path) == ("tools-minilm", str(trained))  # its vectors keyed by the directory's name
    named = compared_model(EmbeddingConfig(path=str(tmp_path)), "all-MiniLM-L12-v2")
    assert (named.model, named.path) == ("all-MiniLM-L12-v2", None)


def test_the_report_says_the_room_the_strong_tools_have_past_the_full_caps():
    """The sentence under compile()'s table says what cap_full does with the config's keys: the
    places past max_full_tools and the share past max_full_share, each only when there is one."""
    from jit.evaluation.eval_report import EvalReport

    data = json.loads((Path(__file__).resolve().parents[1] / "docs/eval/livemcpbench.json").read_text())
    base = {**data["selection"], "max_full_tools": 10, "max_full_share": 0.6, "strong_full_tools": 4,
            "strong_full_share": 0.8, "strong_threshold": 75}

    def sentence(**selection) -> str:
        report = EvalReport.from_json({**data, "selection": {**base, **selection}})
        (line,) = [x for x in report.markdown().splitlines() if x.startswith("compile(): budget")]
        return line

    assert sentence().endswith("at most 10 Full taking at most 60% of the budget, and up to 4 more with a final "
                               "score ≥ 75, Full taking up to 80% with them.")
    assert sentence(strong_full_tools=0).endswith(
        "at most 60% of the budget, and Full taking up to 80% with tools scoring ≥ 75.")
    assert sentence(strong_full_share=0.5).endswith("at most 60% of the budget, and up to 4 more with a final "
                                                    "score ≥ 75.")
    assert sentence(strong_full_tools=0, strong_full_share=0.5).endswith("at most 60% of the budget.")
    assert sentence(max_full_tools=0).endswith("at most 0 Full taking at most 60% of the budget.")
