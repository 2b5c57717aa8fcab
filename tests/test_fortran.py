"""The Fortran API (``use ma``) and MPI measured from Fortran.

- The module: its enabled and disabled forms declare the same procedures; every call of ma.h has its Fortran
  name; a Fortran program and a C program making the same calls write the same trace (only the language and
  the process differ), strings being trimmed, a C_NULL_CHAR ignored and a changed text at the same address
  noticed; the disabled module links no library of the SDK.
- libmapmpi's Fortran entry points, on the distribution's MPICH and Open MPI with ``use mpi`` and
  ``use mpi_f08``: every routine counted once with its bytes and peers (MPICH's bindings reach the C wrappers,
  Open MPI's do not, MPICH's mpi_f08 barrier/wait/test/probe routines do not either); a program linked with
  another MPI's libmapmpi stops with a clear error; a link order that lets the MPI's Fortran routines bypass
  libmapmpi makes MPI assertions unmeasured, with the reason in the trace.

The {MPI} x {program} x {ranks} matrix of the C and Fortran rings is tests/test_mpi_matrix.py.
"""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest
from mpi_builds import DEBIAN_MPICH, DEBIAN_OPENMPI, REPO, TIMEOUT, WHEEL, Mpi, environment, validation

from ma_tools import fortran, mpis

FORTRAN_TESTS = REPO / "tests" / "fortran"
HEADER = REPO / "ma_runtime" / "csrc" / "libma" / "ma.h"


# ---- the module's text ---------------------------------------------------------------------------
def signatures(source: str) -> dict[str, list[str]]:
    """Each procedure of a module text: its dummy arguments' declarations."""
    found: dict[str, list[str]] = {}
    name = None
    for line in source.splitlines():
        start = re.match(r"\s*(?:subroutine|function) (\w+)\((.*)\)", line)
        if start and not start.group(1).startswith("c_"):  # not the C entry points' interfaces
            name = start.group(1)
            found[name] = []
        elif re.match(r"\s*end (subroutine|function)", line):
            name = None
        elif name and "::" in line and "intent" in line:
            found[name].append(line.strip())
    return found


def public_names(source: str) -> list[str]:
    """The names of the module's `public ::` statement for its procedures (continuation lines joined)."""
    statement = source.replace("&\n", "").split("public :: ma_init", 1)[1].split("\n", 1)[0]
    return ["ma_init", *re.findall(r"\w+", statement)]


def test_the_disabled_module_has_the_same_interface() -> None:
    enabled, disabled = fortran.module_source(), fortran.module_source(disabled=True)
    assert public_names(enabled) == public_names(disabled)
    interfaces = [sorted(re.findall(r"module procedure (.*)", text.replace("&\n", ""))) for text in
                  (enabled, disabled)]
    assert interfaces[0] == interfaces[1] and len(interfaces[0]) == 25  # the generic names with numbers
    theirs = signatures(disabled)
    for name, declarations in signatures(enabled).items():
        assert theirs[name] == declarations, name


def test_every_call_of_ma_h_has_its_fortran_name() -> None:
    declared = set(re.findall(r"^(?:void|int) (ma_\w+)\(", HEADER.read_text(), re.M))
    paper_names = {name for name in declared if not name.endswith("_at")}
    assert {"ma_loop_start", "ma_mpi_barrier", "ma_vec_loop_gathers", "ma_stack_memory_stop"} <= paper_names
    public = set(public_names(fortran.module_source()))
    assert paper_names <= public, paper_names - public


def test_integer_arguments_take_4_and_8_byte_kinds() -> None:
    send = next(p for p in fortran.PROCEDURES if p.name == "ma_mpi_send")
    assert [suffix for suffix, _ in send.variants()] == ["i4_i4", "i4_i8", "i8_i4", "i8_i8"]
    assert "module procedure ma_loop_start_i4, ma_loop_start_i8" in fortran.module_source()


# ---- a program of every call, in Fortran and in C ----------------------------------------------------
def run_serial(program: Path, trace_dir: Path, **env: str) -> subprocess.CompletedProcess[str]:
    done = subprocess.run([str(program)], cwd=program.parent, capture_output=True, text=True, timeout=TIMEOUT,
                          env=environment(MA_TRACE_DIR=str(trace_dir), MA_TRACE_LAYOUT="per-rank", **env))
    assert done.returncode == 0, done.stderr
    return done


def without_timings(node: dict[str, Any]) -> dict[str, Any]:
    kept = {k: v for k, v in node.items() if k not in ("wall_ns", "cpu_ns")}
    kept["children"] = [without_timings(child) for child in node["children"]]
    return kept


@pytest.fixture(scope="module")
def api_programs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """api_calls.F90 (gfortran, the environment's libraries: a Fortran program without MPI) and api_calls.c."""
    work = tmp_path_factory.mktemp("api_calls")
    fc = str(fortran.fortran_compiler(mpis.install(WHEEL.mpicc)))
    source = str(FORTRAN_TESTS / "api_calls.F90")
    return {"fortran": _build([fc, "-Wall", *WHEEL.words("--fflags"), source, "-o", str(work / "api_f"),
                               *WHEEL.words("--flibs")]),
            "disabled": _build([fc, "-Wall", *WHEEL.words("--fflags", "--disabled"), source, "-o",
                                str(work / "api_disabled"), *WHEEL.words("--flibs", "--disabled")]),
            "c": WHEEL.compile_c(FORTRAN_TESTS / "api_calls.c", work / "api_c")}


def _build(command: list[str]) -> Path:
    done = subprocess.run(command, capture_output=True, text=True, timeout=TIMEOUT)
    assert done.returncode == 0, f"{' '.join(command)}\n{done.stderr}"
    return Path(command[command.index("-o") + 1])


def test_fortran_and_c_write_the_same_trace(api_programs: dict[str, Path]) -> None:
    traces = {}
    outputs = {}
    for language in ("fortran", "c"):
        trace_dir = api_programs[language].parent / f"traces-{language}"
        outputs[language] = run_serial(api_programs[language], trace_dir).stdout.splitlines()
        traces[language] = json.loads((trace_dir / "rank-0.ma.json").read_text())
    ours, theirs = traces["fortran"], traces["c"]
    assert ours["header"]["language"] == "fortran" and theirs["header"]["language"] == "c"
    for key in ("format", "version", "variables", "anomalies", "mpi_profile", "peers", "vector_loops"):
        assert ours[key] == theirs[key], key
    trees = [[without_timings(t["root"]) for t in trace["threads"]] for trace in (ours, theirs)]
    assert trees[0] == trees[1]
    # Fortran's strings: the blank-padded variable and the C_NULL_CHAR are gone, the changed text was noticed
    root = ours["threads"][0]["root"]
    main = next(c for c in root["children"] if c["id"] == "main")
    ids = [child["id"] for child in main["children"]]
    assert ids[:4] == ["outer", "padded", "nul", "h"] and "hidden" not in ids
    changed = [a for a in ours["anomalies"] if a["kind"] == "expression_changed"]
    assert len(changed) == 1 and "'n', now 'n+1'" in changed[0]["message"]
    big = next(v for v in ours["variables"] if v["name"] == "big")
    assert big["value"] == 3000000000  # an 8-byte integer, beyond a default one
    assert outputs["fortran"][0] == outputs["c"][0] == "0 10"
    assert outputs["fortran"][1].startswith("-1 expression '1/' at column 3: unexpected")


def test_the_disabled_module_links_nothing_and_records_nothing(api_programs: dict[str, Path]) -> None:
    program = api_programs["disabled"]
    linked = subprocess.run(["ldd", str(program)], capture_output=True, text=True, timeout=TIMEOUT).stdout
    assert "libma" not in linked and "libmapmpi" not in linked and "libmpi" not in linked
    trace_dir = program.parent / "traces-disabled"
    done = run_serial(program, trace_dir)
    assert not trace_dir.exists()
    assert done.stdout.splitlines()[0] == "-1 the MA runtime is disabled"


def test_the_wheel_has_no_fortran_bindings_and_says_so() -> None:
    done = WHEEL.ma("config", "--mpifc", check=False)
    assert done.returncode == 2  # ma's exit status for an error it explains
    assert "has no Fortran compiler wrapper" in done.stderr and "the mpich wheel ships none" in done.stderr
    assert "--mpicc /usr/bin/mpicc.mpich" in done.stderr
    assert not (WHEEL.mpicc.parent / "mpifort").exists() and not list(WHEEL.mpicc.parent.parent.glob("lib/libmpifort*"))


# ---- every MPI routine, from Fortran -----------------------------------------------------------------
# (calls, bytes) of each routine on rank 0 of every_routine.F90 (MPI_INTEGER: 4 bytes); None: called at
# least once (tests that loop until done)
EXPECTED_PROFILE: dict[str, tuple[int | None, int]] = {
    "MPI_Send": (3, 4 * (3 + 12 + 13)), "MPI_Bsend": (1, 8), "MPI_Ssend": (1, 20), "MPI_Rsend": (1, 16),
    "MPI_Isend": (6, 4 * (8 + 10 + 11 + 14 + 15 + 16)), "MPI_Ibsend": (1, 24), "MPI_Issend": (1, 36),
    "MPI_Irsend": (1, 28), "MPI_Recv": (7, 4 * (3 + 5 + 2 + 6 + 9 + 13 + 14)), "MPI_Mrecv": (1, 60),
    "MPI_Irecv": (6, 4 * (4 + 7 + 8 + 10 + 11 + 12)), "MPI_Imrecv": (1, 64), "MPI_Sendrecv": (1, 68),
    "MPI_Sendrecv_replace": (1, 72), "MPI_Bcast": (1, 76), "MPI_Reduce": (1, 80), "MPI_Allreduce": (1, 84),
    "MPI_Gather": (2, 88 + 92), "MPI_Gatherv": (1, 96), "MPI_Scatter": (1, 100), "MPI_Scatterv": (1, 104),
    "MPI_Allgather": (1, 108), "MPI_Allgatherv": (1, 112), "MPI_Alltoall": (1, 2 * 116), "MPI_Alltoallv": (1, 2 * 120),
    "MPI_Barrier": (3, 0), "MPI_Wait": (4, 0), "MPI_Waitall": (2, 0), "MPI_Waitany": (1, 0), "MPI_Waitsome": (1, 0),
    "MPI_Test": (None, 0), "MPI_Testall": (None, 0), "MPI_Testany": (None, 0), "MPI_Testsome": (None, 0),
    "MPI_Probe": (1, 0), "MPI_Iprobe": (None, 0), "MPI_Mprobe": (1, 0), "MPI_Improbe": (None, 0),
}
BINDINGS = {"use mpi": (), "use mpi_f08": ("-DUSE_F08",)}


@pytest.mark.mpi
@pytest.mark.parametrize("binding", list(BINDINGS))
@pytest.mark.parametrize("mpi", [DEBIAN_MPICH, DEBIAN_OPENMPI], ids=lambda m: m.name)
def test_every_routine_is_counted_once_from_fortran(mpi: Mpi, binding: str, tmp_path: Path) -> None:
    mpi.skip_unless_available()
    program = mpi.compile_fortran(FORTRAN_TESTS / "every_routine.F90", tmp_path / "every", *BINDINGS[binding])
    trace_dir = tmp_path / "traces"
    done = mpi.ma("run", "-n", "2", "--trace-dir", str(trace_dir), "--", str(program), cwd=tmp_path,
                  MA_TRACE_LAYOUT="per-rank")
    assert "every_routine: done" in done.stdout
    for rank in (0, 1):
        trace = json.loads((trace_dir / f"rank-{rank}.ma.json").read_text())
        library = Path(mpi.words("--pmpi-library")[0])
        assert trace["header"]["mpi"] == {"profiling": True, "library": str(library.resolve()), "reason": None}
        calls = trace["mpi_profile"]["calls"]
        assert set(calls) == set(EXPECTED_PROFILE)
        for routine, (count, size) in EXPECTED_PROFILE.items():
            got = calls[routine]
            assert (got["calls"] if count is not None else min(got["calls"], 1), got["bytes"]) == \
                (count if count is not None else 1, size), routine
        partner = str(1 - rank)
        assert calls["MPI_Send"]["peers"] == {partner: [3, 112]}
        assert calls["MPI_Recv"]["peers"] == {partner: [7, 208]}
        assert calls["MPI_Imrecv"]["peers"] == {partner: [1, 64]}  # the source its Improbe reported


# ---- what must not pass silently -----------------------------------------------------------------
@pytest.mark.mpi
def test_a_program_of_another_mpi_stops_with_a_clear_error(tmp_path: Path) -> None:
    DEBIAN_MPICH.skip_unless_available()
    DEBIAN_OPENMPI.skip_unless_available()
    # compiled by Open MPI's mpifort, linked with the libraries built for MPICH
    mpifc = DEBIAN_OPENMPI.words("--mpifc")[0]
    program = _build([mpifc, *DEBIAN_MPICH.words("--fflags"), str(REPO / "examples" / "fortran_ring" / "ring.F90"),
                      "-o", str(tmp_path / "mixed"), *DEBIAN_MPICH.words("--flibs")])
    done = subprocess.run([str(program)], cwd=tmp_path, capture_output=True, text=True, timeout=TIMEOUT,
                          env=environment(MA_TRACE_DIR=str(tmp_path / "traces")))
    assert done.returncode == 1
    assert re.search(r"libmapmpi: \S+/libmapmpi\.so was built for MPICH 4\.\S+, but this process runs Open MPI v4",
                     done.stderr), done.stderr
    assert "ma tools build --mpicc" in done.stderr


@pytest.mark.mpi
def test_fortran_calls_that_bypass_libmapmpi_make_mpi_assertions_unmeasured(tmp_path: Path) -> None:
    """Open MPI's own Fortran libraries linked before ours: its mpi_send_f08_ wins, the calls bypass the
    wrappers, and the ring's MPI assertions say UNMEASURED with the reason instead of a wrong measure."""
    mpi = DEBIAN_OPENMPI
    mpi.skip_unless_available()
    mpifc = mpi.words("--mpifc")[0]
    source = REPO / "examples" / "fortran_ring" / "ring.F90"
    own_first = ["-lmpi_usempif08", "-lmpi_usempi_ignore_tkr", "-lmpi_mpifh", "-lmpi"]
    program = _build([mpifc, "-DUSE_MPI_F08", *mpi.words("--fflags"), str(source), "-o", str(tmp_path / "ring"),
                      *own_first, *mpi.words("--flibs")])
    trace_dir = tmp_path / "traces"
    done = subprocess.run([str(program), "1200", "2"], cwd=tmp_path, capture_output=True, text=True,
                          timeout=TIMEOUT, env=environment(MA_TRACE_DIR=str(trace_dir), MA_TRACE_LAYOUT="per-rank"))
    assert done.returncode == 0, done.stderr
    assert "MPI assertions will be unmeasured: MPI calls do not reach libmapmpi" in done.stderr
    header = json.loads((trace_dir / "rank-0.ma.json").read_text())["header"]
    assert header["mpi"]["profiling"] is False
    assert "mpi_send_f08_ (from " in header["mpi"]["reason"] and "libmpi_usempif08" in header["mpi"]["reason"]
    report = validation(trace_dir)
    sends = [s for s in report["sites"] if s["type"] == "mpi_send"]
    assert sends and all(s["status"] == "UNMEASURED" and "do not reach libmapmpi" in s["unmeasured_reason"]
                         for s in sends)


@pytest.mark.mpi
@pytest.mark.valgrind
def test_fortran_flops_are_measured_under_the_valgrind_tool(tmp_path: Path) -> None:
    """The ring's flop regions, counted by the maflops tool in a Fortran program: exactly 2 per element."""
    mpi = DEBIAN_MPICH
    mpi.skip_unless_available()
    program = mpi.compile_fortran(REPO / "examples" / "fortran_ring" / "ring.F90", tmp_path / "ring")
    trace_dir = tmp_path / "traces"
    mpi.ma("run", "-n", "2", "--counters", "valgrind", "--trace-dir", str(trace_dir), "--", str(program), "2000", "2",
           cwd=tmp_path)
    sites = {site["id"]: site for site in validation(trace_dir)["sites"]}
    for kernel in ("flopaxpy", "flopdot"):
        assert sites[kernel]["status"] == "PASS" and sites[kernel]["pass"] == 4, sites[kernel]
        assert sites[kernel]["measured"] == {"mean": 2000, "min": 2000, "max": 2000}  # 2 x 1000 per rank
