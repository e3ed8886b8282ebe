#!/usr/bin/env bash
# Create .venv and install jit with the extras named in $1 (e.g. "test").
# Idempotent: a second run only checks. torch 2.13.0 is installed first so that
# sentence-transformers takes it instead of pulling its own; on Linux PyPI's torch is the
# multi-GB CUDA build, so elsewhere set TORCH_INDEX_URL=https://download.pytorch.org/whl/cpu.
set -euo pipefail
cd "$(dirname "$0")/.."
extras="${1:-}"
python="${PYTHON:-python3}"
if [ ! -x .venv/bin/python ]; then
    "$python" -m venv .venv
fi
.venv/bin/python -m pip install --quiet --upgrade pip
if ! .venv/bin/python -c "import torch" 2>/dev/null; then
    # $TORCH_INDEX_URL (e.g. https://download.pytorch.org/whl/cpu, see the README) picks the
    # index torch comes from; unset, pip's own index and find-links.
    .venv/bin/python -m pip install --quiet "torch==2.13.0" ${TORCH_INDEX_URL:+--index-url "$TORCH_INDEX_URL"}
fi
if [ -n "$extras" ]; then
    .venv/bin/python -m pip install --quiet -e ".[$extras]"
else
    .venv/bin/python -m pip install --quiet -e .
fi
