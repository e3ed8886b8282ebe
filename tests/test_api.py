"""``import jit`` is the public API: every exported name resolves, and importing is cheap."""

from __future__ import annotations

import subprocess
import sys

import jit
import jit.errors


def test_every_exported_name_resolves() -> None:
    for name in jit.__all__:
        assert getattr(jit, name) is not None, name
    assert set(jit.__all__) <= set(dir(jit))


def test_exports_are_the_defining_modules_objects() -> None:
    from jit.catalog.ownership import open_catalog
    from jit.pipeline import sync
    from jit.process import tuned
    from jit.selection.compiler import Compiler
    from jit.selection.task import TaskContext
    from jit.selection.tiers import Tier

    assert (jit.Compiler, jit.TaskContext, jit.Tier, jit.open_catalog, jit.tuned, jit.sync) == \
        (Compiler, TaskContext, Tier, open_catalog, tuned, sync)
    # Every error class is exported, so `except jit.ServerError` needs no other import.
    assert set(jit.errors.__all__) <= set(jit.__all__)


def test_import_jit_loads_no_heavy_module() -> None:
    """The exports load on first use: `import jit` must not pull numpy, the catalog or the MCP SDK."""
    code = ("import sys, jit; heavy = [m for m in ('numpy', 'mcp', 'jit.catalog.store', 'jit.selection.compiler', 'jit.config') "
            "if m in sys.modules]; print(heavy)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60)
    assert out.stdout.strip() == "[]", out.stdout + out.stderr


def test_the_compile_path_loads_no_mcp_sdk() -> None:
    """What `jit compile` and a harness's compile() import (the catalog and the compiler) must not pull
    the MCP SDK's types (~0.14 s of a cold start): a helper of the store once imported jit.jsonrpc at
    module level, and a fresh process's imports went from 0.23 to 0.45 s."""
    code = ("import sys, jit.catalog.store, jit.selection.compiler; "
            "print([m for m in ('mcp', 'mcp_types', 'jit.jsonrpc') if m in sys.modules])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60)
    assert out.stdout.strip() == "[]", out.stdout + out.stderr
