#!/usr/bin/env bash
# Installs everything (system packages, .venv with the dev/hf/sam extras) and runs lint and the
# whole test suite, slow tests included (a real Chromium, a real vLLM server on first use).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh --dev
.venv/bin/ruff check .
.venv/bin/ruff format --check .
exec .venv/bin/python -m pytest --durations=15 "$@"
