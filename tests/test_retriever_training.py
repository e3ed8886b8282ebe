"""The tool retriever's training data and recipe: the data is disjoint from what jit is measured on,
the overlap check finds what it must, and the recipe's batches and negatives are what it says."""

from __future__ import annotations

import gzip
import json
import random
from pathlib import Path

import numpy as np

from bench import check_retriever_overlap as overlap
from bench.compose_tasks import compose, join
from bench.train_adapter import Data, adapted, fit, scores
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
    sources = {"seal-tools", "toolalpaca", "bfcl", "restbench", "nestful", "acebench", "tooltalk", "tau2"}
    assert {p["source"] for p in pairs} == sources
    # Each source's row of the manifest's table counts its pairs and tools, and each source's share of
    # pairs needing two or more tools is the one the manifest gives.
    for source in sources:
        mine = [p for p in pairs if p["source"] == source]
        n_tools = sum(t["source"] == source for t in tools)
        assert f"| {len(mine):,} | {n_tools:,} |" in manifest.split(f"\n| {source} |", 1)[1].split("\n", 1)[0]
        multi = sum(len(p["tools"]) >= 2 for p in mine) / len(mine)
        assert f"{source} {multi:.1%}" in " ".join(manifest.split())


def test_no_training_text_equals_a_text_of_the_repositorys_evaluation_sets() -> None:
    """The overlap check's exact half over the sets in the repository (the shared benchmark sets
    are checked by bench/check_retriever_overlap.py, whose result the manifest records)."""
    evals = {overlap.normalise(t) for t in overlap.eval_texts(overlap.eval_files(Path("/nonexistent")))}
    assert len(evals) > 1000
    pairs, tools = _rows("pairs.jsonl.gz"), _rows("tools.jsonl.gz")
    train = [p["query"] for p in pairs] + [t["description"] for t in tools]
    assert not [t for t in train if overlap.normalise(t) in evals]


def test_evaluation_texts_are_queries_steps_and_tool_descriptions_at_any_depth() -> None:
    record = {"id": "x-1", "task": "Fix the failing build",
              "steps": [{"step": "run the unit tests", "tools": ["a/b"]}], "gold": [{"server": "s", "name": "n"}],
              "description": "short", "annotated_steps": ["open the pull request"]}
    assert sorted(overlap._texts(record)) == ["Fix the failing build", "open the pull request", "run the unit tests"]
    assert overlap.normalise("Get_the WEATHER, for: Paris!") == "get the weather for paris"


def test_the_check_drops_a_near_copy_of_a_query_and_the_pairs_of_a_tool_near_an_evaluation_tool(
        tmp_path: Path) -> None:
    data = tmp_path / "shared"
    for name in overlap.SHARED_SETS:
        (data / name).mkdir(parents=True)
    query = "Find the weather forecast for Paris tomorrow morning and tell me if it will rain"
    (data / "livemcpbench" / "queries.jsonl").write_text(json.dumps({"query": query}) + "\n", "utf-8")
    (data / "metatool" / "tools.jsonl").write_text(
        json.dumps({"name": "x", "description": "Translate text between two languages"}) + "\n", "utf-8")
    out = tmp_path / "train"
    out.mkdir()
    tools = [{"id": "s/a/translate", "source": "s", "server": "a", "name": "translate", "params": {},
              "description": "translate TEXT between two languages."},
             {"id": "s/a/convert", "source": "s", "server": "a", "name": "convert", "params": {},
              "description": "Convert an amount of money into another currency"}]
    # A near copy (a word added: trigram Jaccard 13/14) and a text equal once normalised.
    pairs = [{"source": "s",
              "query": "Find the weather forecast for Paris tomorrow morning and tell me if it will rain today",
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

    tools = {t["id"]: t for t in (tool("s/w/forecast", "w", "weather forecast"),
                                  tool("s/w/alerts", "w", "weather alerts"),
                                  tool("s/w/radar", "w", "weather radar map"), tool("s/m/convert", "m", "currency"))}
    pairs = [{"source": "s", "query": "weather tomorrow", "tools": ["s/w/forecast"]},
             {"source": "s", "query": "convert money", "tools": ["s/m/convert"], "candidates": ["s/w/radar"]}]
    rows = triplets(pairs, tools, random.Random(0), mined=10)
    text = {t: tool_text(tools[t]) for t in tools}
    assert rows[0][:2] == ("weather tomorrow", text["s/w/forecast"])
    assert rows[0][2] in (text["s/w/alerts"], text["s/w/radar"])
    assert rows[1] == ("convert money", text["s/m/convert"], text["s/w/radar"])
    assert text["s/w/forecast"] == "w forecast: weather forecast | parameters: city"


def test_a_composed_task_joins_its_parts_in_order_and_keeps_their_capitals_where_they_are_names() -> None:
    for seed in range(20):
        text = join(["Retrieve the weather in Paris.", "NASA images of Mars?", "I'm done with the list!"],
                    random.Random(seed))
        assert text.endswith("list.") and "NASA images of Mars" in text and "I'm done" in text
        assert text.index("eather in Paris") < text.index("NASA") < text.index("I'm")
        assert "Retrieve" in text or text.startswith("First retrieve")
        assert "?" not in text and "!" not in text and ". ." not in text
    assert join(["Get a", "Put b"], random.Random(0)) != join(["Get a", "Put b"], random.Random(3))


def test_composed_tasks_need_the_union_of_their_parts_tools_and_join_no_two_parts_of_the_same_tools() -> None:
    def tool(tid: str, server: str) -> dict:
        return {"id": tid, "source": "s", "server": server, "name": tid.rsplit("/", 1)[-1], "description": tid,
                "params": {}}

    tools = {t["id"]: t for t in (tool("s/w/forecast", "w"), tool("s/w/alerts", "w"), tool("s/m/convert", "m"),
                                  tool("s/m/rates", "m"))}
    pairs = [{"source": "s", "query": f"query {i}", "tools": [sorted(tools)[i % 4]]} for i in range(12)]
    pairs.append({"source": "s", "query": "x" * 400, "tools": ["s/w/alerts"]})  # too long to join
    tasks = compose(pairs, tools, seed=5)
    by_query = {p["query"]: p for p in pairs}
    assert len(tasks) > 6 and tasks == compose(pairs, tools, seed=5)
    assert len({tuple(sorted(t["parts"])) for t in tasks}) == len(tasks)
    for t in tasks:
        parts = [by_query[q] for q in t["parts"]]
        assert 2 <= len(parts) <= 3 and "x" * 400 not in t["parts"]
        assert t["tools"] == sorted({g for p in parts for g in p["tools"]})
        assert len({tuple(p["tools"]) for p in parts}) == len(parts)
        assert t["servers"] == sorted({tools[g]["server"] for g in t["tools"]})
    # Most join queries of one server; some join across the source's servers.
    one_server = sum(len(t["servers"]) == 1 for t in tasks)
    assert 0 < one_server < len(tasks)


def test_no_composed_task_equals_a_text_of_the_repositorys_evaluation_sets() -> None:
    evals = {overlap.normalise(t) for t in overlap.eval_texts(overlap.eval_files(Path("/nonexistent")))}
    tools = {t["id"]: t for t in _rows("tools.jsonl.gz")}
    tasks = compose(_rows("pairs.jsonl.gz"), tools)
    assert len(tasks) > 2000
    assert not [t["query"] for t in tasks if overlap.normalise(t["query"]) in evals]


def _toy_data(rng: np.random.Generator) -> Data:
    """Two servers of three tools each; a query is its tool's vector turned by a fixed rotation
    and blurred, so the base model ranks a query's tool low and the adapter can learn the turn."""
    d = Data.__new__(Data)
    d.tool_ids = [f"s/{srv}/t{i}" for srv in "ab" for i in range(3)]
    d.tools = {t: {"source": "seal-tools", "server": t.split("/")[1]} for t in d.tool_ids}
    d.index = {t: i for i, t in enumerate(d.tool_ids)}
    d.tool_vecs = np.linalg.qr(rng.normal(size=(16, 16)))[0][:6].astype(np.float32)
    turn = np.linalg.qr(rng.normal(size=(16, 16)))[0].astype(np.float32)
    gold = [i % 6 for i in range(120)]
    vecs = d.tool_vecs[gold] @ turn.T + 0.05 * rng.normal(size=(120, 16))
    d.row_vecs = (vecs / np.linalg.norm(vecs, axis=1, keepdims=True)).astype(np.float32)
    d.rows = [{"source": "seal-tools", "kind": "query", "tools": [d.tool_ids[g]]} for g in gold]
    d.gold = [[g] for g in gold]
    d.siblings = [[0, 1, 2] if i < 3 else [3, 4, 5] for i in range(6)]
    d.source_tools = {"seal-tools": np.arange(6), "toolalpaca": np.arange(0), "bfcl": np.arange(0)}
    return d


def test_a_needed_tools_hard_negatives_are_its_siblings_the_task_does_not_need() -> None:
    d = _toy_data(np.random.default_rng(0))
    d.gold[0] = [0, 1]
    negs = d.hard_negatives([0, 1], near=2)
    assert negs[(0, 0)] == [2] and negs[(0, 1)] == [2]
    assert negs[(1, 1)] == [0, 2]
    d.siblings[1] = [1]  # a tool alone on its server: the nearest tools of the source it is not
    assert len(negs := d.hard_negatives([1], near=2)[(1, 1)]) == 2 and 1 not in negs


def test_the_adapter_starts_as_the_base_model_and_learns_what_the_base_model_misses() -> None:
    x = np.random.default_rng(0).normal(size=(5, 8)).astype(np.float32)
    unit = x / np.linalg.norm(x, axis=1, keepdims=True)
    assert np.allclose(adapted(None, x), unit) and np.allclose(adapted(np.zeros((8, 8), np.float32), x), unit)
    d = _toy_data(np.random.default_rng(1))
    train, test = list(range(60)), list(range(60, 120))  # every tool in both halves
    base = scores(d, test, None, "query")["query Hit@1"]
    a = fit(d, train, side="query", epochs=30, lr=0.05, l2=0.0, scale=20.0, batch=16, near=2, tasks=True, seed=0)
    assert base < 0.5 < scores(d, test, a, "query")["query Hit@1"]


def test_interpolated_weights_move_part_of_the_way_and_keep_the_base_models_integer_buffers() -> None:
    import pytest
    import torch

    from bench.interpolate_retriever import interpolate

    base = {"w": torch.tensor([0.0, 2.0]), "ids": torch.tensor([0, 1, 2])}
    tuned = {"w": torch.tensor([1.0, 4.0], dtype=torch.float16), "ids": torch.tensor([5, 5, 5])}
    assert torch.equal(interpolate(base, tuned, 0.0)["w"], base["w"])
    assert torch.equal(interpolate(base, tuned, 1.0)["w"], torch.tensor([1.0, 4.0]))
    half = interpolate(base, tuned, 0.5)
    assert torch.equal(half["w"], torch.tensor([0.5, 3.0])) and half["w"].dtype == torch.float32
    assert torch.equal(half["ids"], base["ids"])
    with pytest.raises(SystemExit, match="parameters differ"):
        interpolate(base, {"w": tuned["w"]}, 0.5)
    with pytest.raises(SystemExit, match="shape"):
        interpolate(base, {**tuned, "w": torch.zeros(3)}, 0.5)
