#!/usr/bin/env bash
# Install the third-party MCP servers the client tests talk to, from the registries only.
# Idempotent: a second run finds everything in place and changes nothing.
#
#   mcp-server-time                          PyPI, into the project venv (stdio)
#   @modelcontextprotocol/server-everything  npm, into <repo>/.test-servers/ (stdio, Streamable HTTP, SSE)
#
# Environment: PYTHON (default <repo>/.venv/bin/python, else python3).
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
python="${PYTHON:-}"
if [[ -z "$python" ]]; then
    if [[ -x "$repo/.venv/bin/python" ]]; then python="$repo/.venv/bin/python"; else python="python3"; fi
fi

everything_version="2026.8.31"
time_spec="mcp-server-time>=2025.1"

if "$python" -c 'import importlib.metadata as m; m.version("mcp-server-time")' >/dev/null 2>&1; then
    echo "install-test-servers: mcp-server-time already installed"
else
    echo "install-test-servers: installing $time_spec into $python"
    # Naming mcp too keeps pip from "solving" by downgrading the SDK jit is built on.
    "$python" -m pip install --quiet "$time_spec" "mcp>=2.3,<3"
fi

dest="$repo/.test-servers"
bin="$dest/node_modules/.bin/mcp-server-everything"
installed=""
if [[ -f "$dest/node_modules/@modelcontextprotocol/server-everything/package.json" ]]; then
    installed="$(node -p "require('$dest/node_modules/@modelcontextprotocol/server-everything/package.json').version" 2>/dev/null || true)"
fi
if [[ -x "$bin" && "$installed" == "$everything_version" ]]; then
    echo "install-test-servers: @modelcontextprotocol/server-everything $installed already installed"
else
    if ! command -v npm >/dev/null 2>&1; then
        echo "install-test-servers: npm not found; cannot install @modelcontextprotocol/server-everything" >&2
        exit 1
    fi
    echo "install-test-servers: installing @modelcontextprotocol/server-everything@$everything_version into $dest"
    mkdir -p "$dest"
    [[ -f "$dest/package.json" ]] || printf '{\n  "name": "jit-test-servers",\n  "private": true\n}\n' > "$dest/package.json"
    npm install --prefix "$dest" --no-audit --no-fund --loglevel=error \
        "@modelcontextprotocol/server-everything@$everything_version"
fi
