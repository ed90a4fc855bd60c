#!/usr/bin/env bash
# Installs everything regionfocus needs on a fresh Debian machine with Python 3.11:
# system packages (Chromium, fonts) and a virtualenv at .venv with the project in it.
#   bash scripts/setup.sh          the product with every part (browser, OCR, a11y; no torch)
#   bash scripts/setup.sh --dev    the same, the test tools, and the hf + sam extras
# Idempotent: a second run only checks.
set -euo pipefail
cd "$(dirname "$0")/.."
DEV=0
[ "${1:-}" = "--dev" ] && DEV=1
SUDO=""
[ "$(id -u)" -ne 0 ] && SUDO="sudo"

# xvfb and python3-tk: the OSWorld-style wrapper's real-window test (an X server, a Tk application)
if [ ! -x /usr/lib/chromium/chromium ] || ! fc-list 2>/dev/null | grep -qi dejavu || ! command -v Xvfb >/dev/null; then
  echo "[setup] installing Chromium, fonts and Xvfb with apt-get"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends chromium fonts-dejavu-core fonts-liberation python3-doc sqlite3-doc git-doc xvfb python3-tk >/dev/null
fi

PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  echo "[setup] creating .venv"
  "$PY" -m venv .venv
fi
PIP=(.venv/bin/python -m pip install -q --disable-pip-version-check)
if [ "$DEV" = 1 ]; then
  # torch + torchvision as a pair that loads together (a lone PyPI torchvision does not load
  # beside the 2.13 CPU wheel); installed first so the extras below find it satisfied.
  .venv/bin/python -c "import torch, torchvision" 2>/dev/null || "${PIP[@]}" "torch==2.14.1" "torchvision==0.29.1"
  "${PIP[@]}" -e ".[all,dev,hf,sam]"
else
  "${PIP[@]}" -e ".[all]"
fi
echo "[setup] ready: .venv/bin/regionfocus --help"
