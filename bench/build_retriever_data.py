"""Build the retriever's training pairs (bench/data/retriever_train) from public tool-use datasets.

Each source is read from a git snapshot of its repository (the ``fetch`` mirror, or any clone:
``--seal``, ``--toolalpaca``, ``--gorilla``, ``--restgpt``, ``--nestful``, ``--acebench``,
``--tooltalk``, ``--tau2`` name the git directories; a source not named is not built) at the commit
the manifest records, so the committed files, the build of every source, are reproduced byte for byte::

    python -m bench.build_retriever_data --seal /work/.mirror/fairyshine+Seal-Tools/repo \\
        --toolalpaca /work/.mirror/tangqiaoyu+ToolAlpaca/repo --gorilla /work/.mirror/ShishirPatil+gorilla/repo \\
        --restgpt /work/.mirror/Yifan-Song793+RestGPT/repo --nestful /work/.mirror/IBM+NESTFUL/repo \\
        --acebench /work/.mirror/ACEBench+ACEBench/repo --tooltalk /work/.mirror/microsoft+ToolTalk/repo \\
        --tau2 /work/.mirror/sierra-research+tau2-bench/repo

Two files come out: ``tools.jsonl.gz`` (``id``, ``source``, ``server``, ``name``, ``description``,
``params``: parameter name -> description) and ``pairs.jsonl.gz`` (``source``, ``query``, ``tools``:
the ids of the tools the query needs, ``candidates``: the ids the dataset offered the query beside
them, where it did). A tool's ``server`` is what groups tools the way an MCP server does: Seal-Tools'
field, ToolAlpaca's API, a BFCL function's dotted prefix (else the item it came with), RestBench's
API (tmdb, spotify), an SGD service, ToolTalk's suite, a tau2 domain. The first three sources are
mostly one-call requests; the other five are tasks of several calls, most of them to sibling tools
of one server. None of the sets jit is measured on is read here; :mod:`bench.check_retriever_overlap`
then drops every pair or tool that comes near one of them.
"""

from __future__ import annotations

import argparse
import ast
import gzip
import json
import re
import subprocess
from pathlib import Path
from typing import Any

OUT = Path(__file__).resolve().parent / "data" / "retriever_train"

#: Commits the manifest names: the build refuses another one (the files would differ silently).
COMMITS = {
    "seal-tools": "ce753ecd60ed08dd376984035de531ab8421f1c6",
    "toolalpaca": "189069998d64a7baf1b4a1c3c4b2e75eb9d05532",
    "bfcl": "6ea57973c7a6097fd7c5915698c54c17c5b1b6c8",
    "restbench": "d99012860cb45323975bf5780152d7aa44f390f5",
    "nestful": "053cbde0446dddd31e8293f179085e1b39ab79b5",
    "acebench": "e6db74b735ead22c24f27367606a9408573b848f",
    "tooltalk": "e05f4ce6132c80ed33392b81535b077d56ab28fd",
    "tau2": "a2c024725189473d2d7cea3a5cfdbcc67478e41f",
}
#: Seal-Tools' splits whose files the snapshot holds (its train split is stored out of git, in LFS).
SEAL_SPLITS = ("dev", "test_in_domain", "test_out_domain")
BFCL_DIR = "berkeley-function-call-leaderboard/bfcl_eval/data"
BFCL_SETS = ("simple_python", "multiple", "parallel", "parallel_multiple",
             "live_simple", "live_multiple", "live_parallel", "live_parallel_multiple")
MAX_PARAM_DESC = 200
#: RestBench's two APIs: ``datasets/{api}.json`` holds the queries, ``specs/{api}_oas.json`` the OpenAPI spec.
RESTBENCH_APIS = ("tmdb", "spotify")
HTTP_METHODS = ("get", "put", "post", "delete", "patch")
#: NESTFUL's sets whose tools are not RapidAPI's (its executable set is: not read).
NESTFUL_SETS = ("glaive", "sgd")
ACEBENCH_DIR = "data_all/data_en"
#: ACEBench's categories whose gold names no tool: a refusal, or the wrong parameter of a request.
ACEBENCH_SKIP = ("special_irrelevant", "special_error_param")
TOOLTALK_SETS = ("data/tooltalk", "data/easy")
#: tau2's domains read: telecom's tasks.json is not in the snapshot; banking_knowledge's tasks are
#: role-play scripts whose calls go through generic unlock/call tools.
TAU2_DOMAINS = ("airline", "retail")
#: The fields of a tau2 user's instructions that say what the user wants and who they are.
TAU2_FIELDS = ("reason_for_call", "known_info", "task_instructions")
#: The sources whose tools are kept whether a query needs them or not: each server's whole catalogue,
#: whose other tools are the trainer's negatives (the other sources keep the tools a query needs or was offered).
WHOLE_CATALOGUES = ("seal-tools", "restbench", "nestful", "tooltalk", "tau2")
_MD_LINK = re.compile(r"\[([^\]]*)\]\([^)]*\)")
_TURN = re.compile(r"^(user|system):[ \t]*", re.M)
_NAMED_CALL = re.compile(r"([\w.]+)\(")
_CALL = re.compile(r"\s*\[\s*(\w+)\(")
_DOC_SECTION = re.compile(r"^(Args|Returns|Raises):[ \t]*$", re.M)


def _show(repo: Path, commit: str, path: str) -> str:
    return subprocess.run(["git", "--git-dir", str(repo), "show", f"{commit}:{path}"],
                          check=True, capture_output=True, text=True).stdout


def _ls(repo: Path, commit: str, folder: str) -> list[str]:
    """The paths of the entries directly in ``folder`` at ``commit``, sorted."""
    out = subprocess.run(["git", "--git-dir", str(repo), "ls-tree", "--name-only", commit, folder.rstrip("/") + "/"],
                         check=True, capture_output=True, text=True).stdout
    return sorted(out.splitlines())


def _check_commit(repo: Path, source: str) -> str:
    commit = COMMITS[source]
    subprocess.run(["git", "--git-dir", str(repo), "cat-file", "-e", f"{commit}^{{commit}}"], check=True)
    return commit


def _literal(value: Any) -> Any:
    """ToolAlpaca's fields are Python literals in a string, or already the object."""
    return ast.literal_eval(value) if isinstance(value, str) else value


def _described(props: Any) -> dict[str, Any]:
    """Parameter name -> its spec's ``description`` as given (``props``: name -> a spec), {} for no mapping."""
    if not isinstance(props, dict):
        return {}
    return {str(k): v.get("description", "") if isinstance(v, dict) else "" for k, v in props.items()}


def _params(props: Any) -> dict[str, str]:
    """Parameter name -> its description as written, cut (Seal-Tools', ToolAlpaca's and BFCL's)."""
    return {k: str(v)[:MAX_PARAM_DESC] for k, v in _described(props).items()}


def _clean(text: Any) -> str:
    """A text with Markdown links reduced to their words and its whitespace collapsed."""
    return " ".join(_MD_LINK.sub(r"\1", str(text or "")).split())


def _param_desc(text: Any) -> str:
    """A parameter's description cleaned (:func:`_clean`) and cut."""
    return _clean(text)[:MAX_PARAM_DESC]


def _descs(props: Any) -> dict[str, str]:
    """Parameter name -> its description, cleaned and cut (``props``: name -> a spec with ``description``)."""
    return {k: _param_desc(v) for k, v in _described(props).items()}


def _openapi(spec: dict[str, Any]) -> dict[str, tuple[str, str, dict[str, str]]]:
    """'METHOD /path' -> (name, description, params) of every operation of an OpenAPI spec: the name is
    the operationId (else 'METHOD /path'), the description its summary and description, the params
    its parameters (the path's too, references resolved) and its JSON body's properties."""
    shared = spec.get("components", {}).get("parameters", {})

    def resolve(prm: dict[str, Any]) -> dict[str, Any]:
        return shared.get(prm["$ref"].rsplit("/", 1)[-1], {}) if "$ref" in prm else prm

    out = {}
    for path, item in spec["paths"].items():
        for method in HTTP_METHODS:
            op = item.get(method)
            if not isinstance(op, dict):
                continue
            params = {}
            for prm in map(resolve, item.get("parameters", []) + op.get("parameters", [])):
                params[prm["name"]] = prm.get("description") or prm.get("schema", {}).get("description", "")
            body = op.get("requestBody", {}).get("content", {}).get("application/json", {}).get("schema", {})
            params.update({k: v.get("description", "") for k, v in body.get("properties", {}).items()})
            key = f"{method.upper()} {path}"
            summary = _clean(op.get("summary"))
            if summary and summary[-1] not in ".!?":
                summary += "."
            out[key] = (op.get("operationId") or key, _clean(f"{summary} {op.get('description') or ''}"),
                        {k: _param_desc(v) for k, v in params.items()})
    return out


def _user_turns(text: str) -> str:
    """The user's turns of an ACEBench dialogue ('user: ...', 'system: ...' lines), joined."""
    parts = _TURN.split(text)
    turns = [parts[i + 1] for i in range(1, len(parts) - 1, 2) if parts[i] == "user"]
    return " ".join(turns) if turns else text


def _gold_keys(truth: Any, offered: dict[str, str]) -> set[str]:
    """The offered functions an ACEBench ground truth calls: its keys (a repeated call's key is the
    name with '_1', '_2' after it)."""
    keys = {k for call in (truth if isinstance(truth, list) else [truth]) if isinstance(call, dict) for k in call}
    return {k if k in offered else re.sub(r"_\d+$", "", k) for k in keys} & set(offered)


def _called(dialogue: str, offered: dict[str, str]) -> set[str]:
    """The offered functions an ACEBench dialogue has already called ('system: [name(args), ...]' lines)."""
    return {n for line in dialogue.splitlines() if line.startswith("system: [")
            for n in _NAMED_CALL.findall(line) if n in offered}


def _milestone_tools(milestone: list[Any], offered: dict[str, str]) -> set[str] | None:
    """The offered functions every path of an ACEBench agent milestone calls (a milestone is one path,
    a list of '[name(args)]' strings, or a list of such paths); None if a call does not read."""
    paths = milestone if milestone and isinstance(milestone[0], list) else [milestone]
    needed = None
    for path in paths:
        calls = [_CALL.match(c) for c in path]
        if not all(calls):
            return None
        names = {c.group(1) for c in calls if c} & set(offered)
        needed = names if needed is None else needed & names
    return needed


def _class_attrs(cls: ast.ClassDef) -> dict[str, ast.expr]:
    return {t.id: node.value for node in cls.body if isinstance(node, ast.Assign)
            for t in node.targets if isinstance(t, ast.Name)}


def _docstring(doc: str) -> tuple[str, dict[str, str]]:
    """A Google-style docstring's description (the text before its sections) and its ``Args:``
    (name -> description; a line indented more than the names continues the one before)."""
    parts = _DOC_SECTION.split(doc)
    params: dict[str, str] = {}
    for head, body in zip(parts[1::2], parts[2::2], strict=True):
        lines = [line for line in body.splitlines() if line.strip()]
        if head != "Args" or not lines:
            continue
        indent = len(lines[0]) - len(lines[0].lstrip())
        name = ""
        for line in lines:
            if len(line) - len(line.lstrip()) == indent:
                name, _, text = line.strip().partition(":")
                name = name.split(" (")[0]
                params[name] = text
            elif name:
                params[name] += " " + line.strip()
    return parts[0], {k: _param_desc(v) for k, v in params.items()}


def _tool_methods(source: str) -> dict[str, tuple[str, dict[str, str]]]:
    """name -> (description, params) of the methods a tau2 toolkit marks with ``@is_tool``."""
    out = {}
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.FunctionDef) and any(
                isinstance(d, ast.Call) and isinstance(d.func, ast.Name) and d.func.id == "is_tool"
                for d in node.decorator_list):
            out[node.name] = _docstring(ast.get_docstring(node) or "")
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

    def restbench(self, repo: Path) -> None:
        """RestBench (RestGPT's): a query and the API calls of its solution, in order."""
        commit = _check_commit(repo, "restbench")
        for api in RESTBENCH_APIS:
            spec = json.loads(_show(repo, commit, f"specs/{api}_oas.json"))
            ids = {key: self.tool("restbench", api, name, desc, params)
                   for key, (name, desc, params) in _openapi(spec).items()}
            for item in json.loads(_show(repo, commit, f"datasets/{api}.json")):
                calls = [c.strip() for c in item["solution"]]
                if all(c in ids for c in calls):  # two solutions name a path the spec lacks (a typo)
                    self.pair("restbench", item["query"], [ids[c] for c in calls])

    def nestful(self, repo: Path) -> None:
        """NESTFUL's non-executable sets: a request and its sequence of calls (``var_result`` is not a tool)."""
        commit = _check_commit(repo, "nestful")
        for name in NESTFUL_SETS:
            base = f"data/non-executable/non-executable-{name}"
            ids: dict[str, str] = {}
            for t in json.loads(_show(repo, commit, f"{base}-spec.json")):
                server, _, short = t["name"].rpartition(".")
                args = t.get("parameters") or t.get("query_parameters") or t.get("arguments")
                ids.setdefault(t["name"], self.tool("nestful", server or name, short, t.get("description", ""),
                                                    _descs(args)))
            for item in json.loads(_show(repo, commit, f"{base}-data.json")):
                self.pair("nestful", item["input"], [ids[c["name"]] for c in item["output"] if c["name"] in ids])

    def acebench(self, repo: Path) -> None:
        """ACEBench's English items: the user's turns, and the tools the dialogue has called beside the
        ones its ground truth calls. The items of a multi-turn dialogue each hold it up to their request,
        so its last item is the one pair. An agent task run from several start states is one pair: the
        tools every run's milestone calls (turning the WiFi on or logging in depends on the state)."""
        commit = _check_commit(repo, "acebench")
        dialogues: dict[str, tuple[str, set[str], dict[str, str]]] = {}
        agent: dict[str, list[tuple[set[str], dict[str, str]]]] = {}
        for path in _ls(repo, commit, ACEBENCH_DIR):
            name = path.rsplit("/", 1)[-1]
            if not name.endswith(".json"):
                continue
            answers = {a["id"]: a for a in map(json.loads, _show(repo, commit, f"{ACEBENCH_DIR}/possible_answer/{name}")
                                               .splitlines())}
            for item in map(json.loads, _show(repo, commit, path).splitlines()):
                category = re.sub(r"(_\d+)+$", "", item["id"])
                gold = answers.get(item["id"])
                if category in ACEBENCH_SKIP or gold is None:
                    continue
                # No app groups ACEBench's functions: a tool's server is its item's category; the two
                # agent categories offer one simulated phone's (and a travel app's) functions.
                server = "agent" if category.startswith("agent") else category
                offered = {}
                for fn in item["function"]:
                    schema = fn.get("parameters") or fn.get("arguments") or {}
                    offered[fn["name"]] = self.tool("acebench", server, fn["name"], fn.get("description", ""),
                                                    _descs(schema.get("properties")))
                if "mile_stone" in gold:
                    needed = _milestone_tools(gold["mile_stone"], offered)
                    if needed is not None:
                        agent.setdefault(item["question"], []).append((needed, offered))
                    continue
                needed = _gold_keys(gold["ground_truth"], offered) | _called(item["question"], offered)
                key = item["id"].rsplit("_", 1)[0] if category.startswith("normal_multi_turn") else item["id"]
                if key not in dialogues or len(item["question"]) > len(dialogues[key][0]):
                    dialogues[key] = (item["question"], needed, offered)
        seen = set()  # four requests are items of two categories: the first is kept
        for question, needed, offered in dialogues.values():
            query = _user_turns(question)
            if query not in seen:
                seen.add(query)
                self.pair("acebench", query, [offered[n] for n in needed], list(offered.values()))
        for question, runs in agent.items():
            offered = {n: t for _, ts in runs for n, t in ts.items()}
            common = set.intersection(*(names for names, _ in runs))
            self.pair("acebench", question, [offered[n] for n in common], list(offered.values()))

    def tooltalk(self, repo: Path) -> None:
        """ToolTalk's conversations: the user's turns up to the last one a call answers, and the APIs used."""
        commit = _check_commit(repo, "tooltalk")
        apis, suites = {}, {}
        for path in _ls(repo, commit, "src/tooltalk/apis"):
            if not path.endswith(".py"):
                continue
            for cls in ast.parse(_show(repo, commit, path)).body:
                if not isinstance(cls, ast.ClassDef):
                    continue
                attrs = _class_attrs(cls)
                if "name" in attrs and isinstance(attrs.get("apis"), ast.List):
                    suites.update({e.id: ast.literal_eval(attrs["name"]) for e in attrs["apis"].elts
                                   if isinstance(e, ast.Name)})
                elif "description" in attrs and "parameters" in attrs:
                    apis[cls.name] = (ast.literal_eval(attrs["description"]), ast.literal_eval(attrs["parameters"]))
        ids = {name: self.tool("tooltalk", suites[name], name, desc, _descs(params))
               for name, (desc, params) in apis.items() if name in suites}
        for folder in TOOLTALK_SETS:
            for path in _ls(repo, commit, folder):
                conv = json.loads(_show(repo, commit, path))
                turns, asked = [], 0
                for turn in conv["conversation"]:
                    if turn["role"] == "user":
                        turns.append(turn["text"])
                    elif turn.get("apis"):
                        asked = len(turns)
                self.pair("tooltalk", " ".join(turns[:asked]), [ids[a] for a in conv["apis_used"] if a in ids])

    def tau2(self, repo: Path) -> None:
        """tau2-bench's tasks: what the simulated user is told to want, and the agent's gold actions."""
        commit = _check_commit(repo, "tau2")
        for domain in TAU2_DOMAINS:
            ids = {name: self.tool("tau2", domain, name, desc, params) for name, (desc, params)
                   in _tool_methods(_show(repo, commit, f"src/tau2/domains/{domain}/tools.py")).items()}
            for task in json.loads(_show(repo, commit, f"data/tau2/domains/{domain}/tasks.json")):
                told = task["user_scenario"]["instructions"]
                query = " ".join(t for t in (str(told.get(f) or "") for f in TAU2_FIELDS) if any(map(str.isalpha, t)))
                actions = (task.get("evaluation_criteria") or {}).get("actions") or []
                self.pair("tau2", query, [ids[a["name"]] for a in actions
                                          if a["name"] in ids and a.get("requestor") in (None, "assistant")])

    def write(self, out: Path) -> None:
        out.mkdir(parents=True, exist_ok=True)
        used = {t for p in self.pairs for t in p["tools"] + p.get("candidates", [])}
        tools = [t for tid, t in sorted(self.tools.items()) if tid in used or t["source"] in WHOLE_CATALOGUES]
        _write_gz(out / "tools.jsonl.gz", tools)
        _write_gz(out / "pairs.jsonl.gz", self.pairs)


def _write_gz(path: Path, rows: list[dict[str, Any]]) -> None:
    data = "".join(json.dumps(r, ensure_ascii=False, sort_keys=True) + "\n" for r in rows).encode("utf-8")
    # mtime=0: the same rows give the same bytes.
    with open(path, "wb") as fh, gzip.GzipFile(fileobj=fh, mode="wb", mtime=0, filename="") as gz:
        gz.write(data)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    readers = {"seal": ("fairyshine/Seal-Tools", Builder.seal_tools),
               "toolalpaca": ("tangqiaoyu/ToolAlpaca", Builder.toolalpaca),
               "gorilla": ("ShishirPatil/gorilla", Builder.bfcl),
               "restgpt": ("Yifan-Song793/RestGPT (RestBench)", Builder.restbench),
               "nestful": ("IBM/NESTFUL", Builder.nestful),
               "acebench": ("ACEBench/ACEBench", Builder.acebench),
               "tooltalk": ("microsoft/ToolTalk", Builder.tooltalk),
               "tau2": ("sierra-research/tau2-bench", Builder.tau2)}
    for flag, (repo, _) in readers.items():
        parser.add_argument(f"--{flag}", type=Path, help=f"git directory of {repo}")
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args(argv)
    if not any(getattr(args, flag) for flag in readers):
        parser.error("name at least one source's git directory")
    b = Builder()
    for flag, (_, read) in readers.items():
        if getattr(args, flag):
            read(b, getattr(args, flag))
    b.write(args.out)
    print(f"{len(b.pairs)} pairs, {len(b.tools)} tools -> {args.out}")


if __name__ == "__main__":
    main()
