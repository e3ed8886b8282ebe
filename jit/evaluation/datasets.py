"""The benchmark data of ``jit eval``: named datasets, tool pools and scored queries.

A dataset names tool pool files (``tools.jsonl``: ``{server, name, description,
input_schema}``) and a ``queries.jsonl`` (``query`` with ``gold`` or ``gold_groups``),
relative to the data dir (``$JIT_DATA_DIR``). Every defect in a file names the file
and the line (:class:`~jit.errors.EvaluationError`). :mod:`jit.evaluation.evaluate`
measures on them.
"""

from __future__ import annotations

import json
import os
import random
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import EvaluationError
from ..models import ToolDef

__all__ = [
    "DATASETS",
    "METATOOL_SAMPLE",
    "DatasetSpec",
    "EvalQuery",
    "Pool",
    "check_data",
    "default_data_dir",
    "load_pool",
    "load_queries",
]

#: Queries in the fixed metatool sample (docs/quality.md, "The reference measurement").
METATOOL_SAMPLE = 2000


@dataclass(frozen=True, slots=True)
class DatasetSpec:
    """A benchmark: tool pool files and a queries file (paths relative to the data dir
    unless absolute). ``sample`` keeps that many queries, chosen by
    ``random.Random(0).sample`` and kept in file order."""

    name: str
    tools: tuple[str, ...]
    queries: str
    sample: int | None = None
    description: str = ""


DATASETS: dict[str, DatasetSpec] = {
    spec.name: spec
    for spec in (
        DatasetSpec("livemcpbench", ("livemcpbench/tools.jsonl",), "livemcpbench/queries.jsonl",
                    description="95 human-written multi-tool MCP tasks over 70 real MCP servers"),
        DatasetSpec("livemcpbench+toucan", ("livemcpbench/tools.jsonl", "toucan_smithery/tools_live.jsonl"),
                    "livemcpbench/queries.jsonl",
                    description="livemcpbench queries, with Toucan's 6,044 live Smithery tools as distractors"),
        DatasetSpec("stabletoolbench", ("stabletoolbench/tools.jsonl",), "stabletoolbench/queries.jsonl",
                    description="765 multi-API RapidAPI queries (ToolBench G1-G3 solvable test set)"),
        DatasetSpec("metatool", ("metatool/tools.jsonl",), "metatool/queries.jsonl", sample=METATOOL_SAMPLE,
                    description="single-tool intents over 199 OpenAI plugins (a fixed 2,000-query sample)"),
    )
}


def default_data_dir() -> Path:
    """``$JIT_DATA_DIR``, else ``../shared/data`` beside the repository root."""
    env = os.environ.get("JIT_DATA_DIR")
    if env:
        return Path(env).expanduser()
    return Path(__file__).resolve().parents[3] / "shared" / "data"  # jit/evaluation/ -> beside the repo


#: A checkout carries LiveMCPBench's files here (the tests use them); a wheel does not.
CHECKOUT_DATA_DIR = Path(__file__).resolve().parents[2] / "tests" / "data"


def check_data(spec: DatasetSpec, data_dir: Path) -> None:
    """Raise an :class:`EvaluationError` that says where benchmark data comes from when a
    named dataset's files are not in ``data_dir``: the data is not part of jit, so the first
    ``jit eval`` in a fresh clone meets this before anything else (and before the model loads).

    A set of one's own (absolute paths) is left to the readers, which name the missing file."""
    wanted = [Path(f) for f in (*spec.tools, spec.queries)]
    missing = [f for f in wanted if not f.is_absolute() and not (data_dir / f).is_file()]
    if not missing:
        return
    what = (f"data directory not found: {data_dir}" if not data_dir.is_dir()
            else f"benchmark data for {spec.name!r} not found: no {data_dir / missing[0]}")
    local = CHECKOUT_DATA_DIR
    here = (f"; this checkout carries it in {local} (--data-dir {local})"
            if all((local / f).is_file() for f in wanted) else "")
    raise EvaluationError(
        f"{what}. The benchmark data is not part of jit: point --data-dir DIR or $JIT_DATA_DIR at a folder "
        f"holding {', '.join(map(str, wanted))}{here}; docs/quality.md (\"The data\") says where each set comes "
        f"from, and --tools/--queries score a set of your own",
        path=str(data_dir),
    )


@dataclass(frozen=True, slots=True)
class Pool:
    """The tools of a run, deduplicated by ``(server, name)`` (first file wins)."""

    tools: list[ToolDef]
    index: dict[tuple[str, str], int]
    files: tuple[str, ...]
    duplicates_dropped: int = 0

    @property
    def servers(self) -> int:
        return len({t.server for t in self.tools})


@dataclass(frozen=True, slots=True)
class EvalQuery:
    """One scored query: its text and gold groups as pool indices."""

    id: str
    text: str
    groups: tuple[tuple[int, ...], ...]


def _resolve(data_dir: Path, rel: str) -> Path:
    p = Path(rel)
    return p if p.is_absolute() else data_dir / p


def _jsonl(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """``(line number, object)`` of each non-blank line; any defect names file and line."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise EvaluationError(f"{path}: file not found", path=str(path)) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise EvaluationError(f"{path}: cannot read: {exc}", path=str(path)) from exc
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            raise EvaluationError(f"{path}:{n}: invalid JSON: {exc.msg} (column {exc.colno})",
                                  path=str(path), line=n) from None
        if not isinstance(row, dict):
            raise EvaluationError(f"{path}:{n}: expected a JSON object, got {type(row).__name__}",
                                  path=str(path), line=n)
        yield n, row


def _field(row: dict[str, Any], key: str, path: Path, n: int, *, required: bool = True) -> str:
    value = row.get(key)
    if value is None and not required:
        return ""
    if not isinstance(value, str) or (required and not value):
        raise EvaluationError(f"{path}:{n}: {key!r} must be a non-empty string", path=str(path), line=n)
    return value


def load_pool(paths: Sequence[Path]) -> Pool:
    """Read ``tools.jsonl`` files ({server, name, description, input_schema}) into one pool."""
    tools: list[ToolDef] = []
    index: dict[tuple[str, str], int] = {}
    dropped = 0
    for path in paths:
        for n, row in _jsonl(path):
            server, name = _field(row, "server", path, n), _field(row, "name", path, n)
            description = _field(row, "description", path, n, required=False)
            schema = row.get("input_schema")
            if schema is None:
                schema = {"type": "object", "properties": {}}
            if not isinstance(schema, dict):
                raise EvaluationError(f"{path}:{n}: 'input_schema' must be a JSON object", path=str(path), line=n)
            if (server, name) in index:
                # Real catalogues repeat a few (server, name) rows (Toucan: 8); the first is kept.
                dropped += 1
                continue
            index[(server, name)] = len(tools)
            tools.append(ToolDef(server=server, name=name, description=description, input_schema=schema))
    if not tools:
        raise EvaluationError(f"the tool pool is empty ({', '.join(map(str, paths))})")
    return Pool(tools, index, tuple(str(p) for p in paths), dropped)


def _tool_ref(ref: Any, pool: Pool, path: Path, n: int) -> int:
    if not isinstance(ref, dict) or not isinstance(ref.get("server"), str) or not isinstance(ref.get("name"), str):
        raise EvaluationError(f"{path}:{n}: a gold tool must be an object with 'server' and 'name' strings",
                              path=str(path), line=n)
    key = (ref["server"], ref["name"])
    if key not in pool.index:
        raise EvaluationError(
            f"{path}:{n}: gold tool {key[0]}/{key[1]} is not in the tool pool ({', '.join(pool.files)})",
            path=str(path), line=n)
    return pool.index[key]


def load_queries(path: Path, pool: Pool, *, sample: int | None = None) -> tuple[list[EvalQuery], int, str]:
    """Read ``queries.jsonl`` against ``pool``.

    Returns ``(scored queries, queries skipped for empty gold, gold kind)``; gold kind
    is ``"gold_groups"``, ``"gold"`` or ``"mixed"``. ``gold_groups`` wins when present.
    With ``sample``, ``random.Random(0).sample`` picks that many lines, kept in file order.
    """
    rows = list(_jsonl(path))
    if sample is not None and sample < len(rows):
        rows = [rows[i] for i in sorted(random.Random(0).sample(range(len(rows)), sample))]
    queries: list[EvalQuery] = []
    skipped = 0
    kinds: set[str] = set()
    for n, row in rows:
        text = _field(row, "query", path, n)
        if "gold_groups" in row and row["gold_groups"] is not None:
            raw, kind = row["gold_groups"], "gold_groups"
            if not isinstance(raw, list) or not all(isinstance(g, list) for g in raw):
                raise EvaluationError(f"{path}:{n}: 'gold_groups' must be a list of lists of tools",
                                      path=str(path), line=n)
        elif "gold" in row:
            raw, kind = row["gold"], "gold"
            if not isinstance(raw, list):
                raise EvaluationError(f"{path}:{n}: 'gold' must be a list of tools", path=str(path), line=n)
            raw = [[ref] for ref in raw]
        else:
            raise EvaluationError(f"{path}:{n}: query has neither 'gold' nor 'gold_groups'", path=str(path), line=n)
        kinds.add(kind)
        groups = tuple(tuple(dict.fromkeys(_tool_ref(r, pool, path, n) for r in g)) for g in raw if g)
        if not groups:
            skipped += 1
            continue
        queries.append(EvalQuery(str(row.get("id", f"line {n}")), text, groups))
    if not queries:
        raise EvaluationError(f"{path}: no query with gold to score ({skipped} skipped for empty gold)",
                              path=str(path))
    return queries, skipped, kinds.pop() if len(kinds) == 1 else "mixed"
