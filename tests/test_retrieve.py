"""Retrieval: clause splitting, lexical index, mentions, and the hybrid vector score."""

from __future__ import annotations

import numpy as np
import pytest
from compiler_fixtures import assert_same_index

from jit.selection.retrieve import LexicalIndex, RetrievalIndex, lexical_text, split_task
from jit.text import search_tokens as tokenize

TASK = ("Generate a well-formatted PDF report titled wechat_reading_report.pdf in /root/pdf, summarizing current "
        "WeChat Reading trends and including a word cloud.")


def test_tokenize_splits_identifiers_and_stems():
    assert tokenize("getUserById read_files") == ["get", "user", "by", "id", "read", "file"]
    assert tokenize("the files", drop_stopwords=True) == ["file"]
    assert tokenize("必应搜索 web") == ["必应搜索", "web"]


def test_split_task_finds_the_steps_of_a_multi_step_task():
    parts = split_task(TASK)
    assert len(parts) >= 3
    assert any("word cloud" in p for p in parts) and any("trends" in p for p in parts)
    assert split_task("read the file") == []


def test_lexical_index_scores_matching_documents_only():
    idx = LexicalIndex(["read a file from disk", "send an email", "search files by name"])
    scores = idx.scores("find files")
    assert scores[1] == 0 and scores[0] > 0 and scores[2] > 0
    assert not idx.scores("the and of").any()


def _index(tools, ids, matrix) -> RetrievalIndex:
    """The index over ``tools`` in their order, as a snapshot builds one from their definitions."""
    return RetrievalIndex([st.id for st in tools], [(st.tool.server, st.tool.name) for st in tools],
                          [lexical_text(st) for st in tools], ids, matrix)


@pytest.fixture(scope="module")
def index(livemcpbench_store):
    tools = livemcpbench_store.tools()
    ids, matrix = livemcpbench_store.vector_matrix()
    return tools, _index(tools, ids, matrix)


def test_the_index_aligns_vectors_by_tool_id_and_keeps_a_complete_matrix_uncopied(index, livemcpbench_store):
    tools, idx = index  # tools in the store's listing order, not by id
    ids, matrix = livemcpbench_store.vector_matrix()
    by_id = dict(zip(ids.tolist(), matrix, strict=True))
    assert all(np.array_equal(idx.matrix[r], by_id[st.id]) for r, st in enumerate(tools))
    # Rows in id order, as a snapshot has them, with every vector: the matrix itself.
    in_order = sorted(tools, key=lambda st: st.id)
    complete = _index(in_order, ids, matrix)
    assert complete.matrix is matrix and complete.all_vectors
    # Every other tool without a vector: a zero row, marked so, and the rest aligned by id.
    keep = np.arange(len(ids)) % 2 == 0
    partial = _index(tools, ids[keep], matrix[keep])
    row_of = {st.id: r for r, st in enumerate(tools)}
    kept = {int(i) for i in ids[keep]}
    assert partial.has_vector.tolist() == [st.id in kept for st in tools]
    for i, v in zip(ids[keep].tolist(), matrix[keep], strict=True):
        assert np.array_equal(partial.matrix[row_of[i]], v)
    assert not partial.matrix[~partial.has_vector].any()
    assert partial.vector_count == int(keep.sum()) and not partial.all_vectors
    # No vectors at all (no model yet): one zero column, every tool marked so.
    bare = _index(tools, np.zeros(0, dtype=np.int64), np.zeros((0, 0), dtype=np.float32))
    assert bare.matrix.shape == (len(tools), 1) and not bare.has_vector.any() and not bare.matrix.any()


def test_a_patched_index_is_the_index_a_new_build_gives(livemcpbench_store):
    """Tools removed, rewritten (text and vector) and added, rows shifting under them: the patched
    index holds what a build over the new tools holds, and scores every query bit for bit alike."""
    tools = sorted(livemcpbench_store.tools(), key=lambda st: st.id)
    ids, matrix = livemcpbench_store.vector_matrix()
    before, after = tools[:-40], [st for k, st in enumerate(tools) if k % 11 != 3]  # 40 added, ~48 removed
    rewritten = {st.id for k, st in enumerate(before) if k % 7 == 2}
    old_texts = [lexical_text(st) + (" legacy zork wording" if st.id in rewritten else "") for st in before]
    old_matrix = matrix.copy()
    old_matrix[np.isin(ids, list(rewritten))] *= -1
    keep = np.isin(ids, [st.id for st in before]) & (np.arange(len(ids)) % 13 != 5)  # some never embedded
    old = RetrievalIndex([st.id for st in before], [(st.tool.server, st.tool.name) for st in before], old_texts,
                         ids[keep], old_matrix[keep], model=("m", matrix.shape[1]))
    old_ids = {st.id for st in before}
    touched = [st for st in after if st.id in rewritten or st.id not in old_ids]
    has = np.isin(ids, [st.id for st in touched])
    patched = old.patched([st.id for st in before], [st.id for st in after],
                          [(st.tool.server, st.tool.name) for st in after],
                          {st.id: lexical_text(st) for st in touched}, ids[has], matrix[has])
    # A new build: the same vectors for the tools the patch kept, the new ones for the others.
    now = {st.id for st in after}
    vec = np.where(np.isin(ids, list(rewritten))[:, None], matrix, old_matrix)
    with_vec = np.isin(ids, list(now)) & (keep | has)
    scratch = RetrievalIndex([st.id for st in after], [(st.tool.server, st.tool.name) for st in after],
                             [lexical_text(st) for st in after], ids[with_vec], vec[with_vec],
                             model=("m", matrix.shape[1]))
    assert "zork" in old.lexical.terms and "zork" not in patched.lexical.terms
    assert_same_index(patched, scratch, [TASK, "send an email", "search files by name", "zork legacy"])
    assert patched.server_names == scratch.server_names and np.array_equal(patched.server_of, scratch.server_of)
    # Vectors of another width than the index's (it was built before the catalog had any): no patch.
    bare = RetrievalIndex([st.id for st in before], [(st.tool.server, st.tool.name) for st in before], old_texts,
                          np.zeros(0, dtype=np.int64), np.zeros((0, 0), dtype=np.float32))
    assert bare.patched([st.id for st in before], [st.id for st in after], [], {}, ids[has], matrix[has]) is None


def test_mentions_find_named_tools_and_servers(index):
    tools, idx = index
    rows = {(t.tool.server, t.tool.name): r for r, t in enumerate(tools)}
    m = idx.mentions("then call generate_word_cloud_chart and mcp-server-chart/generate_bar_chart")
    assert rows[("mcp-server-chart", "generate_word_cloud_chart")] in m.tools
    assert rows[("mcp-server-chart", "generate_bar_chart")] in m.tools
    m = idx.mentions("use the trends-hub server")
    assert rows[("trends-hub", "get-weread-rank")] in m.servers and not m.tools


def test_clauses_recall_every_step_of_a_multi_step_task(index, embedder):
    tools, idx = index
    queries = [TASK, *split_task(TASK)]
    gold = {("trends-hub", "get-weread-rank"), ("mcp-server-chart", "generate_word_cloud_chart"),
            ("word-document-server", "convert_to_pdf")}

    def top(vecs, qs, k=30):
        s = idx.score(vecs, qs, lexical_weight=0.5, pool=200)
        order = np.argsort(-s.vector, kind="stable")[:k]
        return {(tools[r].tool.server, tools[r].tool.name) for r in s.rows[order].tolist()}

    whole = top(embedder.embed([TASK]), [TASK])
    split = top(embedder.embed(queries), queries)
    assert len(gold & split) > len(gold & whole) or gold <= split
    assert gold <= split
    # task_vectors "whole": one vector for the task, clauses matched lexically. That loses nothing the
    # whole task finds; the WeRead ranking, said as "WeChat Reading trends" (no word of its name), is
    # found by its clause's own vector (above), and the whole task's vector puts it 40th.
    lexical_clauses = top(embedder.embed([TASK]), queries)
    assert gold & whole <= lexical_clauses and len(gold & lexical_clauses) >= 2


def test_clauses_without_vectors_take_the_whole_tasks_dense_score(index, embedder):
    _, idx = index
    queries = [TASK, *split_task(TASK)]
    task_vec = embedder.embed([TASK])
    one = idx.score(task_vec, queries, lexical_weight=0.0, pool=50)
    same = idx.score(np.repeat(task_vec, len(queries), axis=0), queries, lexical_weight=0.0, pool=50)
    assert np.array_equal(one.rows, same.rows)
    assert np.allclose(one.vector, same.vector) and np.allclose(one.dense, same.dense)


def test_vector_scores_are_0_to_100_and_cover_the_pool(index, embedder):
    _, idx = index
    s = idx.score(embedder.embed(["send an email"]), ["send an email"], lexical_weight=0.5, pool=50)
    assert 50 <= len(s.rows) <= 100
    assert s.vector.min() >= 0 and s.vector.max() <= 100 and s.vector.max() > 60
