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
commands that need them, so ``jit servers`` or ``jit --help`` start fast.
"""

from __future__ import annotations

import os

from ..process import tuned

# Each module registers its commands on ``app`` when imported, in the order of ``jit --help``.
from . import catalog, definitions, selection, importer, frontends  # noqa: F401  # isort: skip
from .importer import import_servers as import_servers
from .selection import FORMATS as FORMATS
from .selection import compile_toolset as compile_toolset
from .shared import EXIT_CODES, app
from .shared import exit_code as exit_code

__all__ = ["EXIT_CODES", "app", "main"]


# --------------------------------------------------------------------------- entry point


def main(argv: list[str] | None = None) -> None:
    """The ``jit`` console script (exits the process with the command's exit code)."""
    # The tokenizers' thread pool warns about forking (stdio servers are forked children).
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    # This is the process's owner: catalog snapshots are frozen out of the GC and the
    # retrieval scan runs on one BLAS thread (jit.process says why).
    with tuned():
        app(args=argv, prog_name="jit")


if __name__ == "__main__":  # pragma: no cover
    main()
