"""The ``jit`` command line: a thin layer over the library.

Each command parses its arguments, calls the library (config, store, sync,
compiler, client manager, serve) and prints the result, as a readable table or,
with ``--json``, as JSON for scripts. Errors from the one exception tree end
the command with a message on stderr and an exit code a script can act on:

====  =====================================================================
code  meaning
====  =====================================================================
0     success
1     any other jit error (catalog, embedding model, rules, analysis)
2     bad usage: unknown option, malformed ``--args``, unknown shard or budget
3     configuration error (the message names the file and the key)
4     a server is unreachable: offline, failed to connect, timed out, went away
5     no such server or tool
6     the tool ran and reported an error
7     the tool's definition changed and awaits ``jit approve`` (``security.pin_definitions``)
130   interrupted
====  =====================================================================

Heavy imports (torch through the embedder, the MCP SDK) happen inside the
commands that need them, so ``jit servers`` or ``jit --help`` start fast. This
package itself imports nothing at first: :func:`main` lets ``jit serve`` on stdio
answer ``initialize`` before anything heavy loads (jit/serve/early.py), then loads
the commands; ``app`` and the other names below load them on first use (:pep:`562`).
"""

from __future__ import annotations

import importlib
import os
import sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # what type checkers see; at run time __getattr__ loads these
    from .importer import import_servers as import_servers
    from .selection import FORMATS as FORMATS
    from .selection import compile_toolset as compile_toolset
    from .shared import EXIT_CODES, app
    from .shared import exit_code as exit_code

__all__ = ["EXIT_CODES", "app", "main"]

#: Lazily exported name -> the module of this package that defines it.
_LAZY = {"app": "shared", "EXIT_CODES": "shared", "exit_code": "shared", "import_servers": "importer",
         "FORMATS": "selection", "compile_toolset": "selection"}


def _commands() -> None:
    """Import the command modules: each registers its commands on ``app``, in the order of ``jit --help``."""
    from . import catalog, definitions, selection, usage, importer, frontends, doctor  # noqa: F401  # isort: skip


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    _commands()
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value


# --------------------------------------------------------------------------- entry point


def _refuse_undecodable(args: list[str]) -> None:
    """Exit 2 with one line if an argument holds bytes that are not UTF-8 (Python keeps them as
    lone surrogates, which no catalog, JSON or terminal write accepts: a traceback later)."""
    for i, arg in enumerate(args, 1):
        try:
            arg.encode("utf-8")
        except UnicodeEncodeError as exc:
            raw = arg.encode("utf-8", "surrogateescape")
            sys.stderr.write(f"error: argument {i} is not valid UTF-8 (byte {exc.start}): {raw!r}\n")
            raise SystemExit(2) from None


def main(argv: list[str] | None = None) -> None:
    """The ``jit`` console script (exits the process with the command's exit code).

    Called as the process entry (``argv`` None: the console script, ``python -m jit``), a
    ``jit serve`` on stdio first starts answering ``initialize`` (jit/serve/early.py), so a
    client has its answer while the command line and the MCP SDK import. The command line then
    parses ``argv`` as for any command; a plain ``main([...])`` call never touches stdin."""
    _refuse_undecodable(sys.argv[1:] if argv is None else argv)
    if argv is None:
        from ..serve.early import begin

        begin(sys.argv[1:])
    from ..process import tuned

    # The tokenizers' thread pool warns about forking (stdio servers are forked children).
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    _commands()
    from .shared import app

    # This is the process's owner: catalog snapshots are frozen out of the GC and the
    # retrieval scan runs on one BLAS thread (jit.process says why).
    with tuned():
        app(args=argv, prog_name="jit")


if __name__ == "__main__":  # pragma: no cover
    main()
