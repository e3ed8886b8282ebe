"""bench/eval_labels.py: it runs on a slice of the labels set and its numbers are computed right."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import hashlib

from bench.eval_labels import LABEL_NAMES, LABELS, SPLITS, held_out, held_out_half, load_labels, score

REPO = Path(__file__).resolve().parent.parent


def test_score_counts_hits_misses_and_false_alarms():
    gold = {"a": frozenset({"read"}), "b": frozenset({"write", "delete"}), "c": frozenset({"write", "send"})}
    predicted = {"a": frozenset({"write"}), "b": frozenset({"write"}), "c": frozenset({"write", "send"})}
    s = score(gold, predicted, gold)
    assert (s["write"].tp, s["write"].fp, s["write"].fn) == (2, 1, 0)
    assert s["write"].precision == 2 / 3 and s["write"].recall == 1.0
    assert s["write"].f1 == 2 * (2 / 3) / (2 / 3 + 1)
    assert s["write"].extra == ("a",) and s["delete"].missed == ("b",)
    assert s["delete"].precision is None and s["delete"].recall == 0.0
    assert s["read"].to_json()["recall"] == 0.0 and s["read"].to_json()["support"] == 1
    assert s["execute"].to_json()["f1"] is None


def test_the_held_out_part_is_every_third_server_from_the_first():
    servers = sorted({s for s, _ in load_labels(LABELS)})
    held = held_out(servers)
    assert sorted(held) == servers[::3] and len(held) == 16


def test_the_held_out_half_is_the_servers_whose_name_hashes_odd_whatever_else_is_labelled():
    servers = sorted({s for s, _ in load_labels(LABELS)})
    held = held_out_half(servers)
    assert held == {s for s in servers if hashlib.sha256(s.encode()).digest()[-1] % 2}
    assert len(held) == 22 and {"playwright", "notion", "redis"} <= held and not {"git", "azure"} & held
    assert held_out_half(servers[:10]) == held & set(servers[:10])  # a server's side is its own
    assert SPLITS["halves"] is held_out_half and SPLITS["thirds"] is held_out


def test_the_script_reports_a_slice_with_numbers_that_follow_from_its_rows():
    env = {**os.environ, "PYTHONPATH": str(REPO), "HF_HUB_OFFLINE": "1"}
    out = subprocess.run([sys.executable, "-m", "bench.eval_labels", "--json", "--server", "git",
                          "--server", "airtable", "--split", "thirds"], capture_output=True, text=True, check=True, cwd=REPO,
                         env=env, timeout=300)
    report = json.loads(out.stdout)
    assert report["tools"] == 12 + 16 and report["servers"] == 2
    assert report["held_out_servers"] == ["airtable"] and report["parts"] == {"dev": 12, "held-out": 16, "all": 28}
    rows = report["rows"]
    for view in ("analyzer", "policy"):
        for part in ("dev", "held-out", "all"):
            mine = [r for r in rows if part == "all" or r["part"] == part]
            for label in LABEL_NAMES:
                s = report["scores"][view][part][label]
                tp = sum(label in r["labels"] and label in r[view] for r in mine)
                fp = sum(label not in r["labels"] and label in r[view] for r in mine)
                fn = sum(label in r["labels"] and label not in r[view] for r in mine)
                assert (s["tp"], s["fp"], s["fn"]) == (tp, fp, fn), (view, part, label)
                assert s["support"] == tp + fn
                if tp + fp:
                    assert s["precision"] == round(tp / (tp + fp), 3)
                if tp + fn:
                    assert s["recall"] == round(tp / (tp + fn), 3)
    # The analyzer view is read off the capabilities; the policy adds what the annotations say.
    for r in rows:
        effects = {c.lstrip("/") for c in r["capabilities"]} & {"write", "delete", "execute", "send"}
        assert r["analyzer"] == (sorted(effects | {"write"}) if effects else ["read"])
    assert report["split"] == "thirds"
    git_add = next(r for r in rows if r["tool"] == "git/git_add")
    assert "write" in git_add["analyzer"] and "write" in git_add["labels"]


def test_the_printed_misses_are_the_dev_parts_unless_another_part_is_asked_for(capsys):
    from bench.eval_labels import main

    # everything is on the dev side of the halves and playwright held out; each has tools the analyzer gets wrong
    assert main(["--server", "everything", "--server", "playwright"]) == 0
    dev = capsys.readouterr().out.split("## confusions")[1]
    assert "everything/" in dev and "playwright/" not in dev
    assert main(["--server", "everything", "--server", "playwright", "--misses", "held-out"]) == 0
    held = capsys.readouterr().out.split("## confusions")[1]
    assert "playwright/" in held and "everything/" not in held
