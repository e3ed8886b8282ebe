"""Plain-data payloads of the catalog and of selections: the dicts front ends return.

What ``jit … --json`` prints and what ``jit serve`` returns from ``describe_tool``,
``compile_tools`` and its resources are the same dicts, built here once.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from .analysis.analyze import effective_analysis, hostile_flags
from .catalog.approval import change_report
from .config import Config, ServeConfig
from .errors import ToolNotApprovedError
from .models import HARNESS_SERVER, ServerRecord, ServerStatus, StoredTool

if TYPE_CHECKING:
    from .catalog.store import Store
    from .selection.toolset import ToolSet

__all__ = ["add_search_schemas", "analysis_of", "describe", "described_for_model", "iso_utc", "server_rows", "summarize", "tool_counts", "withhold_flagged"]


def tool_counts(store: Store) -> dict[str, int]:
    """Tools per server in the catalog (from their names alone: no definition is read)."""
    return dict(Counter(server for server, _name in store.tool_heads()))


def iso_utc(ts: float | None) -> str | None:
    """A catalog time (seconds since the epoch) as ISO-8601 UTC, ``2025-06-01T12:00:00Z``: what
    a person or a client reading JSON can take as a date without knowing how jit stores it."""
    if ts is None:
        return None
    return datetime.fromtimestamp(ts, UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


def server_rows(config: Config, records: list[ServerRecord], counts: dict[str, int]) -> list[dict[str, Any]]:
    """Configured servers with their catalog state, plus catalog-only ones (the harness,
    when it has tools).

    What ``jit servers`` prints and ``jit serve``'s ``jit://servers`` resource returns.
    """
    by_name = {r.name: r for r in records}
    names = list(config.servers) + [r.name for r in records if r.name not in config.servers]
    unresolved = config.unresolved()  # servers this environment cannot start: their reason, not the catalog's
    rows = []
    for name in names:
        rec = by_name.get(name)
        cfg = config.servers.get(name)
        if name == HARNESS_SERVER and cfg is None and not counts.get(name):
            continue  # no harness tools (no available_tools.json, or an empty one): nothing to show
        if cfg is not None:
            target = cfg.shown()  # as written, ${VAR} unexpanded, secrets masked
        else:
            target = "available_tools.json" if rec and rec.transport == "harness" else ""
        rows.append({
            "server": name,
            "transport": cfg.transport if cfg is not None else (rec.transport if rec else ""),
            "configured": cfg is not None,
            "enabled": cfg.enabled if cfg is not None else True,
            "status": (config.server_status(name, rec.status, rec.last_seen) if rec
                       else ServerStatus.DISABLED if cfg is not None and not cfg.enabled
                       else ServerStatus.ERROR if name in unresolved else ServerStatus.UNKNOWN).value,
            "tools": counts.get(name, 0),
            "last_seen": iso_utc(rec.last_seen) if rec else None,
            "last_error": unresolved.get(name) or (rec.last_error if rec else None),
            # The live process behind a connecting/connected status, and why jit changed a status itself.
            "held_by": rec.holder if rec else None,
            "status_note": rec.note if rec else None,
            "server_name": rec.server_name if rec else None,
            "server_version": rec.server_version if rec else None,
            "target": target,
        })
    return rows


def analysis_of(config: Config, stored: StoredTool) -> dict[str, Any] | None:
    """The analysis selection uses: the stored one with available_tools.json overrides applied
    (a tool not analysed yet: the hostile-text flags found in it now, which the selection applies)."""
    if stored.analysis is None and stored.tool.server != HARNESS_SERVER and \
            config.available_tools.override_for(stored.tool.server, stored.tool.name) is None \
            and not hostile_flags(stored):
        return None  # not analyzed yet, nothing declared for it, and nothing flagged in it
    return effective_analysis(stored, config.available_tools, shards=config.shards).to_json()


def describe(config: Config, store: Store, stored: StoredTool) -> dict[str, Any]:
    """A tool's full record as ``jit show --json`` and ``jit serve``'s ``describe_tool`` return it."""
    from .selection.render import rendered_names

    tool = stored.tool
    usage = store.usage(tool.server, tool.name) or {}
    record = store.server(tool.server)
    status = config.server_status(tool.server, stored.server_status, record.last_seen if record else None)
    return {
        "server": tool.server,
        "tool": tool.name,
        # as a tool set and search_tools name it (a hash where the name had to change or two collide).
        # Read over this server's and the harness's tools (a harness tool keeps its bare name, so it can
        # take a server's rendered name); two servers' names collide only in contrived cases (a server
        # name ending in "_" beside a tool name starting with "_"), which this one read does not see.
        "name": rendered_names(store.tool_heads({tool.server, HARNESS_SERVER})).get(
            (tool.server, tool.name), f"{tool.server}__{tool.name}"),
        "online": status.online,
        "status": status.value,
        "definition": {
            "name": tool.name,
            "title": tool.title,
            "description": tool.description,
            "input_schema": tool.input_schema,
            "output_schema": tool.output_schema,
            "annotations": tool.annotations,
        },
        "analysis": analysis_of(config, stored),
        "definition_hash": stored.definition_hash,
        # Approved or changed since (a rug pull until reviewed), and the earlier definitions' usage.
        "definition_status": change_report(store, stored),
        "pending": {"analysis": stored.needs_analysis, "embedding": stored.needs_embedding},
        "usage": {
            "calls": usage.get("calls", 0),
            "errors": usage.get("errors", 0),
            "total_latency_ms": usage.get("total_latency_ms", 0.0),
            "last_called_at": usage.get("last_called_at"),
            "last_error": usage.get("last_error"),
        },
    }


def withhold_flagged(record: dict[str, Any], flags: Sequence[str]) -> dict[str, Any]:
    """A :func:`describe` record as a model may read it (``jit serve``'s ``describe_tool``): when the
    tool's text is flagged as hostile (``flags``, after the user's ``trust_flags`` waivers), every
    piece of its server's text is withheld, as in a compiled tool set and ``search_tools``, and
    ``withheld`` says why and how the user can vouch for it. The user's own view (``jit show``)
    keeps everything."""
    if not flags:
        return record
    note = f"(withheld: flagged {', '.join(sorted(flags))})"
    definition = record["definition"]
    annotations = definition.get("annotations")
    out = {**record, "definition": {
        **definition, "title": None, "description": note, "input_schema": None, "output_schema": None,
        # The hints are the server's booleans; its free text (a title) is withheld with the rest.
        "annotations": {k: v for k, v in annotations.items() if isinstance(v, bool)} if annotations else annotations,
    }}
    if out.get("analysis"):
        out["analysis"] = {**out["analysis"], "condensed": note, "use_cases": []}
    out["withheld"] = {
        "flags": sorted(flags),
        "reason": "the tool's text looks like instructions to the model, so jit does not pass it on",
        "waive": (f"the user can vouch for it in available_tools.json: "
                  f'"overrides": {{"{record["server"]}/{record["tool"]}": {{"trust_flags": {json.dumps(sorted(flags))}}}}}'),
    }
    return out


def described_for_model(config: Config, store: Store, stored: StoredTool) -> dict[str, Any]:
    """A tool's :func:`describe` record as a model may read it, once its role may have the tool
    (``jit serve``'s ``describe_tool`` and ``jit://tools/…``, an agent framework's
    ``jit_describe_tool``): a definition awaiting approval under ``security.pin_definitions`` is
    refused (its text is what awaits review), and flagged text is withheld (:func:`withhold_flagged`;
    a tool not analysed yet has its text checked now, ~1 ms)."""
    if config.security.pin_definitions and not stored.approved:
        raise ToolNotApprovedError(server=stored.tool.server, tool=stored.tool.name)
    return withhold_flagged(describe(config, store, stored), hostile_flags(stored, config.available_tools))


def summarize(toolset: ToolSet) -> dict[str, Any]:
    """The tool set as plain data: every selected tool with its tier and scores."""
    return {
        "shard": toolset.shard,
        "task": toolset.task,
        "budget": toolset.budget,
        "tokens_used": toolset.tokens_used,
        "warnings": list(toolset.warnings),
        "tools": [
            {
                "name": s.name,
                "server": s.server,
                "tool": s.tool_name,
                "tier": s.tier.value,
                "skeleton": s.skeleton,
                "step": s.step,
                "offline": s.offline,
                "final": s.final,
                "logic": s.logic,
                "vector": s.vector,
                "tokens": s.tokens,
            }
            for s in toolset.selected()
        ],
        "excluded": sum(1 for s in toolset.tools if s.tier.value == "excluded"),
    }


def add_search_schemas(hits: list[dict[str, Any]], tools: Sequence[StoredTool], flags: Sequence[tuple[str, ...]],
                       bounds: ServeConfig) -> None:
    """Give a tool search's first hits their ``input_schema`` (as ``describe_tool`` gives it), in rank order, while
    at most ``bounds.search_schemas`` hits and ``bounds.search_schema_tokens`` tokens of schema are
    given; a schema that would pass the token bound is skipped, a smaller one after it may fit.

    With the schema in hand the model calls the tool next (``call_tool`` in ``jit serve``), without a ``describe_tool`` turn.
    No schema is given for text flagged as hostile (``flags``, per tool: the analyzer's, or for a
    tool not analysed yet what :func:`~jit.analysis.analyze.hostile_flags` finds now), nor for a
    definition awaiting approval: those are withheld from the summary too, and ``describe_tool``
    shows them with why."""
    from .selection.tokens import EstimateCounter, compact_json

    count = EstimateCounter().count_text
    given = spent = 0
    for hit, st, flagged in zip(hits, tools, flags, strict=True):
        if given >= bounds.search_schemas:
            return
        if not st.approved or flagged:
            continue
        schema = st.tool.input_schema or {"type": "object", "properties": {}}
        tokens = count(compact_json(schema))
        if spent + tokens > bounds.search_schema_tokens:
            continue
        hit["input_schema"] = schema
        given += 1
        spent += tokens
