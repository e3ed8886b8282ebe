"""Another jit host on a shared PostgreSQL catalog, as a separate process (tests/test_store_postgres.py).

    python tests/pg_host.py sync CONFIG [model]   # jit's sync of CONFIG (hashing embedder; "model": the config's)
    python tests/pg_host.py calls URL SERVER TOOL N   # record N calls
    python tests/pg_host.py churn URL SERVER N     # rewrite SERVER's N tools forever (until killed)
    python tests/pg_host.py open URL              # open the catalog (migrations) and print the applied versions
    python tests/pg_host.py status URL SERVER     # print SERVER's status as this host reads it
    python tests/pg_host.py connect URL SERVER    # hold a live connection to SERVER until stdin closes

A separate process is a separate host as far as the catalog knows: its own connection,
its own holder id. Nothing is faked: the sync is jit's own, over a real stdio MCP server.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from jit.catalog.store import Store
from jit.models import ServerStatus, ToolDef


def _sync(config_file: str, *how: str) -> None:
    # Only a sync needs the MCP client and the test's embedder: the other commands import just the
    # store, since the tests start many of these processes.
    import asyncio

    sys.path.insert(0, str(Path(__file__).parent))
    from conftest import HashingEmbedder

    from jit.catalog.ownership import open_catalog
    from jit.config_files import load_config
    from jit.pipeline import sync

    config = load_config(Path(config_file))
    if list(how) == ["model"]:
        from jit.embedding.factory import embedder_from_config

        embedder = embedder_from_config(config.embedding)
    else:
        embedder = HashingEmbedder()
    with open_catalog(config) as store:
        report = asyncio.run(sync(config, store, embedder))
    print(json.dumps({"servers": sorted(r.name for r in report.servers)}))


def main(argv: list[str]) -> None:
    command, *rest = argv
    if command == "sync":
        _sync(*rest)
    elif command == "calls":
        url, server, tool, n = rest
        with Store(url) as store:
            for _ in range(int(n)):
                store.record_call(server, tool, ok=True, latency_ms=1.0)
    elif command == "churn":
        url, server, n = rest
        with Store(url) as store:
            store.ensure_server(server, "stdio")
            round_ = 0
            print("ready", flush=True)
            while True:
                round_ += 1
                store.sync_tools(server, [ToolDef(server=server, name=f"tool_{i}", description=f"round {round_}",
                                                  input_schema={"type": "object"}) for i in range(int(n))])
    elif command == "status":
        with Store(rest[0]) as store:
            record = store.server(rest[1])
            print(json.dumps({"status": record.status.value, "error": record.last_error,
                              "online": [t.tool.name for t in store.tools(rest[1], online=True)]}))
    elif command == "connect":
        with Store(rest[0]) as store:
            store.set_server_status(rest[1], ServerStatus.CONNECTED)
            print("held", flush=True)
            sys.stdin.read()  # as `jit serve` would, until told to go
            store.set_server_status(rest[1], ServerStatus.IDLE)
    elif command == "open":
        with Store(rest[0]) as store:
            print(json.dumps(sorted(store.applied_migrations())))
    else:
        raise SystemExit(f"unknown command {command!r}")


if __name__ == "__main__":
    main(sys.argv[1:])
