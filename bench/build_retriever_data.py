"""Build the retriever's training pairs (bench/data/retriever_train) from public tool-use datasets.

Each source is read from a git snapshot of its repository (the ``fetch`` mirror, or any clone:
``--seal``, ``--toolalpaca``, ``--gorilla`` name the git directories) at the commit the manifest
records, so the files are reproduced byte for byte::

    python -m bench.build_retriever_data --seal /work/.mirror/fairyshine+Seal-Tools/repo \\
        --toolalpaca /work/.mirror/tangqiaoyu+ToolAlpaca/repo --gorilla /work/.mirror/ShishirPatil+gorilla/repo

Two files come out: ``tools.jsonl.gz`` (``id``, ``source``, ``server``, ``name``, ``description``,
``params``: parameter name -> description) and ``pairs.jsonl.gz`` (``source``, ``query``, ``tools``:
the ids of the tools the query needs, ``candidates``: the ids the dataset offered the query beside
them, where it did). A tool's ``server`` is what groups tools the way an MCP server does: Seal-Tools'
field, ToolAlpaca's API, a BFCL function's dotted prefix (else the item it came with). None of the
sets jit is measured on is read here; :mod:`bench.check_retriever_overlap` then drops every pair
or tool that comes near one of them.
"""

from __future__ import annotations

import argparse
import ast
import gzip
import json
import subprocess
from pathlib import Path
from typing import Any

OUT = Path(__file__).resolve().parent / "data" / "retriever_train"

#: Commits the manifest names: the build refuses another one (the files would differ silently).
COMMITS = {
    "seal-tools": "ce753ecd60ed08dd376984035de531ab8421f1c6",
    "toolalpaca": "189069998d64a7baf1b4a1c3c4b2e75eb9d05532",
    "bfcl": "6ea57973c7a6097fd7c5915698c54c17c5b1b6c8",
}
#: Seal-Tools' splits whose files the snapshot holds (its train split is stored out of git, in LFS).
SEAL_SPLITS = ("dev", "test_in_domain", "test_out_domain")
BFCL_DIR = "berkeley-function-call-leaderboard/bfcl_eval/data"
BFCL_SETS = ("simple_python", "multiple", "parallel", "parallel_multiple",
             "live_simple", "live_multiple", "live_parallel", "live_parallel_multiple")
MAX_PARAM_DESC = 200


def _show(repo: Path, commit: str, path: str) -> str:
    return subprocess.run(["git", "--git-dir", str(repo), "show", f"{commit}:{path}"],
                          check=True, capture_output=True, text=True).stdout


def _check_commit(repo: Path, source: str) -> str:
    commit = COMMITS[source]
    subprocess.run(["git", "--git-dir", str(repo), "cat-file", "-e", f"{commit}^{{commit}}"], check=True)
    return commit


def _literal(value: Any) -> Any:
    """ToolAlpaca's fields are Python literals in a string, or already the object."""
    return ast.literal_eval(value) if isinstance(value, str) else value


def _params(props: Any) -> dict[str, str]:
    if not isinstance(props, dict):
        return {}
    out = {}
    for name, spec in props.items():
        desc = spec.get("description", "") if isinstance(spec, dict) else ""
        out[str(name)] = str(desc)[:MAX_PARAM_DESC]
    return out


class Builder:
    def __init__(self) -> None:
        self.tools: dict[str, dict[str, Any]] = {}
        self.pairs: list[dict[str, Any]] = []

    def tool(self, source: str, server: str, name: str, description: str, params: dict[str, str]) -> str:
        tid = f"{source}/{server}/{name}"
        if tid not in self.tools:
            self.tools[tid] = {"id": tid, "source": source, "server": server, "name": name,
                               "description": " ".join(description.split()), "params": params}
        return tid

    def pair(self, source: str, query: str, tools: list[str], candidates: list[str] | None = None) -> None:
        query = " ".join(query.split())
        if query and tools:
            row: dict[str, Any] = {"source": source, "query": query, "tools": sorted(set(tools))}
            if candidates:
                row["candidates"] = sorted(set(candidates) - set(tools))
            self.pairs.append(row)

    def seal_tools(self, repo: Path) -> None:
        commit = _check_commit(repo, "seal-tools")
        by_name: dict[str, str] = {}
        for line in _show(repo, commit, "Seal-Tools_Dataset/tool.jsonl").splitlines():
            t = json.loads(line)
            server = t.get("field", "").split("/")[-1].strip() or "tools"
            by_name[t["api_name"]] = self.tool("seal-tools", server, t["api_name"], t.get("api_description", ""),
                                               _params(t.get("parameters")))
        for split in SEAL_SPLITS:
            for line in _show(repo, commit, f"Seal-Tools_Dataset/{split}.jsonl").splitlines():
                item = json.loads(line)
                needed = [by_name[c["api"]] for c in item.get("calling", []) if c.get("api") in by_name]
                self.pair("seal-tools", item["query"], needed)

    def toolalpaca(self, repo: Path) -> None:
        commit = _check_commit(repo, "toolalpaca")
        for path in ("data/eval_real.json", "data/eval_simulated.json"):
            for api in json.loads(_show(repo, commit, path)):
                server = api["Name"]
                descs = _literal(api.get("Function_Description")) or {}
                ids = {}
                for fname, text in descs.items():
                    if fname == "components":  # the output formats, not a function
                        continue
                    head, _, rest = str(text).partition("\nParameters:")
                    try:
                        params = json.loads(rest.split("\nOutput:")[0].strip() or "{}")
                    except json.JSONDecodeError:
                        params = {}
                    ids[fname] = self.tool("toolalpaca", server, fname, head,
                                           {k: str(v)[:MAX_PARAM_DESC] for k, v in params.items()})
                instructions = _literal(api["Instructions"])
                answers = _literal(api["Golden_Answers"])
                for query, answer in zip(instructions, answers, strict=False):
                    needed = [ids[a["Action"]] for a in answer if a.get("Action") in ids]
                    self.pair("toolalpaca", query, needed, list(ids.values()))

    def bfcl(self, repo: Path) -> None:
        commit = _check_commit(repo, "bfcl")
        for name in BFCL_SETS:
            questions = _show(repo, commit, f"{BFCL_DIR}/BFCL_v4_{name}.json").splitlines()
            answers = {json.loads(a)["id"]: json.loads(a)
                       for a in _show(repo, commit, f"{BFCL_DIR}/possible_answer/BFCL_v4_{name}.json").splitlines()}
            for line in questions:
                item = json.loads(line)
                answer = answers.get(item["id"])
                if answer is None:
                    continue
                turn = [m["content"] for m in item["question"][0] if m.get("role") == "user"]
                if not turn:
                    continue
                ids = {}
                for fn in item["function"]:
                    fname = fn["name"]
                    server, _, short = fname.rpartition(".")
                    ids[fname] = self.tool("bfcl", server or "functions", short or fname, fn.get("description", ""),
                                           _params((fn.get("parameters") or {}).get("properties")))
                needed = [ids[k] for call in answer["ground_truth"] for k in call if k in ids]
                self.pair("bfcl", turn[-1], needed, list(ids.values()))

    def write(self, out: Path) -> None:
        out.mkdir(parents=True, exist_ok=True)
        used = {t for p in self.pairs for t in p["tools"] + p.get("candidates", [])}
        tools = [t for tid, t in sorted(self.tools.items()) if tid in used or t["source"] == "seal-tools"]
        _write_gz(out / "tools.jsonl.gz", tools)
        _write_gz(out / "pairs.jsonl.gz", self.pairs)


def _write_gz(path: Path, rows: list[dict[str, Any]]) -> None:
    data = "".join(json.dumps(r, ensure_ascii=False, sort_keys=True) + "\n" for r in rows).encode("utf-8")
    # mtime=0: the same rows give the same bytes.
    with open(path, "wb") as fh, gzip.GzipFile(fileobj=fh, mode="wb", mtime=0, filename="") as gz:
        gz.write(data)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--seal", type=Path, required=True, help="git directory of fairyshine/Seal-Tools")
    parser.add_argument("--toolalpaca", type=Path, required=True, help="git directory of tangqiaoyu/ToolAlpaca")
    parser.add_argument("--gorilla", type=Path, required=True, help="git directory of ShishirPatil/gorilla")
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args(argv)
    b = Builder()
    b.seal_tools(args.seal)
    b.toolalpaca(args.toolalpaca)
    b.bfcl(args.gorilla)
    b.write(args.out)
    print(f"{len(b.pairs)} pairs, {len(b.tools)} tools -> {args.out}")


if __name__ == "__main__":
    main()
