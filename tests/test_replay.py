"""``jit eval --replay``'s learning curve (jit.evaluation.replay) on the small catalog of
compiler_fixtures.py: real rules, real model, real SQLite."""

from __future__ import annotations

from pathlib import Path

import pytest
from compiler_fixtures import build_store, write_config

from jit.errors import EvaluationError
from jit.evaluation.datasets import EvalQuery, Pool
from jit.evaluation.replay import replay, replay_folds

#: Tasks of two roles; each is answered by writing a report file (fs/write_file).
TASKS = [("coder", "report the crash we saw in staging"), ("tester", "report the failing test of last night"),
         ("coder", "report the crash from last night's deploy"), ("tester", "report the flaky test in the suite"),
         ("coder", "report the staging outage of this morning"), ("tester", "report the test that timed out"),
         ("coder", "report the crash in the payment service"), ("tester", "report the test failure in the parser")]


@pytest.fixture
def setup(tmp_path: Path, embedder):
    config = write_config(tmp_path)
    store = build_store(tmp_path / "catalog.db", config, embedder)
    tools = [st.tool for st in store.tools()]
    pool = Pool(tools, {(t.server, t.name): i for i, t in enumerate(tools)}, ("fixtures",))
    gold = pool.index[("fs", "write_file")]
    queries = [EvalQuery(f"q{i}", text, ((gold,),)) for i, (_shard, text) in enumerate(TASKS)]
    yield store, config, embedder, pool, queries
    store.close()


def test_a_set_of_several_roles_learns_each_task_in_its_own_shard_and_leaves_no_record(setup):
    store, config, embedder, pool, queries = setup
    recorded: set[tuple[str, str]] = set()  # (shard, task id) recorded while the held-out tasks are measured

    def seen() -> None:
        for shard in ("coder", "tester"):
            recorded.update((shard, t.id) for t in store.learned_since(shard, embedder.model_name, -1)[0])

    rows = replay(store, config, embedder, pool, queries, shard=[s for s, _ in TASKS], folds=2, curve=(0.0, 0.5),
                  advance=seen)
    assert [r["recorded"] for r in rows] == [0.0, 0.5]
    assert all(r["queries"] == len(queries) for r in rows)  # every query measured once per point
    assert rows[0]["calls_recorded"] == 0 and rows[1]["calls_recorded"] == 8  # 4 tasks recorded per fold
    assert rows[1]["recall_full"] >= rows[0]["recall_full"]
    assert {shard for shard, _ in recorded} == {"coder", "tester"}
    for shard in ("coder", "tester"):  # the cached catalog keeps none of it
        assert not store.learned_since(shard, embedder.model_name, -1)[0]


def test_one_shard_per_query_is_required(setup):
    store, config, embedder, pool, queries = setup
    with pytest.raises(EvaluationError, match="one shard per query: 2 for 8 queries"):
        replay(store, config, embedder, pool, queries, shard=["coder", "tester"], folds=2)


def test_each_query_is_held_out_once_and_the_others_are_recorded_in_one_shared_order():
    """bench/learning_ceiling.py reads the folds replay measures: the same held-out queries, and the
    recorded ones in the order replay records them (one shuffled order, the same for every fold)."""
    folds = replay_folds(10, 4)
    assert sorted(i for _train, test in folds for i in test) == list(range(10))
    order = [folds[k % 4][1][k // 4] for k in range(10)]  # fold f holds out order[f::4]
    assert order != list(range(10))  # shuffled
    for train, test in folds:
        assert train == [i for i in order if i not in test]
    assert replay_folds(10, 4) == folds and replay_folds(10, 4, seed=1) != folds
