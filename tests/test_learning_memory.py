"""The compiler's memory of past tasks (jit.selection.learning.Experience): after the first read it
reads only what the catalog recorded since, including another host's calls, and a forget (by any
host) drops what it holds. SQLite (two stores on one file: two processes) and PostgreSQL (two hosts)."""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import pytest

from jit.catalog.store import Store
from jit.catalog.store_learning import TaskRecord
from jit.config import LearningConfig
from jit.selection.learning import Experience

DIM = 8


def _unit(*xs: float) -> np.ndarray:
    v = np.zeros(DIM, dtype=np.float32)
    v[: len(xs)] = xs
    return v / np.linalg.norm(v)


@pytest.fixture(params=["sqlite", "postgresql"])
def two_hosts(request, tmp_path: Path):
    """Two stores on one catalog: two processes on a SQLite file, two hosts on a PostgreSQL catalog."""
    location = tmp_path / "catalog.db" if request.param == "sqlite" else request.getfixturevalue("pg_url")
    with Store(location, local_path=tmp_path / "a") as a, Store(location, local_path=tmp_path / "b") as b:
        yield a, b


def _reads(store: Store, monkeypatch) -> list[list[str]]:
    """The task ids each of ``store``'s reads of the record returned, as it makes them."""
    reads: list[list[str]] = []
    real = store.learned_since

    def spy(shard: str, model: str, version: int):
        tasks, last = real(shard, model, version)
        reads.append(sorted(t.id for t in tasks))
        return tasks, last

    monkeypatch.setattr(store, "learned_since", spy)
    return reads


def test_a_call_another_host_records_is_read_alone_by_the_next_evidence(two_hosts, monkeypatch):
    a, b = two_hosts
    first = TaskRecord("coder", "m", _unit(1, 0.1))
    a.record_task_call(first, "gh", "create_issue", ok=True)
    experience = Experience(a, LearningConfig())
    reads = _reads(a, monkeypatch)
    assert experience.evidence("coder", "m", _unit(1), 55)[("gh", "create_issue")].tasks == 1
    assert experience.evidence("coder", "m", _unit(1), 55)[("gh", "create_issue")].tasks == 1
    assert reads == [[first.id]]  # nothing new recorded: nothing read again
    second = TaskRecord("coder", "m", _unit(1, -0.1))
    b.record_task_call(second, "gh", "create_issue", ok=True)
    b.record_task_call(second, "fs", "write_file", ok=False)
    found = experience.evidence("coder", "m", _unit(1), 55)
    assert reads[1:] == [[second.id]]  # the other host's task alone
    assert found[("gh", "create_issue")].tasks == 2 and ("fs", "write_file") not in found
    # A call that changes a row already read (the failed tool, then called successfully for the
    # same task) is read again: the row carries the version of its last change.
    b.record_task_call(second, "fs", "write_file", ok=True)
    assert experience.evidence("coder", "m", _unit(1), 55)[("fs", "write_file")].tasks == 1
    assert reads[2:] == [[second.id]]


def test_a_forget_by_another_host_drops_what_the_memory_holds(two_hosts):
    a, b = two_hosts
    for v in (_unit(1, 0.1), _unit(1, 0.2)):
        t = TaskRecord("coder", "m", v)
        a.record_task_call(t, "gh", "create_issue", ok=True)
        a.record_task_call(t, "fs", "read_file", ok=True)
    experience = Experience(a, LearningConfig())
    assert set(experience.evidence("coder", "m", _unit(1), 55)) == {("gh", "create_issue"), ("fs", "read_file")}
    assert b.forget_learned(server="gh") == 2
    assert set(experience.evidence("coder", "m", _unit(1), 55)) == {("fs", "read_file")}
    assert b.forget_learned(shard="coder") == 2
    assert experience.evidence("coder", "m", _unit(1), 55) == {}


def test_a_call_of_a_tool_shown_in_full_stops_counting_it_unused(store):
    task = TaskRecord("coder", "m", _unit(1), shown=(("gh", "create_issue"), ("pdf", "make_pdf")))
    store.record_task_call(task, "gh", "create_issue", ok=True)
    experience = Experience(store, LearningConfig())
    assert experience.evidence("coder", "m", _unit(1), 55)[("pdf", "make_pdf")].unused == 1
    store.record_task_call(task, "pdf", "make_pdf", ok=False)
    assert ("pdf", "make_pdf") not in experience.evidence("coder", "m", _unit(1), 55)  # called, though it failed


def test_a_memory_grown_call_by_call_says_what_one_read_at_the_end_says(store):
    """Random tasks and calls over two shards, evidence asked between them: the long-lived memory
    (grown by what changed) and a fresh one (one read of everything) give the same evidence."""
    rng = np.random.default_rng(7)
    tools = [("s", f"t{i}") for i in range(12)]
    grown = Experience(store, LearningConfig(neighbours=5))
    now = time.time()
    tasks: list[TaskRecord] = []
    for step in range(120):
        if not tasks or rng.random() < 0.4:
            v = rng.normal(size=DIM).astype(np.float32)
            v[0] += 3  # alike enough that neighbours pass the match
            shown = tuple(tools[i] for i in rng.choice(len(tools), size=3, replace=False))
            tasks.append(TaskRecord(str(rng.choice(["coder", "tester"])), "m", v / np.linalg.norm(v), shown,
                                    created_at=now - float(rng.uniform(0, 60)) * 86_400))
        task = tasks[int(rng.integers(len(tasks)))]
        store.record_task_call(task, *tools[int(rng.integers(len(tools)))], ok=bool(rng.random() < 0.7))
        if step % 10 == 9:
            for shard in ("coder", "tester"):
                assert grown.evidence(shard, "m", _unit(1), 40, now) == \
                    Experience(store, LearningConfig(neighbours=5)).evidence(shard, "m", _unit(1), 40, now)
    assert grown.evidence("coder", "m", _unit(1), 40, now)  # the comparison was not of empty answers
