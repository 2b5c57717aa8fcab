"""The Python + mpi4py port of NPB 3.4 MPI CG: generator, partition, matrix and verified runs.

MPI tests launch the real venv ``mpiexec`` in subprocesses (never MPI inside the pytest process, so
other tests can still check that importing ``ma`` leaves MPI alone).
"""

from __future__ import annotations

import itertools
import json
import os
import re
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:                # examples/ is not an installed package
    sys.path.insert(0, str(ROOT))

from examples.npb_cg.classes import CLASSES, RCOND, official_op_count  # noqa: E402
from examples.npb_cg.grid import CGSetupError, decompose, proc_grid  # noqa: E402
from examples.npb_cg.makea import generate_vectors, makea  # noqa: E402
from examples.npb_cg.randlc import MULTIPLIER, SEED, LcgStream, multiplier_powers, randlc  # noqa: E402

MPIEXEC = Path(sys.executable).with_name("mpiexec")
CG = ROOT / "examples" / "npb_cg" / "cg.py"
S_ZETA_FIRST_ITERATION = 9.9986441579140
TIMEOUT = 120


# --------------------------------------------------------------------------------------------------
# randlc
# --------------------------------------------------------------------------------------------------

def _randlc_split_reference(x: int, a: int) -> int:
    """NPB's own 23-bit split of the 46-bit product, in integers: an independent route to a*x mod 2^46."""
    t23 = 1 << 23
    a1, a2 = divmod(a, t23)
    x1, x2 = divmod(x, t23)
    t1 = a1 * x2 + a2 * x1
    z = t1 % t23                           # low 23 bits of the cross terms
    t3 = t23 * z + a2 * x2
    return t3 % (1 << 46)


def test_randlc_matches_split_multiplication() -> None:
    x = SEED
    for _ in range(2000):
        expected = _randlc_split_reference(x, MULTIPLIER)
        x_new, value = randlc(x, MULTIPLIER)
        assert x_new == expected
        assert value == expected / 2.0 ** 46      # exact: a power-of-two scaling of an integer < 2^53
        assert 0.0 < value < 1.0
        x = x_new


def test_randlc_first_draws_are_known_integers() -> None:
    # The first NPB CG draw (the one discarded before makea) and the 1000th, by modular exponentiation.
    first, value = randlc(SEED, MULTIPLIER)
    # 314159265 * 1220703125 = 383495196533203125 = 5449 * 2^46 + 55909509111989
    assert first == 55_909_509_111_989
    assert 5449 * 2 ** 46 + first == 314159265 * 1220703125
    assert value == first * 2.0 ** -46
    x = SEED
    for _ in range(1000):
        x, _ = randlc(x)
    assert x == pow(5, 13 * 1000, 2 ** 46) * SEED % 2 ** 46


def test_randlc_rejects_out_of_range_state() -> None:
    with pytest.raises(ValueError, match="2\\^46"):
        randlc(1 << 46)


def test_vectorised_stream_equals_scalar_draws_across_blocks() -> None:
    stream = LcgStream(SEED, MULTIPLIER, block=7)          # tiny block: many block boundaries
    got = np.concatenate([stream.next_states(n) for n in (1, 6, 7, 8, 50, 3)])
    x, expected = SEED, []
    for _ in range(got.size):
        x, _ = randlc(x)
        expected.append(x)
    assert got.tolist() == expected
    assert stream.state == expected[-1]
    values = LcgStream(SEED).next_values(5)
    assert values.tolist() == [e * 2.0 ** -46 for e in expected[:5]]


def test_multiplier_powers_and_skip() -> None:
    powers = multiplier_powers(MULTIPLIER, 100)
    assert powers.tolist() == [pow(MULTIPLIER, k, 2 ** 46) for k in range(1, 101)]
    stream = LcgStream(SEED, block=16)
    stream.skip(12345)
    assert stream.state == pow(MULTIPLIER, 12345, 2 ** 46) * SEED % 2 ** 46


# --------------------------------------------------------------------------------------------------
# Process grid and partition
# --------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("nprocs, rows, cols", [(1, 1, 1), (2, 1, 2), (4, 2, 2), (8, 2, 4), (32, 4, 8)])
def test_proc_grid(nprocs: int, rows: int, cols: int) -> None:
    assert proc_grid(nprocs) == (rows, cols)


@pytest.mark.parametrize("nprocs", [0, 3, 6, 12])
def test_proc_grid_rejects_non_powers_of_two(nprocs: int) -> None:
    with pytest.raises(CGSetupError, match=f"\\({nprocs}\\) is not a power of two"):
        proc_grid(nprocs)


@pytest.mark.parametrize("na", [1400, 1403, 7000, 75000])
@pytest.mark.parametrize("nprocs", [1, 2, 4, 8, 16, 32, 64])
def test_partition_tiles_matrix_and_exchanges_pair_up(na: int, nprocs: int) -> None:
    grids = [decompose(na, nprocs, me) for me in range(nprocs)]
    cover = np.zeros((na + 1, 2), dtype=np.int64)      # difference arrays of row and column ranges
    area = 0
    for g in grids:
        assert g.l2npcols == int(np.log2(g.npcols))
        assert g.nrows <= g.naa + 1 and g.ncols <= g.naa + 1
        area += g.nrows * g.ncols
        if g.proc_col == 0:
            cover[g.firstrow - 1, 0] += 1
            cover[g.lastrow, 0] -= 1
        if g.proc_row == 0:
            cover[g.firstcol - 1, 1] += 1
            cover[g.lastcol, 1] -= 1
        # Butterfly: partners are mutual, in the same processor row, and lengths match.
        for i in range(g.l2npcols):
            partner = grids[g.reduce_exch_proc[i]]
            assert partner.reduce_exch_proc[i] == g.me
            assert partner.proc_row == g.proc_row
            assert partner.reduce_send_lengths[i] == g.reduce_recv_lengths[i]
            assert partner.reduce_send_starts[i] == g.send_start      # it sends the rows this rank keeps
            assert g.reduce_recv_starts[i] == g.send_start
        # Transpose: the partner's sent rows are exactly this rank's columns.
        t = grids[g.exch_proc]
        assert t.exch_proc == g.me
        assert t.send_len == g.exch_recv_length == g.ncols
        assert t.firstrow + t.send_start - 1 == g.firstcol
    assert area == na * na
    assert (np.cumsum(cover[:na], axis=0) == 1).all()   # every row and column range covered once


# --------------------------------------------------------------------------------------------------
# Matrix generation: a scalar, line-by-line reference of makea/sprnvc/vecset/sparse
# --------------------------------------------------------------------------------------------------

def _reference_block(na: int, nonzer: int, shift: float, firstrow: int, lastrow: int,
                     firstcol: int, lastcol: int) -> tuple[list[float], list[int], list[int]]:
    """Draw by draw and element by element, as NPB's loops run; returns CSR (a, colidx 0-based, rowstr)."""
    x, _ = randlc(SEED, MULTIPLIER)                     # discarded first draw
    nn1 = 1
    while nn1 < na:
        nn1 *= 2
    ratio = RCOND ** (1.0 / na)
    size = 1.0
    arow, acol, aelt = [], [], []
    for iouter in range(1, na + 1):
        v: list[float] = []
        iv: list[int] = []
        while len(v) < nonzer:
            x, vecelt = randlc(x)
            x, vecloc = randlc(x)
            i = int(nn1 * vecloc) + 1
            if i <= na and i not in iv:
                v.append(vecelt)
                iv.append(i)
        if iouter in iv:
            v[iv.index(iouter)] = 0.5
        else:
            v.append(0.5)
            iv.append(iouter)
        for jcol, vj in zip(iv, v, strict=False):
            if firstcol <= jcol <= lastcol:
                scale = size * vj
                for irow, vi in zip(iv, v, strict=False):
                    if firstrow <= irow <= lastrow:
                        arow.append(irow)
                        acol.append(jcol)
                        aelt.append(vi * scale)
        size *= ratio
    for i in range(max(firstrow, firstcol), min(lastrow, lastcol) + 1):
        arow.append(i)
        acol.append(i)
        aelt.append(RCOND - shift)
    a, colidx, rowstr = [], [], [0]
    for row in range(firstrow, lastrow + 1):
        sums: dict[int, float] = {}                    # dict keeps first-appearance order
        for r, c, e in zip(arow, acol, aelt, strict=False):
            if r == row:
                sums[c] = sums.get(c, 0.0) + e
        for c, e in sums.items():
            if e != 0.0:
                a.append(e)
                colidx.append(c - firstcol)
        rowstr.append(len(a))
    return a, colidx, rowstr


@pytest.mark.parametrize("na, nonzer, shift, nprocs, me", [
    pytest.param(1400, 7, 10.0, 1, 0, marks=pytest.mark.slow),  # class S, whole matrix (scalar reference: ~15 s)
    (1400, 7, 10.0, 4, 3),      # class S, a 2x2-grid block
    (300, 9, 5.0, 2, 1),        # small order, many repeated positions, non-square grid
])
def test_makea_equals_scalar_reference_bitwise(na: int, nonzer: int, shift: float,
                                               nprocs: int, me: int) -> None:
    g = decompose(na, nprocs, me)
    tran, _ = randlc(SEED, MULTIPLIER)
    block = makea(generate_vectors(na, nonzer, LcgStream(tran)), g, RCOND, shift)
    a, colidx, rowstr = _reference_block(na, nonzer, shift, g.firstrow, g.lastrow, g.firstcol, g.lastcol)
    assert block.shape == (g.nrows, g.ncols)
    assert block.indptr.tolist() == rowstr
    assert block.indices.tolist() == colidx
    assert block.data.tolist() == a                   # same floats, same order: bitwise equal


def _global_triples(na: int, nonzer: int, shift: float, nprocs: int) -> np.ndarray:
    tran, _ = randlc(SEED, MULTIPLIER)
    vectors = generate_vectors(na, nonzer, LcgStream(tran))
    parts = []
    for me in range(nprocs):
        g = decompose(na, nprocs, me)
        coo = makea(vectors, g, RCOND, shift).tocoo()
        parts.append(np.rec.fromarrays([coo.row + g.firstrow, coo.col + g.firstcol, coo.data]))
    triples = np.concatenate(parts)
    return np.sort(triples, order=("f0", "f1"))


def test_matrix_does_not_depend_on_process_count_in_process() -> None:
    s = CLASSES["S"]
    reference = _global_triples(s.na, s.nonzer, s.shift, 1)
    for nprocs in (2, 4, 8, 16):
        assert np.array_equal(_global_triples(s.na, s.nonzer, s.shift, nprocs), reference)
    dense = np.zeros((s.na + 1, s.na + 1))
    dense[reference["f0"], reference["f1"]] = reference["f2"]
    assert np.abs(dense - dense.T).max() <= 1e-14 * np.abs(dense).max()   # sum of v v^T: symmetric
    assert np.all(np.diag(dense)[1:] != 0.0)
    assert reference.size > s.na * s.nonzer


def test_common_block_offsets_depend_on_the_lengths_alone() -> None:
    """Whatever the process allocated before, each array of a common block starts at the same offset in a
    page, aligned for its type; the arrays are zeroed, writable and disjoint, and the matrix keeps its
    values in the block it was moved to."""
    from examples.npb_cg.conj_grad import GAP, PAGE, common_block, matrix_in_common_block

    specs = [(1752, np.float64), (1752, np.float64), (513, np.float64), (1001, np.int32), (7, np.int32)]
    offsets = []
    for clutter in (0, 1, 3000, 70_000):           # different allocation histories before the block
        held = np.ones(clutter)
        arrays = common_block(specs)
        assert [(a.size, a.dtype) for a in arrays] == [(n, np.dtype(t)) for n, t in specs]
        offsets.append([a.ctypes.data % PAGE for a in arrays])
        assert all(a.ctypes.data % a.itemsize == 0 and a.flags.aligned and not a.any() for a in arrays)
        bounds = [(a.ctypes.data, a.ctypes.data + a.nbytes) for a in arrays]
        assert all(end + GAP == start for (_, end), (start, _) in itertools.pairwise(bounds))
        for k, a in enumerate(arrays):
            a[:] = k + 1
        assert [int(a.min()) for a in arrays] == [k + 1 for k in range(len(specs))]
        del held
    assert offsets[0][0] == 0 and all(o == offsets[0] for o in offsets)
    with pytest.raises(ValueError, match="larger items first"):  # a float64 after 3 int32s would be unaligned
        common_block([(3, np.int32), (2, np.float64)])

    s = CLASSES["S"]
    tran, _ = randlc(SEED, MULTIPLIER)
    original = makea(generate_vectors(s.na, s.nonzer, LcgStream(tran)), decompose(s.na, 1, 0), RCOND, s.shift)
    reference = original.copy()
    moved = matrix_in_common_block(original)
    assert moved.data.ctypes.data % PAGE == 0
    assert moved.indices.ctypes.data % PAGE == (moved.data.nbytes + GAP) % PAGE
    assert (moved != reference).nnz == 0 and moved.has_sorted_indices == reference.has_sorted_indices


def test_operation_count_is_npb_formula() -> None:
    assert official_op_count(1400, 7, 15) == 2 * 15 * 1400 * (3 + 56 + 25 * (5 + 56) + 3) == 66_654_000


# --------------------------------------------------------------------------------------------------
# Real runs under mpiexec
# --------------------------------------------------------------------------------------------------

TRACE_DIR = tempfile.mkdtemp(prefix="ma-npb-cg-port-")


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PATH"] = f"{MPIEXEC.parent}{os.pathsep}{env.get('PATH', '')}"
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    env["MA_TRACE_DIR"] = TRACE_DIR  # the port is annotated: keep its traces out of the repository
    return env


def _mpirun(nprocs: int, *args: str) -> subprocess.CompletedProcess[str]:
    if not MPIEXEC.exists():
        pytest.fail(f"no mpiexec next to {sys.executable}: pip install mpich")
    return subprocess.run([str(MPIEXEC), "-n", str(nprocs), sys.executable, *args],
                          capture_output=True, text=True, timeout=TIMEOUT, cwd=ROOT, env=_env())


def _field(output: str, pattern: str) -> str:
    match = re.search(pattern, output, re.MULTILINE)
    assert match, f"{pattern!r} not found in output:\n{output}"
    return match.group(1)


@pytest.mark.mpi
@pytest.mark.parametrize("class_name, nprocs", [("S", 1), ("S", 2), ("S", 4), ("W", 2)])
def test_cli_run_verifies(class_name: str, nprocs: int) -> None:
    proc = _mpirun(nprocs, str(CG), "--class", class_name)
    out = proc.stdout
    assert proc.returncode == 0, proc.stderr + out
    assert "VERIFICATION SUCCESSFUL" in out
    assert _field(out, r"Verification\s+=\s+(\S+)") == "SUCCESSFUL"
    zeta = float(_field(out, r"Zeta is\s+(\S+)"))
    reference = CLASSES[class_name].zeta_verify
    assert abs(zeta - reference) / reference <= 1e-10
    assert float(_field(out, r"Error is\s+(\S+)")) <= 1e-10
    assert int(_field(out, r"Total processes =\s+(\d+)")) == nprocs
    assert int(_field(out, r"Iterations      =\s+(\d+)")) == CLASSES[class_name].niter
    time_s = float(_field(out, r"Time in seconds =\s+(\S+)"))
    mops = float(_field(out, r"Mop/s total     =\s+(\S+)"))
    per_proc = float(_field(out, r"Mop/s/process   =\s+(\S+)"))
    assert mops > 0 and time_s >= 0
    assert per_proc == pytest.approx(mops / nprocs, abs=0.01)
    zeta_lines = re.findall(r"^\s+(\d+)\s+\S+E[-+]\d+\s+(\S+)$", out, re.MULTILINE)
    assert [int(it) for it, _ in zeta_lines] == list(range(1, CLASSES[class_name].niter + 1))


@pytest.mark.mpi
def test_first_timed_iteration_zeta_with_niter_1() -> None:
    proc = _mpirun(2, str(CG), "--class", "S", "--niter", "1")
    assert proc.returncode == 0, proc.stderr + proc.stdout
    first = float(_field(proc.stdout, r"^\s+1\s+\S+E[-+]\d+\s+(\S+)$"))
    assert abs(first - S_ZETA_FIRST_ITERATION) / S_ZETA_FIRST_ITERATION <= 1e-10
    assert "NO VERIFICATION PERFORMED" in proc.stdout
    assert _field(proc.stdout, r"Iterations      =\s+(\d+)") == "1"


@pytest.mark.mpi
def test_module_entry_point_runs() -> None:
    proc = _mpirun(1, "-m", "examples.npb_cg.cg", "--class", "S", "--niter", "2")
    assert proc.returncode == 0, proc.stderr + proc.stdout
    assert "CG Benchmark Completed." in proc.stdout


_RUN_SCRIPT = textwrap.dedent("""
    import json, sys
    from mpi4py import MPI
    from examples.npb_cg.cg import run
    from examples.npb_cg.classes import official_op_count
    r = run("S", comm=MPI.COMM_WORLD)
    if MPI.COMM_WORLD.Get_rank() == 0:
        print(json.dumps({"verified": r.verified, "zeta": r.zeta, "zetas": r.zetas, "time": r.time,
                          "mops": r.mops, "expected_mops": 1e-6 * official_op_count(r.na, r.nonzer, r.niter) / r.time,
                          "nprocs": r.nprocs, "error": r.error}))
""")


@pytest.mark.mpi
def test_run_function_returns_result(tmp_path: Path) -> None:
    script = tmp_path / "run_cg.py"
    script.write_text(_RUN_SCRIPT)
    proc = _mpirun(2, str(script))
    assert proc.returncode == 0, proc.stderr + proc.stdout
    assert proc.stdout.count("Benchmark") == 0        # run() is quiet unless verbose=True
    res = json.loads(proc.stdout)
    assert res["verified"] is True and res["nprocs"] == 2
    assert len(res["zetas"]) == 15 and res["zetas"][-1] == res["zeta"]
    assert abs(res["zetas"][0] - S_ZETA_FIRST_ITERATION) / S_ZETA_FIRST_ITERATION <= 1e-10
    assert res["error"] <= 1e-10
    assert res["mops"] == pytest.approx(res["expected_mops"], rel=1e-12)


_MATRIX_SCRIPT = textwrap.dedent("""
    import sys
    import numpy as np
    from mpi4py import MPI
    from examples.npb_cg.cg import resolve_class, setup
    comm = MPI.COMM_WORLD
    problem, niter = resolve_class("S", None)
    st = setup(problem, niter, comm)
    coo = st.a.tocoo()
    parts = comm.gather((coo.row + st.grid.firstrow, coo.col + st.grid.firstcol, coo.data), root=0)
    if comm.Get_rank() == 0:
        rows, cols, vals = (np.concatenate(p) for p in zip(*parts))
        order = np.lexsort((cols, rows))
        np.savez(sys.argv[1], rows=rows[order], cols=cols[order], vals=vals[order])
""")


@pytest.mark.mpi
def test_matrix_does_not_depend_on_process_count_under_mpi(tmp_path: Path) -> None:
    script = tmp_path / "dump_matrix.py"
    script.write_text(_MATRIX_SCRIPT)
    dumps = {}
    for nprocs in (1, 2, 4):
        out = tmp_path / f"matrix_{nprocs}.npz"
        proc = _mpirun(nprocs, str(script), str(out))
        assert proc.returncode == 0, proc.stderr
        dumps[nprocs] = np.load(out)
    for nprocs in (2, 4):
        for key in ("rows", "cols", "vals"):
            assert np.array_equal(dumps[nprocs][key], dumps[1][key]), (nprocs, key)
    assert dumps[1]["vals"].size > 1400 * 7


@pytest.mark.mpi
@pytest.mark.parametrize("nprocs, args, message", [
    (3, ["--class", "S"], "Number of processes (3) is not a power of two"),
    (2, ["--class", "Q"], "unknown class 'Q'"),
    (2, ["--class", "S", "--niter", "0"], "--niter must be a positive integer"),
    (2, ["--class", "S", "--niter", "many"], "invalid int value: 'many'"),
])
def test_bad_setup_fails_cleanly_on_all_ranks(nprocs: int, args: list[str], message: str) -> None:
    proc = _mpirun(nprocs, str(CG), *args)
    assert proc.returncode != 0
    assert proc.stderr.count(message) == 1, proc.stderr      # one line, from rank 0 only
    assert "Traceback" not in proc.stderr + proc.stdout


_WRONG_REFERENCE_SCRIPT = textwrap.dedent("""
    import dataclasses, sys
    from examples.npb_cg import cg
    cg.CLASSES["S"] = dataclasses.replace(cg.CLASSES["S"], zeta_verify=8.6)   # a wrong reference value
    sys.exit(cg.main(["--class", "S"]))
""")


@pytest.mark.mpi
def test_verification_failure_exits_non_zero(tmp_path: Path) -> None:
    script = tmp_path / "wrong_reference.py"
    script.write_text(_WRONG_REFERENCE_SCRIPT)
    proc = _mpirun(2, str(script))
    assert proc.returncode != 0
    assert "VERIFICATION FAILED" in proc.stdout
    assert _field(proc.stdout, r"Verification\s+=\s+(\S+)") == "UNSUCCESSFUL"


_THREAD_LEVEL_SCRIPT = textwrap.dedent("""
    from examples.npb_common.mpi import start_run
    MPI, _, _ = start_run(None, verbose=False)  # as cg.run and sp.run begin
    levels = MPI.COMM_WORLD.gather((MPI.Query_thread() == MPI.THREAD_SINGLE, MPI.Is_thread_main()))
    if MPI.COMM_WORLD.rank == 0:
        print("levels", levels)
""")


@pytest.mark.mpi
def test_the_port_starts_mpi_as_npb_does(tmp_path: Path) -> None:
    # MPI_Init, not MPI_Init_thread(MPI_THREAD_MULTIPLE) as mpi4py would: no locks around every call.
    script = tmp_path / "thread_level.py"
    script.write_text(_THREAD_LEVEL_SCRIPT)
    proc = _mpirun(2, str(script))
    assert proc.returncode == 0, proc.stderr
    assert "levels [(True, True), (True, True)]" in proc.stdout, proc.stdout
