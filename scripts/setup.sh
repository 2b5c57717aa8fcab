#!/usr/bin/env bash
# Sets up everything on a fresh Debian machine: system packages (GNU Octave for the exported models,
# Valgrind for the software flop counter, gfortran, the distribution's MPICH and Open MPI, and Slurm for
# `ma run` under srun), a virtual environment with the project and its MPI (the `mpich` wheel), and the
# project's C and Fortran parts (PMPI library, C runtime, Fortran module, Valgrind tool), for the wheel and
# for each distribution MPI.
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
command -v smpirun >/dev/null 2>&1 || missing+=(libsimgrid-dev)  # SimGrid/SMPI: replays `ma synth` traces
command -v gfortran >/dev/null 2>&1 || missing+=(gfortran)  # the Fortran module (use ma)
# The distribution's MPICH and Open MPI (Fortran bindings, and the MPI matrix of the tests), and a Slurm the
# tests start as a private single-node cluster (scripts/slurm-local.sh): `ma run` under srun with each MPI.
[ -x /usr/bin/mpicc.mpich ] || missing+=(libmpich-dev mpich)
[ -x /usr/bin/mpicc.openmpi ] || missing+=(libopenmpi-dev openmpi-bin)
command -v munged >/dev/null 2>&1 || missing+=(munge)
command -v slurmctld >/dev/null 2>&1 || missing+=(slurmctld)
command -v slurmd >/dev/null 2>&1 || missing+=(slurmd)
command -v srun >/dev/null 2>&1 || missing+=(slurm-client)
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
# Extra-P (the `ma export --extrap` test) pins numpy<2: its own venv, without its GUI (PySide6) and
# scikit-learn, which its command line and default modeler do not import.
if [ ! -x .venv-extrap/bin/extrap ]; then
  echo "setup: creating .venv-extrap (Extra-P)"
  "$PYTHON" -m venv .venv-extrap
  .venv-extrap/bin/python -m pip install -q --no-deps "extrap==4.2.5"
  .venv-extrap/bin/python -m pip install -q "numpy<2" "scipy<1.14" "matplotlib~=3.6" "tqdm~=4.47" \
    "pycubexr>=1.2.3,<3,!=2.0.0" "marshmallow~=3.7" packaging
fi
echo "setup: building the C and Fortran parts"
.venv/bin/ma tools build
for mpicc in /usr/bin/mpicc.mpich /usr/bin/mpicc.openmpi; do  # one build directory each (docs/mpi.md)
  .venv/bin/ma tools build --mpicc "$mpicc" --only pmpi --only c --only fortran
done
echo "setup: done. The environment's MPI is .venv/bin/mpiexec; keep .venv/bin first on PATH."
