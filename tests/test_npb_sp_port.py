"""The Python + mpi4py port of NPB 3.4 MPI SP: decomposition, kernels, verified runs and clean errors.

MPI tests launch the real venv ``mpiexec`` in subprocesses (never MPI inside the pytest process). The
kernel checks run in a subprocess with MA_DISABLE=1, so that no annotation runtime starts in pytest.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:                # examples/ is not an installed package
    sys.path.insert(0, str(ROOT))

from conftest import clean_env  # noqa: E402

from examples.npb_sp.classes import CLASSES, official_op_count  # noqa: E402
from examples.npb_sp.layout import SPSetupError, make_set  # noqa: E402

MPIEXEC = Path(sys.executable).with_name("mpiexec")
SP = ROOT / "examples" / "npb_sp" / "sp.py"
TIMEOUT = 300


# --------------------------------------------------------------------------------------------------
# make_set
# --------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("n, nprocs", [(12, 1), (12, 4), (12, 9), (12, 16), (13, 4), (36, 9), (64, 25)])
def test_cells_tile_the_grid_once_one_per_slab_per_rank(n: int, nprocs: int) -> None:
    layouts = [make_set(n, nprocs, r) for r in range(nprocs)]
    p = layouts[0].ncells
    owner = {}
    for lay in layouts:
        for d in range(3):                   # one cell in every slab of every direction
            assert sorted(c.coord[d] for c in lay.cells) == list(range(p))
        for cell in lay.cells:
            assert cell.coord not in owner
            owner[cell.coord] = lay.node
    assert len(owner) == p ** 3
    for d in range(3):                       # sizes follow the remainder rule and cover the grid
        extents = {c.coord[d]: (c.low[d], c.size[d]) for lay in layouts for c in lay.cells}
        assert [extents[k][1] for k in range(p)] == [n // p + (k < n % p) for k in range(p)]
        assert all(extents[k][0] + extents[k][1] == extents[k + 1][0] for k in range(p - 1))
        assert extents[p - 1][0] + extents[p - 1][1] == n
    for lay in layouts:                      # every neighbour of a rank's cells is on its successor/predecessor
        for cell in lay.cells:
            for d in range(3):
                x, y, z = (cell.coord[e] + (e == d) for e in range(3))
                if cell.coord[d] + 1 < p:
                    assert owner[(x, y, z)] == lay.successor[d]
                    assert make_set(n, nprocs, lay.successor[d]).predecessor[d] == lay.node
                assert cell.start[d] == (cell.coord[d] == 0) and cell.end[d] == (cell.coord[d] == p - 1)


@pytest.mark.parametrize("n, nprocs, message", [
    (12, 3, "SP needs a square number of processes"),
    (12, 8, "got 8"),
    (12, 25, "cells too small: 12 points per direction on 5 x 5 x 5 cells gives cells of 2 points"),
])
def test_bad_layouts_are_clear_errors(n: int, nprocs: int, message: str) -> None:
    with pytest.raises(SPSetupError, match=re.escape(message)):
        make_set(n, nprocs, 0)


def test_official_operation_count() -> None:
    assert official_op_count(12, 100) == pytest.approx(100 * (881.174 * 1728 - 4683.91 * 144 + 11484.5 * 12
                                                              - 19272.4))
    assert [CLASSES[c].problem_size for c in "SWABC"] == [12, 36, 64, 102, 162]


# --------------------------------------------------------------------------------------------------
# Kernels on one cell (subprocess, annotations off)
# --------------------------------------------------------------------------------------------------

_KERNEL_SCRIPT = textwrap.dedent("""
    import numpy as np
    from scipy.linalg import solve_banded
    from examples.npb_sp.constants import Constants
    from examples.npb_sp.exact import coordinates, exact_rhs, exact_solution, initialize
    from examples.npb_sp.layout import make_set
    from examples.npb_sp.rhs import compute_rhs_cell
    from examples.npb_sp.solve import backward, build_lhs, forward, lines
    from examples.npb_sp.state import SPState, U_GHOST

    st = SPState(class_name="S", niter=1, layout=make_set(12, 1, 0), k=Constants.make(12, 0.015),
                 comm_setup=None, comm_solve=None, comm_rhs=None)
    initialize(st)
    exact_rhs(st)
    cd = st.cells[0]
    # 1. u = the exact solution (ghosts included): the scheme's rhs is then -forcing + forcing = 0.
    zeta, eta, xi = coordinates(st, cd, pad=U_GHOST)
    cd.u[...] = exact_solution(xi, eta, zeta)
    compute_rhs_cell(st, cd)
    scale = np.abs(cd.forcing).max()
    print("residual", np.abs(cd.rhs).max() / scale, scale)
    # 2. every line solve against a banded LAPACK solve of the same pentadiagonal systems
    rng = np.random.default_rng(1)
    worst = 0.0
    for d in range(3):
        cd.rhs[...] = rng.standard_normal(cd.rhs.shape)
        ls = lines(cd, d)
        build_lhs(st, cd, d, ls)
        lhs, rhs = ls.lhs.copy(), ls.rhs[:ls.n].copy()
        forward(ls, None)
        backward(ls, None)
        got = ls.target
        for m, f in enumerate((0, 0, 0, 1, 2)):
            for a in range(lhs.shape[3]):
                for b in range(lhs.shape[4]):
                    band = np.zeros((5, ls.n))
                    for diag in range(5):            # a, b, c, d, e at offsets -2 .. +2
                        off = diag - 2
                        col = lhs[:, f, diag, a, b]
                        if off >= 0:
                            band[2 - off, off:] = col[:ls.n - off]
                        else:
                            band[2 - off, :off] = col[-off:]
                    x = solve_banded((2, 2), band, rhs[:, m, a, b])
                    worst = max(worst, np.abs(x - got[:, m, a, b]).max() / np.abs(x).max())
    print("solve", worst)
""")


def found(pattern: str, text: str) -> re.Match[str]:
    match = re.search(pattern, text)
    assert match is not None, (pattern, text[-3000:])
    return match


def test_kernels_on_one_cell(tmp_path: Path) -> None:
    script = tmp_path / "kernels.py"
    script.write_text(_KERNEL_SCRIPT)
    proc = subprocess.run([sys.executable, str(script)], env=clean_env(MA_DISABLE="1", PYTHONPATH=str(ROOT)),
                          capture_output=True, text=True, timeout=TIMEOUT)
    assert proc.returncode == 0, proc.stderr
    residual, scale = (float(v) for v in found(r"residual (\S+) (\S+)", proc.stdout).groups())
    assert scale > 1.0 and residual < 1e-12, proc.stdout
    assert float(found(r"solve (\S+)", proc.stdout).group(1)) < 1e-12, proc.stdout


_OPCOUNT_SCRIPT = textwrap.dedent("""
    import json, sys
    from examples.npb_sp.opcount import kernel_op_counts
    print(json.dumps({n: kernel_op_counts(n) for n in map(int, sys.argv[1:])}))
""")


def test_divisions_square_roots_and_comparisons_are_what_the_kernels_execute(tmp_path: Path) -> None:
    """opcount.SPECIAL_OPS against the element operations of every NumPy ufunc call of one step."""
    import ma
    from examples.npb_sp.opcount import COMPARE_UFUNCS, SPECIAL_OPS

    script = tmp_path / "opcount.py"
    script.write_text(_OPCOUNT_SCRIPT)
    proc = subprocess.run([sys.executable, str(script), "12", "13"],
                          env=clean_env(MA_DISABLE="1", PYTHONPATH=str(ROOT)), capture_output=True, text=True,
                          timeout=TIMEOUT)
    assert proc.returncode == 0, proc.stderr
    per_direction = {"lhs_flops", "fwd_elim"}                 # one call per direction on one process
    for n, counts in json.loads(proc.stdout).items():
        at = {"csize": int(n), "isize": int(n) - 2, "ncells": 1}
        for site, tally in counts.items():
            special = SPECIAL_OPS.get(site, {})
            calls = 3 if site in per_direction else 1
            expected = {kind: calls * ma.parse_expression(special[kind]).evaluate(at) if kind in special else 0
                        for kind in ("divide", "sqrt", "compare")}
            got = {"divide": tally.get("divide", 0), "sqrt": tally.get("sqrt", 0),
                   "compare": sum(tally.get(u, 0) for u in COMPARE_UFUNCS)}
            assert got == expected, (n, site)
        assert set(SPECIAL_OPS) <= set(counts)


# --------------------------------------------------------------------------------------------------
# Whole runs under mpiexec
# --------------------------------------------------------------------------------------------------

def _mpirun(nprocs: int, *argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(MPIEXEC), "-n", str(nprocs), sys.executable, *argv],
                          env=clean_env(MA_DISABLE="1", PYTHONPATH=str(ROOT)), capture_output=True, text=True,
                          timeout=TIMEOUT)


def norms(stdout: str) -> np.ndarray:
    """The ten printed norms (xcr then xce) with their relative errors: (10, 2)."""
    rows = re.findall(r"^\s+(?:FAILURE:)?\s*[1-5]\s*(\S+)\s+\S+\s+(\S+)\s*$", stdout, flags=re.M)
    return np.array(rows, dtype=float)


def check_verified(proc: subprocess.CompletedProcess[str]) -> np.ndarray:
    assert proc.returncode == 0, proc.stderr[-3000:] + proc.stdout[-3000:]
    assert re.search(r"Verification\s+=\s+SUCCESSFUL", proc.stdout), proc.stdout
    values = norms(proc.stdout)
    assert values.shape == (10, 2) and np.all(values[:, 1] <= 1e-8), proc.stdout
    mops = float(found(r"Mop/s total\s+=\s+(\S+)", proc.stdout).group(1))
    assert mops > 0
    return values[:, 0]


@pytest.mark.mpi
def test_class_s_verifies_on_1_4_and_9_processes_with_the_same_norms() -> None:
    results = {p: check_verified(_mpirun(p, str(SP), "--class", "S")) for p in (1, 4, 9)}
    # the multi-partition solve is the same arithmetic, cut into cells: agreement far below the 1e-8
    for p in (4, 9):
        assert np.allclose(results[p], results[1], rtol=1e-11, atol=0), (p, results[p] - results[1])


@pytest.mark.mpi
@pytest.mark.parametrize("nprocs, args, message", [
    (3, ["--class", "S"], "SP needs a square number of processes (1, 4, 9, 16, 25, ...), got 3"),
    (1, ["--class", "Q"], "unknown class 'Q'; expected one of S, W, A, B, C"),
    (4, ["--class", "S", "--niter", "0"], "--niter must be a positive integer, got 0"),
    (2, ["--class", "S", "--niter", "many"], "invalid int value: 'many'"),
])
def test_bad_setup_fails_cleanly_on_all_ranks(nprocs: int, args: list[str], message: str) -> None:
    proc = _mpirun(nprocs, str(SP), *args)
    assert proc.returncode == 2
    assert proc.stderr.count(message) == 1, proc.stderr      # one line, from rank 0 only
    assert "Traceback" not in proc.stderr + proc.stdout


_PATCHED_SCRIPT = textwrap.dedent("""
    import dataclasses, sys
    from examples.npb_sp import sp
    field, value, *niter = sys.argv[1:]
    problem = sp.CLASSES["S"]
    if field == "problem_size":
        sp.CLASSES["S"] = dataclasses.replace(problem, problem_size=int(value))
    else:                                        # a wrong reference value
        sp.CLASSES["S"] = dataclasses.replace(problem, xcr=(float(value),) + problem.xcr[1:])
    sys.exit(sp.main(["--class", "S", *(["--niter", niter[0]] if niter else [])]))
""")


@pytest.mark.mpi
def test_uneven_cells_give_the_one_process_norms(tmp_path: Path) -> None:
    # 13 points: cells of 7 and 6 points on 4 processes, 5, 4 and 4 on 9 (the remainder rule)
    script = tmp_path / "patched.py"
    script.write_text(_PATCHED_SCRIPT)
    runs = {}
    for nprocs in (1, 4, 9):
        proc = _mpirun(nprocs, str(script), "problem_size", "13", "5")
        assert proc.returncode == 0, proc.stderr[-3000:]
        assert re.search(r"Verification\s+=\s+NOT PERFORMED", proc.stdout)
        runs[nprocs] = norms_unverified(proc.stdout)
    assert runs[1].shape == (10,) and np.all(runs[1] > 0)
    for nprocs in (4, 9):
        assert np.allclose(runs[nprocs], runs[1], rtol=1e-11, atol=0), (nprocs, runs[nprocs] - runs[1])


def norms_unverified(stdout: str) -> np.ndarray:
    """The ten printed norms (xcr then xce) of a run without verification."""
    return np.array(re.findall(r"^\s+[1-5]\s*(\S+)\s*$", stdout, flags=re.M), dtype=float)


@pytest.mark.mpi
def test_cells_too_small_fail_cleanly_on_all_ranks(tmp_path: Path) -> None:
    script = tmp_path / "patched.py"
    script.write_text(_PATCHED_SCRIPT)
    proc = _mpirun(4, str(script), "problem_size", "5")      # 5 points on 2 x 2 x 2 cells: cells of 2
    assert proc.returncode == 2
    assert proc.stderr.count("cells too small: 5 points per direction on 2 x 2 x 2 cells") == 1, proc.stderr
    assert "Traceback" not in proc.stderr + proc.stdout


@pytest.mark.mpi
def test_verification_failure_exits_non_zero(tmp_path: Path) -> None:
    script = tmp_path / "patched.py"
    script.write_text(_PATCHED_SCRIPT)
    proc = _mpirun(1, str(script), "xcr", "0.0275")
    assert proc.returncode == 1
    assert " FAILURE:  1" in proc.stdout and "Verification failed" in proc.stdout
    assert re.search(r"Verification\s+=\s+UNSUCCESSFUL", proc.stdout)
