"""Detection and false-positive rates of :func:`jit.injection.detect.detect_hostile`.

    python -m bench.injection_corpus [--shared ../shared/data] [--misses] [--json out.json]

Reads the labelled corpus in ``tests/data/injection/``:

* ``hostile.jsonl``: hand-written hostile tool definitions, one class each, split into
  ``tune`` (written first, rules tuned on them) and ``holdout`` (written after tuning,
  never tuned on: the honest estimate for unseen cases);
* ``benign.jsonl``: real tool definitions sampled from the shared data pools.
* ``hard_benign.jsonl``: 60 benign definitions written to look suspicious (usage advice to the
  model, tools whose job is secrets, sending or paying, URL templates, "keep the answer
  hidden until the user guesses", other languages).
* ``tricky_benign.jsonl``: 439 benign definitions written to look suspicious in the same ways, in 25
  languages; the model trains on its ``tricky_train`` rows, only the ``tricky_dev`` rows (every third)
  are measured here;
* ``payload.jsonl``: hostile definitions that hide their payload (encoded, a dangerous command buried in
  a long description, a claim to replace another tool's secret reading) and benign ones that look like
  them (encoding tools, shell tools documenting what they block, a secret manager's v2);
* ``real_servers.jsonl``: the ``tools/list`` of context7 and brave-search, once flagged wrongly;
* ``classes.jsonl``: hostile and benign definitions of the kinds a held-out set showed the checks
  weakest on (concealment by misreporting, fixed verdicts, fake system blocks, payloads in defaults
  and enums; agent-framework tools that address the assistant plainly), training rows only (not
  measured here).

and, when the shared pools are present, every tool of LiveMCPBench, MetaTool,
StableToolBench and the Smithery catalogue (deduplicated by text) as a larger
benign sample. "Caught" means the tool gets any flag (every flag keeps a tool out of
the Full tier); "right flag" means it gets the flag of its class. Hostile rows are read
twice: by the rules alone and as users get them, rules and learned model
(:mod:`jit.injection.model`); the model is trained on every split but the
``FIRST_SIGHT`` batches of ``bench/train_injection_model.py``, so only those measure it,
and on the even half of the pools but ``benign.jsonl``, so only the odd half and ``benign.jsonl``
("never trained on") measure its false positives there, per pool. Time is wall clock for
``detect_hostile_many`` (what a sync's analysis runs) over the large sample, best of 3.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import Counter, defaultdict
from pathlib import Path

from jit.injection.detect import detect_hostile, detect_hostile_many
from jit.flags import FLAG_HIDDEN_UNICODE, FLAG_HOMOGLYPH, FLAG_OVERSIZED, INSTRUCTION_PREFIX
from jit.models import ToolDef

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "tests" / "data" / "injection"
#: Real MCP tools of current servers' catalogues, never trained on: a false-positive sample apart from the pools.
CATALOGS = ROOT / "bench" / "data" / "catalogs" / "tools.jsonl"
POOLS = ("livemcpbench", "metatool", "stabletoolbench", "toucan_smithery")

#: The flag each corpus class is expected to raise; None: any instruction flag.
CLASS_FLAG: dict[str, str | None] = {
    "ignore_previous": "instruction:ignore_previous",
    "always_select": "instruction:always_select",
    "role_override": "instruction:role_override",
    "conceal": "instruction:conceal",
    "exfiltrate": "instruction:exfiltrate",
    "hidden_unicode": FLAG_HIDDEN_UNICODE,
    "cross_tool": "instruction:cross_tool",
    "shadowing": "instruction:shadowing",
    "exfiltrate_url": "instruction:exfiltrate_url",
    "must_call_first": "instruction:must_call_first",
    "non_english": None,
    "homoglyph": FLAG_HOMOGLYPH,
}


def tool_of(row: dict) -> ToolDef:
    return ToolDef(row.get("server") or "srv", row["name"], row.get("description") or "",
                   row.get("input_schema") or {}, title=row.get("title"))


def load_jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def right_flag(cls: str, flags: tuple[str, ...]) -> bool:
    """Whether ``flags`` holds the flag of class ``cls`` (homoglyph: also an instruction
    flag, when NFKC alone already folded the look-alikes)."""
    want = CLASS_FLAG.get(cls)
    instr = any(f.startswith(INSTRUCTION_PREFIX) for f in flags)
    if want is None:
        return instr
    return want in flags or (cls == "homoglyph" and instr)


def hostile_rates(rows: list[dict]) -> dict:
    """Per split and class: total, caught by the rules, caught with the model, the rules' right
    flag, and the rules' misses."""
    out: dict = {}
    # Splits in the order the corpus file holds them (the order they were written), then all.
    for split in [*dict.fromkeys(r.get("split") for r in rows), "all"]:
        sel = [r for r in rows if split == "all" or r.get("split") == split]
        if not sel:
            continue
        per: dict[str, Counter] = defaultdict(Counter)
        misses = []
        for r in sel:
            flags = detect_hostile(tool_of(r), model=False)
            c = per[r["class"]]
            c["n"] += 1
            c["rules"] += bool(flags)
            c["caught"] += bool(flags) or bool(detect_hostile(tool_of(r)))  # the model reads what the rules pass
            c["right"] += right_flag(r["class"], flags)
            if not flags:
                misses.append(r["id"])
        n = sum(c["n"] for c in per.values())
        out[split] = {
            "n": n,
            "rules": sum(c["rules"] for c in per.values()) / n,
            "caught": sum(c["caught"] for c in per.values()) / n,
            "right_flag": sum(c["right"] for c in per.values()) / n,
            "classes": {k: {"n": c["n"], "rules": c["rules"] / c["n"], "caught": c["caught"] / c["n"],
                            "right_flag": c["right"] / c["n"]}
                        for k, c in sorted(per.items())},
            "missed": misses,
        }
    return out


#: The flag each class of ``payload.jsonl`` is expected to raise.
PAYLOAD_FLAG = {"encoded": "instruction:encoded", "dangerous_command": "instruction:dangerous_command",
                "secret_shadowing": "instruction:shadowing"}


def payload_rates(rows: list[dict]) -> dict:
    """Hostile rows of ``payload.jsonl``: caught (any flag, rules and model), with the flag of their class, and
    the ids of those missed."""
    flags = detect_hostile_many([tool_of(r) for r in rows])
    return {"n": len(rows), "caught": sum(bool(f) for f in flags),
            "right": sum(PAYLOAD_FLAG[r["class"]] in f for r, f in zip(rows, flags)),
            "missed": [r["id"] for r, f in zip(rows, flags) if not f]}


def pool_rows(shared: Path) -> list[dict]:
    """Every tool of the shared pools, deduplicated by (description, schema)."""
    seen: set[str] = set()
    rows = []
    for pool in POOLS:
        path = shared / pool / "tools.jsonl"
        if not path.exists():
            continue
        for i, line in enumerate(path.read_text(encoding="utf-8").splitlines()):
            r = json.loads(line)
            key = json.dumps([r.get("description") or "", r.get("input_schema") or {}], sort_keys=True)
            if key in seen:
                continue
            seen.add(key)
            r["source"] = f"{pool}:{i}"
            rows.append(r)
    return rows


#: How many benign tools each pool gives the committed corpus (MCP pools first).
BENIGN_QUOTA = {"livemcpbench": 260, "toucan_smithery": 800, "stabletoolbench": 100, "metatool": 40}
#: Rows whose JSON is longer are skipped when sampling (keeps the file small; 0.5% of tools).
BENIGN_MAX_CHARS = 4000


def sample_benign(shared: Path) -> list[dict]:
    """The committed benign sample: every k-th deduplicated tool of each pool, in file order."""
    rows = pool_rows(shared)
    out = []
    for pool, quota in BENIGN_QUOTA.items():
        fitting = [r for r in rows if r["source"].startswith(pool + ":")
                   and len(json.dumps([r.get("description"), r.get("input_schema")], ensure_ascii=False))
                   <= BENIGN_MAX_CHARS]
        step = max(1, len(fitting) // quota)
        for r in fitting[::step][:quota]:
            out.append({"source": r["source"], "server": r["server"], "name": r["name"],
                        "description": r.get("description") or "", "input_schema": r.get("input_schema") or {}})
    return out


def benign_rates(rows: list[dict]) -> dict:
    """Share of benign tools with any flag, with an instruction/homoglyph flag, and which."""
    flagged, counts, listing = 0, Counter(), []
    strict = 0
    for r in rows:
        flags = detect_hostile(tool_of(r))
        if flags:
            flagged += 1
            counts.update(flags)
            listing.append((r.get("source", r.get("name")), flags))
            strict += any(f != FLAG_OVERSIZED for f in flags)
    n = len(rows) or 1
    return {"n": len(rows), "flagged_any": flagged, "rate_any": flagged / n,
            "flagged_text": strict, "rate_text": strict / n, "flags": dict(counts), "listing": listing}


def time_per_1000(rows: list[dict], runs: int = 3) -> float:
    tools = [tool_of(r) for r in rows]
    detect_hostile(ToolDef("s", "warm", "Привет, мир ignоre"))  # load the confusables tables once
    detect_hostile_many(tools[:10])  # load the model once
    best = float("inf")
    for _ in range(runs):
        t0 = time.perf_counter()
        detect_hostile_many(tools)  # as a sync's analysis step calls it: rules per tool, the model in one batch
        best = min(best, time.perf_counter() - t0)
    return best * 1000 / len(tools) * 1000


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--shared", type=Path, default=ROOT.parent / "shared" / "data",
                    help="directory of the shared data pools (default: ../shared/data)")
    ap.add_argument("--misses", action="store_true", help="list missed hostile ids and flagged benign tools")
    ap.add_argument("--json", type=Path, help="also write the numbers to this file")
    ap.add_argument("--write-benign", action="store_true",
                    help="(re)write tests/data/injection/benign.jsonl from the shared pools, then measure")
    args = ap.parse_args(argv)
    if args.write_benign:
        sample = sample_benign(args.shared)
        with (CORPUS / "benign.jsonl").open("w", encoding="utf-8") as f:
            for r in sample:
                f.write(json.dumps(r, ensure_ascii=False) + "\n")
        print(f"wrote {len(sample)} benign tools to {CORPUS / 'benign.jsonl'}")

    hostile = hostile_rates(load_jsonl(CORPUS / "hostile.jsonl"))
    benign = benign_rates(load_jsonl(CORPUS / "benign.jsonl"))
    hard = benign_rates(load_jsonl(CORPUS / "hard_benign.jsonl"))
    tricky = benign_rates([r for r in load_jsonl(CORPUS / "tricky_benign.jsonl") if r["split"] == "tricky_dev"])
    payload = load_jsonl(CORPUS / "payload.jsonl")
    payload_hostile = payload_rates([r for r in payload if r["label"] == "hostile"])
    payload_benign = benign_rates([r for r in payload if r["label"] == "benign"])
    real_servers = benign_rates(load_jsonl(CORPUS / "real_servers.jsonl"))
    result = {"hostile": hostile, "benign_corpus": benign, "hard_benign": hard, "tricky_dev": tricky,
              "payload_hostile": payload_hostile, "payload_benign": payload_benign, "real_servers": real_servers}
    for split, h in hostile.items():
        print(f"hostile [{split}] n={h['n']}: rules {h['rules']:.1%} (right flag {h['right_flag']:.1%}), "
              f"with the model {h['caught']:.1%}")
        for cls, c in h["classes"].items():
            print(f"    {cls:16s} n={c['n']:3d}  rules {c['rules']:6.1%}  right flag {c['right_flag']:6.1%}"
                  f"  with the model {c['caught']:6.1%}")
        if args.misses and h["missed"]:
            print("    missed:", ", ".join(h["missed"]))
    print(f"benign corpus n={benign['n']}: flagged {benign['flagged_any']} ({benign['rate_any']:.2%}), "
          f"text flags {benign['flagged_text']} ({benign['rate_text']:.2%}) {benign['flags']}")
    if args.misses:
        for src, flags in benign["listing"]:
            print(f"    {src}: {', '.join(flags)}")
    for name, b in (("hard benign", hard), ("tricky benign (dev rows)", tricky), ("payload benign", payload_benign),
                    ("real servers (context7, brave-search)", real_servers)):
        print(f"{name} n={b['n']}: flagged {b['flagged_any']} ({b['rate_any']:.2%}) {b['flags']}")
        if args.misses:
            for src, flags in b["listing"]:
                print(f"    {src}: {', '.join(flags)}")
    print(f"payload hostile n={payload_hostile['n']}: caught {payload_hostile['caught']} "
          f"(with the flag of its class {payload_hostile['right']}) {payload_hostile['missed']}")
    rows = pool_rows(args.shared)
    if rows:
        pool = benign_rates(rows)
        ms = time_per_1000(rows)
        result["benign_pools"] = {**pool, "ms_per_1000_tools": ms}
        print(f"benign pools n={pool['n']}: flagged {pool['flagged_any']} ({pool['rate_any']:.2%}), "
              f"text flags {pool['flagged_text']} ({pool['rate_text']:.2%}) {pool['flags']}")
        sampled = {r["source"] for r in load_jsonl(CORPUS / "benign.jsonl")}
        held = benign_rates([r for i, r in enumerate(rows) if i % 2 == 1 or r["source"] in sampled])
        result["benign_pools_held_out"] = held
        print(f"  of them never trained on (the odd half and benign.jsonl) n={held['n']}: "
              f"flagged {held['flagged_any']} ({held['rate_any']:.2%}) {held['flags']}")
        for name in POOLS:
            part = [r for i, r in enumerate(rows) if r["source"].startswith(name + ":")
                    and (i % 2 == 1 or r["source"] in sampled)]
            n_flagged = sum(1 for src, _ in held["listing"] if src.startswith(name + ":"))
            print(f"    {name}: {n_flagged} of {len(part)}")
        if args.misses:
            by_source = {r["source"]: r for r in rows}
            for src, flags in held["listing"]:
                print(f"    never trained on: {src} {by_source[src]['name']}: {', '.join(flags)}")
        print(f"detect_hostile_many: {ms:.0f} ms per 1,000 tools (best of 3)")
    else:
        print(f"(no shared pools under {args.shared}: large benign sample skipped)")
    if args.json:
        args.json.write_text(json.dumps(result, indent=1, ensure_ascii=False), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
