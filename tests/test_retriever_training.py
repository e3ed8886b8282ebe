"""The tool retriever's training data and recipe: the data is disjoint from what jit is measured on,
the overlap check finds what it must, and the recipe's batches and negatives are what it says."""

from __future__ import annotations

import gzip
import json
import random
from pathlib import Path


from bench import check_retriever_overlap as overlap
from bench.build_retriever_data import OUT, _write_gz
from bench.train_retriever import batches, tool_text, triplets


def _rows(name: str) -> list[dict]:
    with gzip.open(OUT / name, "rt", encoding="utf-8") as fh:
        return [json.loads(line) for line in fh]


def test_the_committed_data_is_what_the_manifest_counts() -> None:
    pairs, tools = _rows("pairs.jsonl.gz"), _rows("tools.jsonl.gz")
    manifest = (OUT / "MANIFEST.md").read_text("utf-8")
    assert f"| total | | | | {len(pairs):,} | {len(tools):,} |" in manifest
    ids = {t["id"] for t in tools}
    # Every tool a pair names is in the tool file; no pair names a tool both needed and a negative.
    for p in pairs:
        assert set(p["tools"]) <= ids and set(p.get("candidates", [])) <= ids
        assert not set(p["tools"]) & set(p.get("candidates", []))
    # None of the evaluation sources is among the training sources.
    assert {p["source"] for p in pairs} == {"seal-tools", "toolalpaca", "bfcl"}


def test_no_training_text_equals_a_text_of_the_repositorys_evaluation_sets() -> None:
    """The overlap check's exact half over the sets in the repository (the shared benchmark sets
    are checked by bench/check_retriever_overlap.py, whose result the manifest records)."""
    evals = {overlap.normalise(t) for t in overlap.eval_texts(overlap.eval_files(Path("/nonexistent")))}
    assert len(evals) > 1000
    pairs, tools = _rows("pairs.jsonl.gz"), _rows("tools.jsonl.gz")
    train = [p["query"] for p in pairs] + [t["description"] for t in tools]
    assert not [t for t in train if overlap.normalise(t) in evals]


def test_evaluation_texts_are_queries_steps_and_tool_descriptions_at_any_depth() -> None:
    record = {"id": "x-1", "task": "Fix the failing build", "steps": [{"step": "run the unit tests", "tools": ["a/b"]}],
              "gold": [{"server": "s", "name": "n"}], "description": "short", "annotated_steps": ["open the pull request"]}
    assert sorted(overlap._texts(record)) == ["Fix the failing build", "open the pull request", "run the unit tests"]
    assert overlap.normalise("Get_the WEATHER, for: Paris!") == "get the weather for paris"


def test_the_check_drops_a_near_copy_of_a_query_and_the_pairs_of_a_tool_near_an_evaluation_tool(
        tmp_path: Path) -> None:
    data = tmp_path / "shared"
    for name in overlap.SHARED_SETS:
        (data / name).mkdir(parents=True)
    (data / "livemcpbench" / "queries.jsonl").write_text(
        json.dumps({"query": "Find the weather forecast for Paris tomorrow morning and tell me if it will rain"}) + "\n", "utf-8")
    (data / "metatool" / "tools.jsonl").write_text(
        json.dumps({"name": "x", "description": "Translate text between two languages"}) + "\n", "utf-8")
    out = tmp_path / "train"
    out.mkdir()
    tools = [{"id": "s/a/translate", "source": "s", "server": "a", "name": "translate", "params": {},
              "description": "translate TEXT between two languages."},
             {"id": "s/a/convert", "source": "s", "server": "a", "name": "convert", "params": {},
              "description": "Convert an amount of money into another currency"}]
    # A near copy (a word added: trigram Jaccard 13/14) and a text equal once normalised.
    pairs = [{"source": "s", "query": "Find the weather forecast for Paris tomorrow morning and tell me if it will rain today",
              "tools": ["s/a/convert"]},
             {"source": "s", "query": "Say hello in Japanese", "tools": ["s/a/translate"]},
             {"source": "s", "query": "How many euros is 20 dollars", "tools": ["s/a/convert"],
              "candidates": ["s/a/translate"]}]
    _write_gz(out / "tools.jsonl.gz", tools)
    _write_gz(out / "pairs.jsonl.gz", pairs)

    report = overlap.check(data, out, apply=False)
    assert (report["failing_texts"], report["dropped_pairs"], report["dropped_tools"]) == (2, 2, 1)
    assert sorted(e["jaccard"] for e in report["examples"]) == [round(13 / 14, 4), 1.0]
    assert overlap.main(["--data", str(data), "--out", str(out)]) == 1

    overlap.check(data, out, apply=True)
    kept = [json.loads(line) for line in gzip.open(out / "pairs.jsonl.gz", "rt")]
    assert kept == [{"source": "s", "query": "How many euros is 20 dollars", "tools": ["s/a/convert"],
                     "candidates": []}]
    assert [t["id"] for t in map(json.loads, gzip.open(out / "tools.jsonl.gz", "rt"))] == ["s/a/convert"]
    assert overlap.main(["--data", str(data), "--out", str(out)]) == 0
    # Not a near copy: a third of the words changed.
    assert not overlap.failing(["Find the weather forecast for Rome next week and tell me if it will snow"],
                               ["Find the weather forecast for Paris tomorrow morning and tell me if it will rain"])


def test_no_text_appears_twice_in_a_batch_and_every_row_is_in_one() -> None:
    rows = [(f"q{i}", f"tool{i % 3}", f"neg{i % 5}") for i in range(30)]
    plan = batches(rows, 4, random.Random(1))
    assert sorted(r for b in plan for r in b) == sorted(rows)
    for b in plan:
        texts = [t for r in b for t in r]
        assert len(texts) == len(set(texts)) and len(b) <= 4
    assert plan == batches(rows, 4, random.Random(1))


def test_a_hard_negative_is_an_offered_candidate_else_a_same_server_tool_never_the_needed_one() -> None:
    def tool(tid: str, server: str, desc: str) -> dict:
        return {"id": tid, "source": "s", "server": server, "name": tid.rsplit("/", 1)[-1], "description": desc,
                "params": {"city": "the city"}}

    tools = {t["id"]: t for t in (tool("s/w/forecast", "w", "weather forecast"), tool("s/w/alerts", "w", "weather alerts"),
                                  tool("s/w/radar", "w", "weather radar map"), tool("s/m/convert", "m", "currency"))}
    pairs = [{"source": "s", "query": "weather tomorrow", "tools": ["s/w/forecast"]},
             {"source": "s", "query": "convert money", "tools": ["s/m/convert"], "candidates": ["s/w/radar"]}]
    rows = triplets(pairs, tools, random.Random(0), mined=10)
    text = {t: tool_text(tools[t]) for t in tools}
    assert rows[0][:2] == ("weather tomorrow", text["s/w/forecast"])
    assert rows[0][2] in (text["s/w/alerts"], text["s/w/radar"])
    assert rows[1] == ("convert money", text["s/m/convert"], text["s/w/radar"])
    assert text["s/w/forecast"] == "w forecast: weather forecast | parameters: city"
