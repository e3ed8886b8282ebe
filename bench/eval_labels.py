"""Capability labels against the hand labels of the catalogs set (issue #21): can a role policy trust them?

    python -m bench.eval_labels [--json] [--split halves|thirds] [--misses dev|held-out|all]
                                [--server NAME ...] [--out FILE]

``bench/data/labels/labels.jsonl`` labels 947 real tools of 47 servers by hand (``read``, or
``write`` with ``delete``, ``execute`` and ``send`` where they apply; GUIDELINE.md beside it).
This script analyzes those tools as a sync does: the recorded ``tools/list`` rows of
``bench/data/catalogs/tools.jsonl`` (title, input schema and annotations included) become
jit's ToolDefs and go through :class:`~jit.analysis.offline_analyzer.OfflineAnalyzer`'s
``analyze``, one batch per server, with the default shards. Each analysis is read two ways:

* **analyzer**: the capabilities it names. ``/write``, ``/delete``, ``/execute`` and
  ``/send`` are those labels, and any of them is ``write`` (the guideline: delete, execute
  and send imply write); a tool with none of them is ``read``.
* **policy**: what the role policy reads as a change (rules/policy.dl, ``changing``): the
  analyzer's reading, plus ``readOnlyHint: false``, and ``destructiveHint: true`` unless the
  server declares ``readOnlyHint: true`` (:func:`bench.eval_roles.risky_reasons`). Only
  ``write`` differs: the policy asks of the other labels what the analyzer says.

It reports per-label precision, recall and F1, and each label's misses and false alarms, on
three parts of the set: **dev**, the servers the rules are tuned on; **held-out**, servers not
looked at while tuning; and **all**. Two fixed splits by server (:data:`SPLITS`):

* ``halves`` (the default): a server is held out when the SHA-256 of its name is odd
  (:func:`held_out_half`: 22 of 47 servers, 479 of 947 tools). A server's side does not depend
  on which other servers are labelled.
* ``thirds``: every third server in sorted order, from the first (:func:`held_out`: 16 of 47),
  the split the first rules were tuned against.

The misses and false alarms it prints are the dev part's unless ``--misses`` asks for another
part, so that tuning does not look at the held-out tools by accident.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.eval_roles import RISKY_CAPABILITIES, load_tools, risky_reasons
from bench.record_sets import CATALOGS, DATA_ROOT
from jit.analysis.offline_analyzer import OfflineAnalyzer
from jit.config import Config
from jit.models import ToolAnalysis, ToolDef

LABELS = DATA_ROOT / "labels" / "labels.jsonl"
#: The hand labels, in the guideline's order; ``read`` stands alone, the rest are kinds of ``write``.
LABEL_NAMES = ("read", "write", "delete", "execute", "send")
#: The dangerous labels: a missed one is a privilege leak (the targets: recall ≥ 0.98, precision ≥ 0.90).
DANGEROUS = ("write", "delete", "execute", "send")
#: Held out: the servers at positions 0, 3, 6, ... of the sorted server names.
HELD_OUT_EVERY = 3
VIEWS = ("analyzer", "policy")
PARTS = ("dev", "held-out", "all")


def held_out(servers: Iterable[str]) -> frozenset[str]:
    """The held-out servers: every :data:`HELD_OUT_EVERY`-th of the sorted names, from the first."""
    return frozenset(s for i, s in enumerate(sorted(set(servers))) if i % HELD_OUT_EVERY == 0)


def held_out_half(servers: Iterable[str]) -> frozenset[str]:
    """The held-out half: the servers whose name's SHA-256, read as a number, is odd."""
    return frozenset(s for s in set(servers) if int(hashlib.sha256(s.encode("utf-8")).hexdigest(), 16) % 2)


#: The splits by server: name -> the held-out servers of a set of server names.
SPLITS: dict[str, Callable[[Iterable[str]], frozenset[str]]] = {"halves": held_out_half, "thirds": held_out}


def load_labels(path: Path = LABELS) -> dict[tuple[str, str], frozenset[str]]:
    """``(server, name)`` -> the tool's hand labels."""
    out: dict[tuple[str, str], frozenset[str]] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            row = json.loads(line)
            out[(row["server"], row["name"])] = frozenset(row["labels"])
    return out


def analyzer_labels(analysis: ToolAnalysis) -> frozenset[str]:
    """The hand-label vocabulary of an analysis: its side-effect capabilities, ``write`` with any."""
    found = {c.lstrip("/") for c in analysis.capabilities if c in RISKY_CAPABILITIES}
    return frozenset(found | {"write"}) if found else frozenset({"read"})


def policy_labels(analysis: ToolAnalysis, annotations: Mapping[str, Any] | None) -> frozenset[str]:
    """The labels as the role policy reads them: ``write`` when it counts the tool as a change."""
    found = analyzer_labels(analysis) - {"read", "write"}
    if risky_reasons(annotations, analysis.capabilities):
        return frozenset(found | {"write"})
    return frozenset(found) if found else frozenset({"read"})


@dataclass(frozen=True, slots=True)
class LabelScore:
    tp: int
    fp: int
    fn: int
    missed: tuple[str, ...]
    extra: tuple[str, ...]

    @property
    def precision(self) -> float | None:
        return self.tp / (self.tp + self.fp) if self.tp + self.fp else None

    @property
    def recall(self) -> float | None:
        return self.tp / (self.tp + self.fn) if self.tp + self.fn else None

    @property
    def f1(self) -> float | None:
        p, r = self.precision, self.recall
        return 2 * p * r / (p + r) if p and r else (0.0 if p is not None and r is not None else None)

    def to_json(self) -> dict[str, Any]:
        def r3(v: float | None) -> float | None:
            return None if v is None else round(v, 3)

        return {"support": self.tp + self.fn, "tp": self.tp, "fp": self.fp, "fn": self.fn,
                "precision": r3(self.precision), "recall": r3(self.recall), "f1": r3(self.f1),
                "missed": list(self.missed), "extra": list(self.extra)}


def score(gold: Mapping[str, frozenset[str]], predicted: Mapping[str, frozenset[str]],
          keys: Iterable[str]) -> dict[str, LabelScore]:
    """Per label, over ``keys``: true and false positives, misses, and which tools they are."""
    keys = sorted(keys)
    out = {}
    for label in LABEL_NAMES:
        missed = tuple(k for k in keys if label in gold[k] and label not in predicted[k])
        extra = tuple(k for k in keys if label not in gold[k] and label in predicted[k])
        tp = sum(1 for k in keys if label in gold[k] and label in predicted[k])
        out[label] = LabelScore(tp, len(extra), len(missed), missed, extra)
    return out


def analyze(tools: Sequence[ToolDef], analyzer: OfflineAnalyzer) -> list[ToolAnalysis]:
    """Analyses of ``tools`` in order, each server's tools in one batch, as a sync does."""
    by_server: dict[str, list[int]] = {}
    for i, t in enumerate(tools):
        by_server.setdefault(t.server, []).append(i)
    out: list[ToolAnalysis | None] = [None] * len(tools)
    for rows in by_server.values():
        for i, a in zip(rows, analyzer.analyze([tools[i] for i in rows]), strict=True):
            out[i] = a
    return [a for a in out if a is not None]


def run(servers: Sequence[str] = (), labels_path: Path = LABELS,
        tools_path: Path = CATALOGS.folder / "tools.jsonl", split: str = "halves") -> dict[str, Any]:
    """The report: per view and part, per label; every labelled tool's labels beside the truth."""
    gold_by_tool = load_labels(labels_path)
    held = SPLITS[split](s for s, _ in gold_by_tool)
    wanted = set(servers)
    unknown = wanted - {s for s, _ in gold_by_tool}
    if unknown:
        raise SystemExit(f"no labelled tools of server(s) {sorted(unknown)}")
    tools = [t for t in load_tools(tools_path)
             if (t.server, t.name) in gold_by_tool and (not wanted or t.server in wanted)]
    missing = {k for k in gold_by_tool if not wanted or k[0] in wanted} - {(t.server, t.name) for t in tools}
    if missing:
        raise SystemExit(f"labelled but not recorded: {sorted(missing)[:5]}")
    analyses = analyze(tools, OfflineAnalyzer(Config.default().shards))
    gold: dict[str, frozenset[str]] = {}
    predicted: dict[str, dict[str, frozenset[str]]] = {v: {} for v in VIEWS}
    rows = []
    for t, a in zip(tools, analyses, strict=True):
        key = f"{t.server}/{t.name}"
        gold[key] = gold_by_tool[(t.server, t.name)]
        predicted["analyzer"][key] = analyzer_labels(a)
        predicted["policy"][key] = policy_labels(a, t.annotations)
        rows.append({"tool": key, "part": "held-out" if t.server in held else "dev",
                     "labels": sorted(gold[key]), "capabilities": list(a.capabilities),
                     "annotations": t.annotations or {},
                     **{v: sorted(predicted[v][key]) for v in VIEWS}})
    parts = {"dev": [r["tool"] for r in rows if r["part"] == "dev"],
             "held-out": [r["tool"] for r in rows if r["part"] == "held-out"],
             "all": [r["tool"] for r in rows]}
    return {
        "set": "labels",
        "split": split,
        "tools": len(rows),
        "servers": len({t.server for t in tools}),
        "held_out_servers": sorted(held & {t.server for t in tools}),
        "parts": {p: len(keys) for p, keys in parts.items()},
        "scores": {v: {p: {label: s.to_json() for label, s in score(gold, predicted[v], keys).items()}
                       for p, keys in parts.items()} for v in VIEWS},
        "rows": rows,
    }


def markdown(report: Mapping[str, Any], view: str) -> str:
    """Precision / recall (F1) per label and part, for one view."""
    def fmt(v: float | None) -> str:
        return "–" if v is None else f"{v:.3f}"

    lines = [f"| label | {' | '.join(PARTS)} |", "|---|" + "---:|" * len(PARTS)]
    for label in LABEL_NAMES:
        cells = []
        for part in PARTS:
            s = report["scores"][view][part][label]
            cells.append(f"{fmt(s['precision'])} / {fmt(s['recall'])} ({fmt(s['f1'])}, n={s['support']})")
        lines.append(f"| {label} | {' | '.join(cells)} |")
    return "\n".join(lines)


def confusions(report: Mapping[str, Any], view: str, part: str = "all") -> str:
    """Each label's missed and extra tools on one part."""
    out = []
    for label in LABEL_NAMES:
        s = report["scores"][view][part][label]
        for kind in ("missed", "extra"):
            if s[kind]:
                out.append(f"{label} {kind} ({len(s[kind])}): {', '.join(s[kind])}")
    return "\n".join(out)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.eval_labels", description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", action="store_true", help="print the whole report as JSON")
    parser.add_argument("--split", choices=sorted(SPLITS), default="halves",
                        help="which servers are held out (default: halves, by the SHA-256 of the name)")
    parser.add_argument("--misses", choices=PARTS, default="dev",
                        help="the part whose misses and false alarms are printed (default: dev)")
    parser.add_argument("--server", action="append", default=[], help="only this server's tools; repeatable")
    parser.add_argument("--out", type=Path, help="also write the JSON report here")
    parser.add_argument("--labels", type=Path, default=LABELS)
    parser.add_argument("--tools", type=Path, default=CATALOGS.folder / "tools.jsonl")
    args = parser.parse_args(argv)
    report = run(args.server, args.labels, args.tools, args.split)
    text = json.dumps(report, indent=1, ensure_ascii=False)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(text + "\n", encoding="utf-8")
    if args.json:
        print(text)
        return 0
    print(f"Labels set: {report['tools']} tools of {report['servers']} servers, split {args.split} "
          f"(dev {report['parts']['dev']}, held-out {report['parts']['held-out']}: "
          f"{', '.join(report['held_out_servers'])})\n")
    for view in VIEWS:
        print(f"## {view}: precision / recall (F1, support)\n\n{markdown(report, view)}\n")
    print(f"## confusions (policy view, {args.misses})\n\n{confusions(report, 'policy', args.misses)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
