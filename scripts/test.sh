#!/usr/bin/env bash
# Set up .venv with the test extras, install the third-party MCP servers the
# tests talk to, and run the whole test suite. Extra arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh test
./scripts/install-test-servers.sh
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
exec .venv/bin/python -m pytest "$@"
