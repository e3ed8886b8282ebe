"""The injection checks on the held-out sets of ``bench/data/injection_heldout/``: the share of hostile
tool definitions flagged and of benign ones written to look hostile that are flagged, per set and
per category.

    python -m bench.eval_injection_heldout [--set 2|3|4] [--json]

The detector sees each row's ``name``, ``description`` and ``input_schema`` only (the ``category``
and ``note`` fields give the answer away). The sets and how they were written:
bench/data/injection_heldout/README.md.
"""

from __future__ import annotations

import argparse
import json
from collections import Counter
from pathlib import Path

from jit.injection.detect import detect_hostile_many
from jit.models import ToolDef

DATA = Path(__file__).parent / "data" / "injection_heldout"
SETS = ("2", "3", "4")


def load(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def score(rows: list[dict]) -> dict:
    """Rows flagged, overall and per category."""
    tools = [ToolDef(server="heldout", name=r["name"], description=r["description"],
                     input_schema=r.get("input_schema") or {"type": "object", "properties": {}}) for r in rows]
    hit = [bool(f) for f in detect_hostile_many(tools)]
    total, flagged = Counter(r["category"] for r in rows), Counter(r["category"] for r, h in zip(rows, hit) if h)
    return {"flagged": sum(hit), "total": len(rows), "share": round(sum(hit) / len(rows), 3),
            "by_category": {c: [flagged[c], n] for c, n in sorted(total.items())}}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--set", choices=SETS, action="append", help="a set (default: all)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    report = {s: {kind: score(load(DATA / f"set{s}_{kind}.jsonl")) for kind in ("hostile", "benign")}
              for s in args.set or SETS}
    if args.json:
        print(json.dumps(report, indent=1))
        return
    for s, kinds in report.items():
        for kind, r in kinds.items():
            print(f"set {s} {kind}: {r['flagged']}/{r['total']} flagged = {r['share']:.3f}")
            for c, (f, n) in r["by_category"].items():
                print(f"  {c}: {f}/{n}")


if __name__ == "__main__":
    main()
