"""bench/tool_representation.py: the texts it embeds for a tool and how it scores a ranking."""

from __future__ import annotations

import numpy as np

from bench.tool_representation import SIBLINGS, measure, name_part, with_siblings
from jit.models import ToolDef


def _tool(server: str, name: str, **params: str) -> ToolDef:
    return ToolDef(server=server, name=name, description=f"{name} does it",
                   input_schema={"type": "object", "properties": {p: {"type": "string"} for p in params}})


def test_a_tools_server_theme_is_its_siblings_names_and_never_its_own():
    tools = [_tool("git", "git_status"), _tool("git", "git-diff"), _tool("fs", "read_file")]
    texts = with_siblings(tools)
    assert texts[0] == tools[0].embedding_text() + " | server tools: git diff"
    assert texts[2] == tools[2].embedding_text()  # alone on its server: no theme
    many = [_tool("s", f"tool_{i}") for i in range(SIBLINGS + 5)]
    assert with_siblings(many)[0].count(",") == SIBLINGS - 1


def test_the_name_vector_holds_server_name_words_and_parameter_names_only():
    assert name_part(_tool("web", "fetch_url", url="u", timeout="t")) == "web fetch url | parameters: url, timeout"
    assert name_part(_tool("web", "ping")) == "web ping"


def test_recall_counts_a_group_once_whichever_member_is_in_the_first_five():
    sims = np.array([[0.9, 0.8, 0.1, 0.0, 0.0, 0.0, 0.5], [0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.9]])
    got = measure(sims, [[[0, 1]], [[0], [6]]])
    assert got == {"R@5": (1 + 0.5) / 2, "Hit@1": 1.0}
