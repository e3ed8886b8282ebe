#!/usr/bin/env bash
# Set up .venv with the test extras (and the optional ones whose adapters have tests), install the third-party MCP servers the
# tests talk to, and run the whole test suite. Extra arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh test,claude-agent-sdk
./scripts/install-test-servers.sh
# The PostgreSQL catalog's tests start a throwaway cluster from Debian's server binaries
# (tests/pgcluster.py). Where they are absent and apt-get is usable (CI runs as root on
# Debian), install them; elsewhere those tests skip and say why.
if ! ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 && ! command -v initdb >/dev/null 2>&1; then
    if command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
        apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends postgresql >/dev/null \
            || echo "warning: could not install postgresql; the PostgreSQL catalog tests will skip" >&2
    else
        echo "note: PostgreSQL's binaries are absent; the PostgreSQL catalog tests will skip" >&2
    fi
fi
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
exec .venv/bin/python -m pytest "$@"
