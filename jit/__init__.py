"""jit: just-in-time tool selection for agent harnesses talking to many MCP servers.

The public API, importable from ``jit`` itself::

    from jit import Compiler, TaskContext, load_config, open_catalog, sync, tuned

====================================  ===================================================
``load_config``, ``Config``           the config file (:mod:`jit.config_files`, :mod:`jit.config`)
``Store``, ``open_catalog``           the catalog, and one scoped to a config's servers
``ClientManager``                     connections to the configured MCP servers
``sync``                              discover → store → analyze → embed
``Embedder``                          what a compile embeds with (the protocol, :mod:`jit.embedding.protocol`)
``SentenceTransformerEmbedder``       the embedding model through torch
``OnnxEmbedder``                      the same model and vectors through onnxruntime, no torch
``embedder_from_config``              the embedder ``embedding.runtime`` asks for (ONNX by default)
``Compiler``, ``TaskContext``         one shard spawn's task in, a ``ToolSet`` out
``ToolSet``, ``ScoredTool``, ``Tier`` what a compile returns (:mod:`jit.selection.toolset`,
                                      :mod:`jit.selection.scored_tool`, :mod:`jit.selection.tiers`)
``META_TOOL``, ``full_definition``    the ``jit_expand_tools`` meta-tool's name, and the definition a
                                      harness adds when the model asks it for a tool
                                      (:mod:`jit.selection.render`)
``DeferredTools``, ``SEARCH_TOOL``    one conversation's deferred ``tools`` array
                                      (``ToolSet.deferred()``), jit's search tool's name
                                      (:mod:`jit.selection.deferred`)
``HARNESS_SERVER``                    the server name of the harness's own tools
                                      (``available_tools.json``): a harness runs those itself
``tuned``                             the process owner's policies (:mod:`jit.process`)
``JitError`` and its subclasses       every error jit raises (:mod:`jit.errors`)
====================================  ===================================================

Only the errors are imported with the package; every other name loads its module on
first use (:pep:`562`), so ``import jit`` stays fast (the MCP SDK, the rules engine
and numpy load only when used) and cannot close an import cycle: modules inside
the package import their siblings, never the package (``__version__`` aside;
tests/test_layers.py checks both).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from .errors import (
    AnalysisError,
    CatalogBusyError,
    CatalogDamagedError,
    ConfigError,
    EmbeddingError,
    EvaluationError,
    InvalidArgumentsError,
    JitError,
    MigrationError,
    RuleError,
    SelectionError,
    ServerConnectError,
    ServerDisconnectedError,
    ServerError,
    ServerNotRegisteredError,
    ServerTimeoutError,
    ServerUnavailableError,
    StoreError,
    ToolCallError,
    ToolDeniedError,
    ToolNotApprovedError,
    ToolNotFoundError,
)

__version__ = "0.1.0"

#: Lazily exported name -> the module that defines it.
_LAZY: dict[str, str] = {
    "ClientManager": "jit.client.manager",
    "Compiler": "jit.selection.compiler",
    "Config": "jit.config",
    "load_config": "jit.config_files",
    "Embedder": "jit.embedding.protocol",
    "SentenceTransformerEmbedder": "jit.embedding.torch_embedder",
    "OnnxEmbedder": "jit.embedding.onnx_embedder",
    "embedder_from_config": "jit.embedding.factory",
    "open_catalog": "jit.catalog.ownership",
    "tuned": "jit.process",
    "ScoredTool": "jit.selection.scored_tool",
    "TaskContext": "jit.selection.task",
    "Tier": "jit.selection.tiers",
    "ToolSet": "jit.selection.toolset",
    "Store": "jit.catalog.store",
    "sync": "jit.pipeline",
    "META_TOOL": "jit.selection.render",
    "full_definition": "jit.selection.render",
    "DeferredTools": "jit.selection.deferred",
    "SEARCH_TOOL": "jit.selection.deferred",
    "HARNESS_SERVER": "jit.models",
}

__all__ = [
    "AnalysisError",
    "CatalogBusyError",
    "CatalogDamagedError",
    "ClientManager",
    "Compiler",
    "Config",
    "ConfigError",
    "DeferredTools",
    "Embedder",
    "EmbeddingError",
    "EvaluationError",
    "HARNESS_SERVER",
    "InvalidArgumentsError",
    "JitError",
    "META_TOOL",
    "MigrationError",
    "OnnxEmbedder",
    "RuleError",
    "SEARCH_TOOL",
    "ScoredTool",
    "SelectionError",
    "SentenceTransformerEmbedder",
    "ServerConnectError",
    "ServerDisconnectedError",
    "ServerError",
    "ServerNotRegisteredError",
    "ServerTimeoutError",
    "ServerUnavailableError",
    "Store",
    "StoreError",
    "TaskContext",
    "Tier",
    "ToolCallError",
    "ToolDeniedError",
    "ToolNotApprovedError",
    "ToolNotFoundError",
    "ToolSet",
    "__version__",
    "embedder_from_config",
    "full_definition",
    "load_config",
    "open_catalog",
    "sync",
    "tuned",
]

if TYPE_CHECKING:  # what type checkers and IDEs see; at run time __getattr__ loads these
    from .catalog.ownership import open_catalog
    from .catalog.store import Store
    from .client.manager import ClientManager
    from .config import Config
    from .config_files import load_config
    from .embedding.factory import embedder_from_config
    from .embedding.onnx_embedder import OnnxEmbedder
    from .embedding.protocol import Embedder
    from .embedding.torch_embedder import SentenceTransformerEmbedder
    from .models import HARNESS_SERVER
    from .pipeline import sync
    from .process import tuned
    from .selection.compiler import Compiler
    from .selection.deferred import SEARCH_TOOL, DeferredTools
    from .selection.render import META_TOOL, full_definition
    from .selection.scored_tool import ScoredTool
    from .selection.task import TaskContext
    from .selection.tiers import Tier
    from .selection.toolset import ToolSet


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # once loaded, a plain attribute
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))
