# Shared by scripts/serve and scripts/test (sourced, not run): find Python 3.11+, create or
# update the virtual environment in .venv, and say what is happening.
# shellcheck shell=bash

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="${VENV:-$ROOT/.venv}"
PY="$VENV/bin/python"

say() { printf '\n==> %s\n' "$*"; }
die() { printf '\nERROR: %s\n' "$*" >&2; exit 1; }

find_python() {
    local candidate
    for candidate in "${PYTHON:-}" python3.13 python3.12 python3.11 python3 python; do
        [ -n "$candidate" ] || continue
        command -v "$candidate" >/dev/null 2>&1 || continue
        if "$candidate" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else 1)' 2>/dev/null; then
            command -v "$candidate"
            return 0
        fi
    done
    return 1
}

# ensure_venv REQUIREMENTS_FILE: create .venv if missing, then install the lock (requirements.txt
# or requirements-dev.txt: every package pinned, with hashes, made by scripts/lock from the .in
# files) when it changed since the last install (a stamp file holds its hash, so a second run is
# quick).
ensure_venv() {
    local requirements="$1" python stamp wanted
    if [ ! -x "$PY" ]; then
        python="$(find_python)" || die "Python 3.11 or newer is needed (set PYTHON=/path/to/python3.11)."
        say "Creating the virtual environment in $VENV with $python ($("$python" --version 2>&1))"
        "$python" -m venv "$VENV" || die "'$python -m venv' failed (on Debian/Ubuntu: apt-get install python3-venv)."
        "$PY" -m pip install --quiet --disable-pip-version-check --upgrade pip
    fi
    stamp="$VENV/.kernelindex-$(basename "$requirements").sha256"
    # Hash every lock, so a change in either reinstalls.
    wanted="$(cat "$ROOT"/requirements*.txt | sha256sum | cut -d' ' -f1)"
    if [ "$(cat "$stamp" 2>/dev/null)" != "$wanted" ]; then
        say "Installing $(basename "$requirements") into $VENV"
        # --require-hashes: a package whose file does not match the lock is refused.
        "$PY" -m pip install --quiet --disable-pip-version-check --require-hashes -r "$ROOT/$requirements"
        echo "$wanted" >"$stamp"
    else
        say "$(basename "$requirements") already installed in $VENV"
    fi
}
