"""Integrity of the hand labels of the catalogs set (bench/data/labels/, issue #21).

The labels are the truth the offline analyzer's per-label precision and recall will be
measured against, so a label naming a tool that was never recorded, a word outside the
vocabulary, or a guideline whose counts drifted from the file would skew every number.
These checks read the committed files only: no network, no server, no analyzer.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path

import pytest

from bench.record_sets import CATALOGS, DATA_ROOT

LABELS = DATA_ROOT / "labels"
VOCABULARY = ("read", "write", "delete", "execute", "send")
#: The annotation hints of the MCP specification, by their wire names.
HINTS = ("readOnlyHint", "destructiveHint", "idempotentHint", "openWorldHint")
#: The five servers too large to label whole: each gets a spread of its verbs.
LARGE = ("linear", "google-workspace", "atlassian", "monday", "cloudflare")


def read_jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


@pytest.fixture(scope="module")
def labels() -> list[dict]:
    return read_jsonl(LABELS / "labels.jsonl")


@pytest.fixture(scope="module")
def recorded() -> dict[tuple[str, str], dict]:
    return {(r["server"], r["name"]): r for r in read_jsonl(CATALOGS.folder / "tools.jsonl")}


@pytest.fixture(scope="module")
def guideline() -> str:
    return (LABELS / "GUIDELINE.md").read_text(encoding="utf-8")


def contradiction(labels: list[str], says: dict) -> bool:
    """The guideline's rule: the hints a server sent contradict the hand labels."""
    read_only, destructive = says.get("readOnlyHint"), says.get("destructiveHint")
    if read_only is True:
        return labels != ["read"]
    if read_only is False and labels == ["read"]:
        return True
    return (destructive is False and "delete" in labels) or (destructive is True and labels == ["read"])


def table(text: str, heading: str) -> list[list[str]]:
    """The rows (cells as text) of every Markdown table in the section under ``heading``."""
    section = text.split(f"\n## {heading}\n", 1)[1].split("\n## ", 1)[0]
    rows = [[c.strip() for c in line.strip().strip("|").split("|")] for line in section.splitlines()
            if line.startswith("|") and not re.fullmatch(r"\|[-:| ]+\|", line.strip())]
    return [r for r in rows if r[0] not in ("what", "server")]  # header rows


def test_the_set_is_large_enough_and_every_labelled_tool_was_recorded(labels, recorded):
    keys = [(r["server"], r["name"]) for r in labels]
    assert len(keys) == len(set(keys)), "a tool is labelled twice"
    assert not set(keys) - set(recorded), "labels name tools the catalogs recording does not hold"
    servers = Counter(server for server, _ in keys)
    assert len(keys) >= 500 and len(servers) >= 20
    for server in LARGE:
        assert servers[server] >= 25, f"{server}: {servers[server]} tools labelled"
    for server in {s for s, _ in recorded} - set(LARGE):  # the smaller servers are labelled whole
        assert servers[server] == sum(s == server for s, _ in recorded), server


def test_labels_come_from_the_vocabulary_and_read_stands_alone(labels):
    for row in labels:
        tags = row["labels"]
        assert tags and tags == sorted(set(tags)) and set(tags) <= set(VOCABULARY), row
        # read means no lasting effect; delete, execute and send are lasting effects, so write.
        assert tags == ["read"] or ("write" in tags and "read" not in tags), row
        assert set(row) == {"server", "name", "labels", "annotations_say", "disagrees", "note"}, row


def test_annotations_say_what_the_server_sent_and_disagreements_follow_the_rule(labels, recorded):
    for row in labels:
        sent = recorded[(row["server"], row["name"])]["annotations"] or {}
        assert row["annotations_say"] == {k: sent[k] for k in HINTS if sent.get(k) is not None}, row["name"]
        assert row["disagrees"] is contradiction(row["labels"], row["annotations_say"]), row["name"]
        # A disagreeing row says which claim it contradicts.
        assert row["disagrees"] == ("[annotations say " in row["note"]), row["name"]


def test_the_guideline_counts_match_the_file(labels, guideline):
    totals = {r[0]: int(r[1]) for r in table(guideline, "Counts") if len(r) == 2}
    per_label = Counter(tag for row in labels for tag in row["labels"])
    assert totals == {
        "tools": len(labels), "servers": len({r["server"] for r in labels}),
        **{tag: per_label[tag] for tag in VOCABULARY},
        "disagreements": sum(r["disagrees"] for r in labels),
    }


def test_the_guideline_per_server_table_matches_the_file(labels, recorded, guideline):
    per_server = {r[0]: [int(n) for n in r[1:]] for r in table(guideline, "Counts") if len(r) == 9}
    expected = {}
    for server in dict.fromkeys(r["server"] for r in labels):
        rows = [r for r in labels if r["server"] == server]
        tags = Counter(tag for r in rows for tag in r["labels"])
        expected[server] = [len(rows), sum(s == server for s, _ in recorded),
                            *(tags[t] for t in VOCABULARY), sum(r["disagrees"] for r in rows)]
    assert per_server == expected
    assert list(per_server) == list(expected), "the table follows the file's order"


def test_the_guideline_states_its_date_and_how_the_labels_were_made(guideline):
    assert re.search(r"Labelled on \d{4}-\d{2}-\d{2}", guideline)
    assert "by hand" in guideline and "analyzer was neither run nor read" in guideline
