#!/usr/bin/env bash
# Sets up everything on a fresh Debian machine: system packages (GNU Octave for the exported models,
# Valgrind for the software flop counter), a virtual environment with the project and its MPI (the
# `mpich` wheel), and the project's C parts (PMPI library, C runtime, Valgrind tool).
# Idempotent: run it again and it only checks.
set -euo pipefail
cd "$(dirname "$0")/.."

as_root() { if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi; }

missing=()
command -v octave-cli >/dev/null 2>&1 || missing+=(octave)
command -v valgrind >/dev/null 2>&1 || missing+=(valgrind)
[ -f /usr/include/valgrind/pub_tool_basics.h ] || missing+=(valgrind)
command -v gcc >/dev/null 2>&1 || missing+=(gcc)
command -v clang >/dev/null 2>&1 || missing+=(clang)  # its vectorisation remarks, for `ma loopmark --compiler clang`
command -v chromium >/dev/null 2>&1 || missing+=(chromium)  # headless, for the HTML report's browser test
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing Debian packages: ${missing[*]}"
  as_root apt-get update -qq
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

PYTHON=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  echo "setup: creating .venv"
  "$PYTHON" -m venv .venv
fi
echo "setup: installing the project into .venv (compiles the runtime's hot path with Cython)"
.venv/bin/python -m pip install -q --upgrade pip >/dev/null
.venv/bin/python -m pip install -q -e ".[dev]"
echo "setup: building the C parts"
.venv/bin/ma tools build
echo "setup: done. The environment's MPI is .venv/bin/mpiexec; keep .venv/bin first on PATH."
