"""Rug pulls: tools whose definition changes after jit first trusted it.

A server's tool descriptions are instructions to the model, so a definition that
changes after the user started relying on the tool (a "rug pull") must not
inherit the trust the old text earned. jit's answer, in layers:

* **History.** The catalog keeps every earlier definition of a tool, with the
  usage earned under it (``tool_history``, migration 0004). The new definition
  starts with no usage of its own, so the policy's usage points do not carry over.
* **Approval.** The first definition jit sees of a tool is trusted on first use;
  any later one is *changed, awaiting approval* until ``jit approve`` records its
  hash. Approval is per definition hash: a further change needs a new approval,
  while a change back to an approved definition needs none.
* **Visibility.** ``jit sync`` names each changed tool and what changed, ``jit
  tools`` marks the ones awaiting approval, ``jit show`` prints a diff against the
  previous definition, and ``jit serve`` logs a warning for each.
* **Tiering.** A tool awaiting approval carries the :data:`CHANGED_FLAG` flag into
  the selection rules, where flags cap a tool below Full (``rules/policy.dl``,
  ``tier_cap``): the same path that keeps hostile-looking text out of Full.
* **Pinning** (``security.pin_definitions``). A tool awaiting approval is not
  served at all: blocked from every selection and search, and a call is refused
  before anything reaches the server (:class:`~jit.errors.ToolNotApprovedError`).

This module holds the pure parts (what changed, the diff, the reports); the
catalog writes are :meth:`jit.catalog.store.Store.sync_tools` and :meth:`jit.catalog.store.Store.approve`.
"""

from __future__ import annotations

import difflib
import json
from typing import TYPE_CHECKING, Any

# The catalog records what changed on every sync, so the pure comparison lives below the
# store (models, errors); the reports here that read the store use it.
from ..errors import approve_hint
from ..models import DEFINITION_FIELDS, changed_fields

if TYPE_CHECKING:
    from ..models import StoredTool
    from .store import Store

__all__ = ["CHANGED_FLAG", "FIELDS", "PIN_REASON", "change_report", "definition_diff", "pending_report"]

#: The flag a tool awaiting approval carries into the rules (``flag(T, F)``), like a hostile-text flag.
CHANGED_FLAG = "definition_changed"

#: Why compile() blocks a tool awaiting approval under ``security.pin_definitions``.
PIN_REASON = "definition changed since it was approved (security.pin_definitions): run `jit approve`"

#: Definition fields as users name them, in the order they are reported.
FIELDS = DEFINITION_FIELDS


def _lines(value: Any) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        return value.splitlines()
    return json.dumps(value, indent=2, sort_keys=True, ensure_ascii=False).splitlines()


def definition_diff(old: dict[str, Any], new: dict[str, Any], *, context: int = 1) -> list[dict[str, Any]]:
    """A compact unified diff per changed field: ``[{"field", "diff": [lines]}]``.

    Schemas are compared as sorted, indented JSON so that key order never shows up
    as a change; ``context`` lines of unchanged text surround each change.
    """
    out = []
    for key, label in FIELDS:
        a, b = old.get(key), new.get(key)
        if a == b:
            continue
        lines = list(difflib.unified_diff(_lines(a), _lines(b), "previous", "current", n=context, lineterm=""))
        out.append({"field": label, "diff": lines[2:]})  # the ---/+++ header says nothing a caller needs
    return out


def _current(stored: StoredTool) -> dict[str, Any]:
    t = stored.tool
    return {"title": t.title, "description": t.description, "input_schema": t.input_schema,
            "output_schema": t.output_schema, "annotations": t.annotations}


def change_report(store: Store, stored: StoredTool, *, diff: bool = False) -> dict[str, Any]:
    """A tool's definition status: approved or awaiting approval, what changed since its
    previous definition (and, with ``diff``, the diff), and its earlier definitions with
    the usage each earned (full definitions only with ``diff``)."""
    t = stored.tool
    history = store.definition_history(t.server, t.name)
    report: dict[str, Any] = {
        "approved": stored.approved,
        "approvals": store.approvals(t.server, t.name),
        "changed": [],
        "previous": [
            {k: v for k, v in h.items() if k not in ("id", "server", "name") and (diff or k != "definition")}
            for h in history
        ],
    }
    if history:
        previous = history[0]["definition"]
        report["changed"] = changed_fields(previous, _current(stored))
        if diff:
            report["diff"] = definition_diff(previous, _current(stored))
    if not stored.approved:
        report["hint"] = approve_hint(t.server, t.name)
    return report


def pending_report(store: Store, server: str | None = None) -> list[dict[str, Any]]:
    """Every tool awaiting approval (of ``server``): what changed, since when, the hashes."""
    out = []
    for st in store.tools(server, approved=False):
        history = store.definition_history(st.tool.server, st.tool.name)
        previous = history[0] if history else None
        out.append({
            "server": st.tool.server,
            "tool": st.tool.name,
            "definition_hash": st.definition_hash,
            "previous_hash": previous["definition_hash"] if previous else None,
            "changed": changed_fields(previous["definition"], _current(st)) if previous else [],
            "changed_at": previous["replaced_at"] if previous else None,
            "online": st.online,
        })
    return out
