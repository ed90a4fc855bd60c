#!/usr/bin/env bash
# The BrowserGym plug-in's own environment: a virtualenv with regionfocus[browsergym,ocr] and
# nothing else of ours, checked with `pip check`; with --test, the plug-in's tests run in it.
#
# Why a venv apart from .venv: browsergym-core pins playwright==1.44 and the `browser` extra (our
# own harness, in .venv) needs a newer Playwright, so `regionfocus[browser,browsergym]` cannot
# resolve (pyproject.toml says what fails under 1.44). A user installs `regionfocus[browsergym]`
# alone, as this script does.
#
# Cached: the dependencies are installed once per recipe (pyproject.toml and this script); later
# runs only re-point the editable install at this checkout and run `pip check`. --fresh rebuilds.
# Usage: scripts/check_browsergym_env.sh [--fresh] [--test [pytest args...]]
# Env: REGIONFOCUS_BGYM_VENV (default ~/.cache/regionfocus/browsergym-venv), PYTHON (default python3).
set -euo pipefail
cd "$(dirname "$0")/.."

VENV="${REGIONFOCUS_BGYM_VENV:-$HOME/.cache/regionfocus/browsergym-venv}"
PY="${PYTHON:-python3}"
FRESH=0
TEST=0
while [[ $# -gt 0 ]]; do
    case "$1" in
        --fresh) FRESH=1; shift ;;
        --test) TEST=1; shift; break ;;
        *) echo "usage: $0 [--fresh] [--test [pytest args...]]" >&2; exit 2 ;;
    esac
done

# What the tests need beyond the extras (the dev extra would bring .venv's whole tool set).
TEST_TOOLS=("pytest>=8" "pytest-asyncio>=0.23" "pytest-timeout>=2.2" "hypothesis>=6.100")
RECIPE="v1 $(cat pyproject.toml "$0" | sha256sum | cut -c1-16) ${TEST_TOOLS[*]}"
MARKER="$VENV/.regionfocus-browsergym-complete"
PIP=("$VENV/bin/python" -m pip --disable-pip-version-check)

# Two runs on one machine must not build into the same folder at once.
mkdir -p "$(dirname "$VENV")"
exec 9>"$VENV.lock"
flock 9

if [[ "$FRESH" = 1 || ! -f "$MARKER" || "$(cat "$MARKER")" != "$RECIPE" ]]; then
    echo "[browsergym-venv] building $VENV"
    rm -rf "$VENV"
    "$PY" -m venv "$VENV"
    "${PIP[@]}" install -q -e ".[browsergym,ocr]" "${TEST_TOOLS[@]}"
    echo "$RECIPE" >"$MARKER"
else
    echo "[browsergym-venv] reusing $VENV"
fi
# The editable install follows this checkout (CI clones afresh elsewhere); its dependencies are
# the ones installed above.
if ! "${PIP[@]}" install -q --no-deps -e . >"$VENV.install.log" 2>&1; then
    cat "$VENV.install.log" >&2
    exit 1
fi
"${PIP[@]}" check
"$VENV/bin/python" -c "import regionfocus.plugins.browsergym, playwright, importlib.metadata as m; print('[browsergym-venv] browsergym-core', m.version('browsergym-core'), 'playwright', m.version('playwright'))"

if [[ "$TEST" = 1 ]]; then
    exec "$VENV/bin/python" -m pytest -p no:cacheprovider tests/test_plugin_browsergym_actions.py tests/test_plugin_browsergym.py "$@"
fi
