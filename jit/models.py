"""Domain objects shared by every part of jit: ``ToolDef`` (a tool as a server lists it, its
definition hash and the texts embedded and searched), ``ToolAnalysis``, ``ServerStatus``,
``ServerRecord``, ``StoredTool``, ``ToolState``, ``SyncResult``.

Vocabulary (the same everywhere): a *server* offers *tools*; a *shard* is an
agent role; *skeleton* tools are always given to a shard, *flesh* tools are
scored; each selected tool lands in one *tier*.
"""

from __future__ import annotations

import enum
import hashlib
import json
from dataclasses import dataclass, field
from typing import Any, NamedTuple

__all__ = [
    "DEFINITION_FIELDS",
    "HARNESS_SERVER",
    "MAX_EMBED_TEXT_CHARS",
    "ServerRecord",
    "ServerStatus",
    "StoredTool",
    "SyncResult",
    "ToolAnalysis",
    "ToolDef",
    "ToolState",
    "canonical_json",
    "changed_fields",
    "tool_key",
]

#: Pseudo-server that owns the harness-side tools declared in available_tools.json.
HARNESS_SERVER = "harness"

#: The longest server, tool or shard name a request takes (a meta-tool of ``jit serve``, an argument of
#: the CLI). Discovery keeps tool names to 128 characters, so a longer one names nothing, and an error
#: would only echo it back.
MAX_NAME_CHARS = 256

#: Longest text embedded per tool. The model reads at most 256 word pieces (~1,000-1,500
#: characters); the rest is never seen but would still cost tokenising time and memory.
MAX_EMBED_TEXT_CHARS = 4000


def canonical_json(value: Any) -> str:
    """Stable JSON text: sorted keys, no whitespace, unicode kept."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)


def tool_key(server: str, name: str) -> str:
    """The ``server/tool`` key jit uses in CLIs, overrides and explanations."""
    return f"{server}/{name}"


class ServerStatus(str, enum.Enum):
    """Connection state of one upstream server, as persisted in the catalog."""

    UNKNOWN = "unknown"  # configured, never connected in this catalog
    CONNECTING = "connecting"
    CONNECTED = "connected"
    DISCONNECTED = "disconnected"  # was connected, went away
    ERROR = "error"  # failed to connect / initialize / discover
    DISABLED = "disabled"  # ``enabled: false`` in config
    #: jit closed the connection itself (a CLI command ended) after the server answered:
    #: its tools are as available as they were at that last contact.
    IDLE = "idle"

    @property
    def online(self) -> bool:
        """Reachable at the last contact: connected now, or closed cleanly by jit."""
        return self in (ServerStatus.CONNECTED, ServerStatus.IDLE)


@dataclass(frozen=True, slots=True)
class ToolDef:
    """A tool exactly as a server (or available_tools.json) defines it."""

    server: str
    name: str
    description: str = ""
    input_schema: dict[str, Any] = field(default_factory=lambda: {"type": "object", "properties": {}})
    output_schema: dict[str, Any] | None = None
    title: str | None = None
    annotations: dict[str, Any] | None = None

    @property
    def key(self) -> str:
        return tool_key(self.server, self.name)

    @property
    def definition_hash(self) -> str:
        """Hash of everything that defines the tool; any change re-analyzes and re-embeds."""
        payload = canonical_json(
            {
                "server": self.server,
                "name": self.name,
                "title": self.title,
                "description": self.description,
                "input_schema": self.input_schema,
                "output_schema": self.output_schema,
                "annotations": self.annotations,
            }
        )
        return hashlib.sha256(payload.encode("utf-8")).hexdigest()

    def parameter_text(self) -> str:
        """Every parameter name and description in the input schema, nested ones included."""
        parts: list[str] = []
        _walk_schema(self.input_schema, parts, depth=0)
        return " ".join(parts)

    def embedding_text(self) -> str:
        """The text that is embedded: server, name, title, description and parameter *names*.

        Parameter descriptions are left to lexical search: on LiveMCPBench they lower
        MiniLM's recall and change little elsewhere (docs/quality.md, "The reference
        measurement", dense vs dense+schema), and they make texts longer, which is
        what embedding time grows with.
        """
        name = self.name.replace("_", " ").replace("-", " ")
        head = " ".join(p for p in (self.server, name, self.title or "") if p)
        props = self.input_schema.get("properties") if isinstance(self.input_schema, dict) else None
        params = ", ".join(str(k) for k in props) if isinstance(props, dict) else ""
        text = f"{head}: {self.description}" + (f" | parameters: {params}" if params else "")
        return text[:MAX_EMBED_TEXT_CHARS]


#: The fields of a definition as users name them, in the order changes are reported
#: (``jit sync``, ``jit show``, :mod:`jit.catalog.approval`).
DEFINITION_FIELDS: tuple[tuple[str, str], ...] = (
    ("title", "title"),
    ("description", "description"),
    ("input_schema", "input schema"),
    ("output_schema", "output schema"),
    ("annotations", "annotations"),
)


def changed_fields(old: dict[str, Any], new: dict[str, Any]) -> list[str]:
    """What differs between two definitions (dicts with the keys of :data:`DEFINITION_FIELDS`)."""
    return [label for key, label in DEFINITION_FIELDS if old.get(key) != new.get(key)]


def _walk_schema(schema: Any, out: list[str], depth: int) -> None:
    if not isinstance(schema, dict) or depth > 6:
        return
    props = schema.get("properties")
    if isinstance(props, dict):
        for pname, pschema in props.items():
            out.append(str(pname))
            if isinstance(pschema, dict):
                desc = pschema.get("description")
                if isinstance(desc, str) and desc:
                    out.append(desc)
                _walk_schema(pschema, out, depth + 1)
    items = schema.get("items")
    if isinstance(items, dict):
        _walk_schema(items, out, depth + 1)
    for combo in ("anyOf", "oneOf", "allOf"):
        alts = schema.get(combo)
        if isinstance(alts, list):
            for alt in alts:
                _walk_schema(alt, out, depth + 1)


@dataclass(frozen=True, slots=True)
class ToolAnalysis:
    """What an analyzer says about one tool; the facts the selection rules reason over.

    Scores are integers 0–100 (pyDatalog stores floats as float32).
    """

    categories: tuple[str, ...] = ()
    capabilities: tuple[str, ...] = ()
    domains: tuple[str, ...] = ()
    shard_affinity: dict[str, int] = field(default_factory=dict)
    condensed: str = ""
    use_cases: tuple[str, ...] = ()
    analyzer: str = "offline"
    #: Reasons the tool text looks like an instruction to the model (prompt injection).
    flags: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {
            "categories": list(self.categories),
            "capabilities": list(self.capabilities),
            "domains": list(self.domains),
            "shard_affinity": dict(self.shard_affinity),
            "condensed": self.condensed,
            "use_cases": list(self.use_cases),
            "analyzer": self.analyzer,
            "flags": list(self.flags),
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ToolAnalysis:
        return cls(
            categories=tuple(data.get("categories", ())),
            capabilities=tuple(data.get("capabilities", ())),
            domains=tuple(data.get("domains", ())),
            shard_affinity={str(k): int(v) for k, v in data.get("shard_affinity", {}).items()},
            condensed=str(data.get("condensed", "")),
            use_cases=tuple(data.get("use_cases", ())),
            analyzer=str(data.get("analyzer", "offline")),
            flags=tuple(data.get("flags", ())),
        )


@dataclass(frozen=True, slots=True)
class ServerRecord:
    """A server as the catalog knows it."""

    name: str
    transport: str
    status: ServerStatus
    status_changed_at: float | None = None
    last_seen: float | None = None
    last_error: str | None = None
    server_name: str | None = None
    server_version: str | None = None
    protocol_version: str | None = None
    capabilities: dict[str, Any] = field(default_factory=dict)
    instructions: str | None = None
    #: The live process behind a ``connecting``/``connected`` status ("pid 123", "pid 123 on host").
    holder: str | None = None
    #: Why the status is what it is, when jit changed it itself (e.g. its holder exited without closing).
    note: str | None = None


@dataclass(frozen=True, slots=True)
class StoredTool:
    """A catalog row: the definition plus what jit knows about it."""

    id: int
    tool: ToolDef
    definition_hash: str
    server_status: ServerStatus
    analysis: ToolAnalysis | None = None
    needs_analysis: bool = False
    needs_embedding: bool = False
    calls: int = 0
    errors: int = 0
    #: The current definition hash is trusted: seen first, or approved (``jit approve``).
    #: False: the definition changed since and awaits approval (see jit/catalog/approval.py).
    approved: bool = True

    @property
    def key(self) -> str:
        return self.tool.key

    @property
    def online(self) -> bool:
        return self.server_status.online


class ToolState(NamedTuple):
    """What the catalog can say of a tool without parsing its definition (``Store.tool_states``):
    a reader that kept the states it last saw knows which tools changed and reloads only those."""

    definition_hash: str
    #: The hash of the text its vector is made from (``ToolDef.embedding_text``).
    text_hash: str
    needs_embedding: int
    #: When its analysis was made; None: it has none yet (an interrupted or unfinished sync).
    analyzed_at: float | None
    #: Its server's status as this host sees it (a ``ServerStatus`` value).
    status: str
    #: 1: its definition is trusted (seen first, or approved); 0: it awaits ``jit approve``.
    approved: int
    calls: int
    errors: int

    def changed_since(self, other: ToolState) -> bool:
        """Whether anything but the usage counts differs from ``other``: the definition read with
        ``other`` is no longer this tool's."""
        return self[:-2] != other[:-2]

    def with_usage(self, calls: int, errors: int) -> ToolState:
        return self._replace(calls=calls, errors=errors)


@dataclass(slots=True)
class SyncResult:
    """What one catalog update changed for one server."""

    server: str
    added: list[str] = field(default_factory=list)
    changed: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    unchanged: int = 0
    #: Per changed (or changed and re-added) tool, what differs from its previous definition:
    #: "title", "description", "input schema", "output schema", "annotations".
    changes: dict[str, list[str]] = field(default_factory=dict)
    #: Tools of this sync whose definition is not an approved one (a rug pull until reviewed).
    awaiting_approval: list[str] = field(default_factory=list)

    @property
    def touched(self) -> bool:
        return bool(self.added or self.changed or self.removed)
