#!/usr/bin/env bash
# Installs everything (system packages, .venv with the dev/hf/sam extras) and runs lint and the
# whole test suite, slow tests included (a real Chromium, a real vLLM server on first use).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh --dev
.venv/bin/ruff check .
.venv/bin/ruff format --check .
# The BrowserGym plug-in lives in an environment of its own (browsergym-core pins Playwright 1.44,
# our browser harness needs a newer one): `pip check` there, then its tests, through BrowserGym's
# own runner. Built once and cached; skipped when pytest arguments pick a part of the suite.
if [ "$#" -eq 0 ]; then
  bash scripts/check_browsergym_env.sh --test -q
fi
exec .venv/bin/python -m pytest --durations=15 "$@"
