"""How close the offline analyzer comes to LLM reference labels (tests/data/analyzer_labels.jsonl).

The reference labels were written by Claude following the analyzer's LLM rubric
(jit.analysis.llm_analyzer.system_prompt), not fetched through the API; see docs/analyzer.md.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from jit.analysis.llm_analyzer import label_agreement
from jit.analysis.offline_analyzer import OfflineAnalyzer
from jit.analysis.vocab import CAPABILITIES, CATEGORIES
from jit.config import DEFAULT_SHARDS
from jit.errors import AnalysisError
from jit.models import ToolAnalysis

LABELS = Path(__file__).parent / "data" / "analyzer_labels.jsonl"


@pytest.fixture(scope="module")
def labels() -> list[dict]:
    return [json.loads(line) for line in LABELS.read_text(encoding="utf-8").splitlines()]


def test_reference_labels_are_every_ninth_livemcpbench_tool(labels, livemcpbench_tools):
    assert [row["line"] for row in labels] == list(range(0, len(livemcpbench_tools), 9))
    for row in labels:
        tool = livemcpbench_tools[row["line"]]
        assert (row["server"], row["name"]) == (tool.server, tool.name)
        assert 1 <= len(row["categories"]) <= 3 and set(row["categories"]) <= set(CATEGORIES)
        assert 1 <= len(row["capabilities"]) <= 3 and set(row["capabilities"]) <= set(CAPABILITIES)


def test_label_agreement_arithmetic():
    predicted = [
        ToolAnalysis(categories=("web", "search"), capabilities=("/read",)),
        ToolAnalysis(categories=("finance",), capabilities=("/read", "/list")),
    ]
    reference = [
        {"categories": ["web"], "capabilities": ["read"]},
        {"categories": ["finance", "data"], "capabilities": ["/list"]},
    ]
    r = label_agreement(predicted, reference)
    assert r.n == 2
    # categories: tp web, finance; fp search; fn data -> micro F1 = 4 / (4 + 1 + 1)
    assert r.micro_f1["categories"] == round(4 / 6, 3)
    assert r.jaccard["categories"] == round((1 / 2 + 1 / 2) / 2, 3)
    assert r.per_label["categories"]["search"] == (0.0, 0.0, 0.0, 0)
    assert r.per_label["categories"]["web"] == (1.0, 1.0, 1.0, 1)
    # capabilities: /read is right for tool 1 and extra for tool 2 -> precision 1/2, recall 1
    assert r.per_label["capabilities"]["/read"] == (0.5, 1.0, 0.667, 1)
    assert r.macro_f1["capabilities"] == round((0.667 + 1.0) / 2, 3)
    with pytest.raises(AnalysisError):
        label_agreement(predicted, reference[:1])


def test_offline_analyzer_agrees_with_the_reference_labels(labels, livemcpbench_tools):
    analyzer = OfflineAnalyzer(DEFAULT_SHARDS)
    predicted = [analyzer.analyze_one(livemcpbench_tools[row["line"]]) for row in labels]
    r = label_agreement(predicted, labels)
    # Floors a little under the measured values in docs/analyzer.md: a regression guard.
    assert r.micro_f1["categories"] >= 0.70, r.to_json()
    assert r.micro_f1["capabilities"] >= 0.82, r.to_json()
    assert r.jaccard["categories"] >= 0.65 and r.jaccard["capabilities"] >= 0.80
    assert json.loads(json.dumps(r.to_json()))["n"] == len(labels)
