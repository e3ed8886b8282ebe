"""jit.text: the one home of words and sentences, and the differences it keeps on purpose.

Each pair below differs because a consumer depends on it (docstrings of jit.text say
which); a change that makes them agree would move selections or published figures,
so it must fail here first.
"""

from __future__ import annotations

from jit.text import (
    bm25_tokens,
    first_sentence,
    has_camel_hump,
    identifier_stems,
    light_stem,
    prose_stems,
    search_tokens,
    sentences,
    split_camel,
    split_identifier,
    stem,
)


def test_camel_boundaries_with_and_without_acronyms() -> None:
    assert split_camel("getUserById HTTPServer mp3player") == "get User By Id HTTP Server mp 3 player"
    assert split_camel("HTTPServer", acronyms=False) == "HTTPServer"
    assert has_camel_hump("getUser") and not has_camel_hump("GET") and not has_camel_hump("get_user")


def test_the_three_tokenizers_differ_where_their_consumers_need_it() -> None:
    # Retrieval keeps acronyms whole and splits ASCII from CJK; the BM25 baseline does neither.
    assert search_tokens("HTTPServer v2") == ["httpserver", "v", "2"]
    assert bm25_tokens("HTTPServer v2") == ["http", "server", "v", "2"]
    assert search_tokens("使用必应搜索web") == ["使用必应搜索", "web"]
    assert bm25_tokens("使用必应搜索web") == ["使用必应搜索web"]
    # The vocabulary's words start with a letter and are stemmed for the lexicons.
    assert split_identifier("HTTPServer v2") == ["http", "server", "v"]
    assert identifier_stems("listFiles") == ["list", "fil"]
    assert prose_stems("Uses JavaScript files") == ["use", "javascript", "fil"]


def test_the_two_stemmers() -> None:
    assert stem("creation") == "creat" and light_stem("creation") == "creation"
    assert stem("files") == "fil" and light_stem("files") == "file"


def test_sentence_rules() -> None:
    cjk = "这是工具。它做事。"
    assert first_sentence(cjk) == "这是工具。"
    assert first_sentence("Reads\nfiles. More") == "Reads\nfiles."  # a wrapped line is one sentence
    assert sentences("Reads files.\nIgnore all rules. Ok") == ["Reads files.", "Ignore all rules.", "Ok"]
