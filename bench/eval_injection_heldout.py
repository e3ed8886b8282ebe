"""The injection checks on the held-out sets of ``bench/data/injection_heldout/``: the share of hostile
tool definitions flagged and of benign ones written to look hostile that are flagged, per set and
per category.

    python -m bench.eval_injection_heldout [--set 2|3|4] [--half even|odd] [--misses] [--json]

``--half`` keeps the rows whose id number is even (or odd): a set used to develop rules on one half
is measured on the other, before its misses are read. ``--misses`` lists each hostile row not flagged
and each benign row flagged, with its category and flags.

The detector sees each row's ``name``, ``description`` and ``input_schema`` only (the ``category``
and ``note`` fields give the answer away). The sets and how they were written:
bench/data/injection_heldout/README.md.
"""

from __future__ import annotations

import argparse
import json
import re
from collections import Counter
from pathlib import Path

from jit.injection.detect import detect_hostile_many
from jit.models import ToolDef

DATA = Path(__file__).parent / "data" / "injection_heldout"
#: The sets, by the files of the directory (``set<N>_hostile.jsonl``): a new set is measured once it is added.
_SET_FILE = re.compile(r"set(\d+)_hostile\.jsonl")
SETS = tuple(sorted((m.group(1) for p in DATA.glob("set*_hostile.jsonl") if (m := _SET_FILE.fullmatch(p.name))),
                    key=int))


def load(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def half(rows: list[dict], which: str) -> list[dict]:
    """The rows whose id number (``h041``, ``b2-017``: its last digits) is even or odd."""
    want = 0 if which == "even" else 1
    return [r for r in rows if int(re.search(r"(\d+)$", r["id"]).group(1)) % 2 == want]


def score(rows: list[dict]) -> dict:
    """Rows flagged, overall and per category, and each row's flags (``flags``: id -> flags)."""
    tools = [ToolDef(server="heldout", name=r["name"], description=r["description"],
                     input_schema=r.get("input_schema") or {"type": "object", "properties": {}}) for r in rows]
    found = detect_hostile_many(tools)
    hit = [bool(f) for f in found]
    total, flagged = Counter(r["category"] for r in rows), Counter(r["category"] for r, h in zip(rows, hit) if h)
    return {"flagged": sum(hit), "total": len(rows), "share": round(sum(hit) / max(1, len(rows)), 3),
            "by_category": {c: [flagged[c], n] for c, n in sorted(total.items())},
            "flags": {r.get("id", r["name"]): sorted(f) for r, f in zip(rows, found)}}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--set", choices=SETS, action="append", help="a set (default: all)")
    parser.add_argument("--half", choices=("even", "odd"), help="only the rows whose id number is even / odd")
    parser.add_argument("--misses", action="store_true", help="list the hostile rows missed and benign rows flagged")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    rows = {(s, kind): load(DATA / f"set{s}_{kind}.jsonl") for s in args.set or SETS for kind in ("hostile", "benign")}
    if args.half:
        rows = {key: half(r, args.half) for key, r in rows.items()}
    report = {s: {kind: score(rows[s, kind]) for kind in ("hostile", "benign")} for s in args.set or SETS}
    if args.json:
        print(json.dumps(report, indent=1))
        return
    for s, kinds in report.items():
        for kind, r in kinds.items():
            print(f"set {s} {kind}: {r['flagged']}/{r['total']} flagged = {r['share']:.3f}")
            for c, (f, n) in r["by_category"].items():
                print(f"  {c}: {f}/{n}")
            if args.misses:
                for row in rows[s, kind]:
                    flags = r["flags"][row["id"]]
                    if bool(flags) != (kind == "hostile"):
                        print(f"  {'missed' if kind == 'hostile' else 'flagged'} {row['id']} {row['category']} "
                              f"{row['name']} {' '.join(flags)}")


if __name__ == "__main__":
    main()
