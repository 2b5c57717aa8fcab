"""The C annotation API (ma.h + libma): built with `ma config` flags by the venv's mpicc, run for real.

Covers the annotated example examples/c_ring under mpiexec -n 2 (trace schema, PASS with measured ==
predicted, a deliberate FAIL with both numbers, -DMA_DISABLE), the runtime's rules on a small program
(scopes, mismatches, unbalanced and mismatched ends, tracing control, evaluation errors), how MPI
assertions close, regions timing the program and not the runtime, the periodic flush of a killed rank, the
flops measured under the maflops Valgrind tool, and the C expression evaluator against the Python one.
"""

from __future__ import annotations

import ctypes
import json
import os
import random
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from trace_schema import check_trace_schema

import ma  # noqa: F401  (import order: the application layer first, as a user program does)
from ma_core.errors import ExpressionError
from ma_core.expr import parse_expression
from ma_runtime import built
from ma_tools import cparts
from ma_tools.toolchain import env_bin_dir, find_mpicc

ROOT = Path(__file__).resolve().parent.parent
RING = ROOT / "examples" / "c_ring" / "ring.c"
TIMEOUT = 300


# ---- helpers -------------------------------------------------------------------------------------
def compile_c(source: Path, output: Path, *extra: str, link: bool = True) -> Path:
    command = [str(find_mpicc()), "-O2", "-Wall", "-Wextra", "-Werror", *extra, *cparts.c_flags(), str(source),
               "-o", str(output), *(cparts.c_libs() if link else [])]
    done = subprocess.run(command, capture_output=True, text=True, timeout=TIMEOUT)
    assert done.returncode == 0, f"{' '.join(command)}\n{done.stderr}"
    return output


def environment(trace_dir: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MA_") or k == "MA_BUILD_DIR"}
    env.pop("LD_PRELOAD", None)
    env["PATH"] = f"{env_bin_dir()}{os.pathsep}{env.get('PATH', '')}"
    env["MA_TRACE_DIR"] = str(trace_dir)
    env["MA_TRACE_LAYOUT"] = "per-rank"  # these tests read rank files; test_merged_trace.py the merged one
    env.update(extra)
    return env


def run(argv: list[str], env: dict[str, str], cwd: Path, check: bool = True) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(argv, env=env, cwd=cwd, capture_output=True, text=True, timeout=TIMEOUT)
    if check:
        assert done.returncode == 0, f"{argv} failed ({done.returncode}):\n{done.stdout}\n{done.stderr}"
    return done


def mpiexec(n: int, *argv: str) -> list[str]:
    return [str(env_bin_dir() / "mpiexec"), "-n", str(n), *argv]


def nodes(trace: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Every node of thread 0 by its path (the root under "")."""
    found: dict[str, dict[str, Any]] = {}

    def walk(node: dict[str, Any]) -> None:
        found[node["path"]] = node
        for child in node["children"]:
            walk(child)

    walk(trace["threads"][0]["root"])
    return found


def anomalies(trace: dict[str, Any]) -> dict[tuple[str, str], dict[str, Any]]:
    return {(a["kind"], a["path"]): a for a in trace["anomalies"]}


# ---- the documented schema (docs/trace-format.md) ----------------------------------------------------
# ---- the example -----------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def ring(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    work = tmp_path_factory.mktemp("c_ring")
    return {"work": work,
            "annotated": compile_c(RING, work / "ring"),
            "disabled": compile_c(RING, work / "ring_disabled", "-DMA_DISABLE", link=False)}


@pytest.mark.mpi
def test_ring_example_trace(ring: dict[str, Path]) -> None:
    traces = ring["work"] / "traces"
    n, niter = 1000, 3
    env = environment(traces, MA_TOLERANCE="heap_memory=0.01", MA_RUN_ID="ring-test")
    done = run(mpiexec(2, str(ring["annotated"]), str(n), str(niter), "--wrong"), env, ring["work"])
    assert f"n={n} niter={niter} nprocs=2" in done.stdout
    assert sorted(p.name for p in traces.iterdir()) == ["rank-0.ma.json", "rank-1.ma.json"]
    for rank in (0, 1):
        trace = json.loads((traces / f"rank-{rank}.ma.json").read_text())
        check_trace_schema(trace)
        header = trace["header"]
        assert (header["language"], header["rank"], header["size"], header["status"]) == ("c", rank, 2, "complete")
        assert header["producer"].startswith("libma ") and header["run_id"] == "ring-test"
        assert header["command"][-3:] == [str(n), str(niter), "--wrong"]
        assert header["end_time"] >= header["start_time"]
        assert header["tolerance"] == {"default": 0.0, "by_type": {"heap_memory": 0.01}}
        assert header["mpi"]["profiling"] is True
        assert Path(header["mpi"]["library"]).resolve() == built.pmpi_library().resolve()
        papi = next(p for p in header["counters"]["providers"] if p["name"] == "papi")
        assert papi["available"] is False and "PAPI" in papi["reason"]
        assert header["counters"]["measures"]["flop"] is None  # no counter for flops outside Valgrind here
        assert trace["anomalies"] == []
        variables = {v["name"]: v for v in trace["variables"]}
        assert variables["n"] == {"name": "n", "kind": "input", "expr": None, "scope": "", "defs": 1,
                                  "value": n, "min": n, "max": n}
        assert variables["dp"]["kind"] == "derived" and variables["dp"]["value"] == 8
        assert variables["nprocs"]["value"] == 2

        by_path = nodes(trace)
        loop = by_path["ring/iterations"]
        assert loop["type"] == "loop" and loop["expr"] == "niter"
        assert loop["file"].endswith("ring.c") and isinstance(loop["line"], int)
        assert (loop["calls"], loop["pass"], loop["fail"]) == (1, 1, 0)
        assert loop["predicted"] == loop["measured"] == {"n": 1, "min": niter, "max": niter, "sum": niter}
        for path, size in (("ring/iterations/from_left", 8 * n), ("ring/iterations/to_right", 8 * n),
                           ("ring/iterations/sum_dot", 8)):
            node = by_path[path]
            assert (node["calls"], node["pass"], node["fail"], node["unmeasured"]) == (niter, niter, 0, 0), path
            assert node["predicted"] == node["measured"] == {"n": niter, "min": size, "max": size,
                                                             "sum": size * niter}, path
            assert node["count_expr"] == "1"
            assert node["count"]["measured"] == {"n": niter, "min": 1, "max": 1, "sum": niter}
        params = by_path["params"]
        assert params["type"] == "mpi_bcast" and params["count_expr"] == "2"
        assert (params["pass"], params["measured"]["sum"], params["count"]["measured"]["sum"]) == (1, 8, 2)
        flop = by_path["ring/iterations/axpy_dot/axpy"]
        assert flop["predicted"]["sum"] == 2 * n * niter and flop["measured"] is None
        assert flop["unmeasured"] == niter
        assert by_path["ring/iterations/axpy_dot"]["calls"] == niter
        heap = by_path["buffers"]
        assert heap["pass"] == 1 and heap["measured"]["sum"] >= 3 * 8 * n  # malloc's headers on top
        wrong = by_path["ring/halves"]
        assert (wrong["pass"], wrong["fail"]) == (0, 1)
        assert wrong["first_fail"] == {"call": 1, "predicted": n // 2 + 1, "measured": n // 2}
        # the whole-run MPI profile agrees with the assertions
        calls = trace["mpi_profile"]["calls"]
        peer = str(1 - rank)
        assert calls["MPI_Send"] == {**calls["MPI_Send"], "calls": niter, "bytes": 8 * n * niter,
                                     "peers": {peer: [niter, 8 * n * niter]}}
        assert calls["MPI_Send"]["hist"] == [[4096, 8191, niter]]
        assert calls["MPI_Irecv"]["peers"] == {peer: [niter, 8 * n * niter]}
        assert (calls["MPI_Bcast"]["calls"], calls["MPI_Bcast"]["bytes"]) == (2, 16)
        assert calls["MPI_Wait"]["calls"] == niter


@pytest.mark.mpi
def test_disabled_build_runs_and_writes_nothing(ring: dict[str, Path]) -> None:
    traces = ring["work"] / "traces_disabled"
    done = run(mpiexec(2, str(ring["disabled"]), "200", "2"), environment(traces), ring["work"])
    assert "n=200 niter=2 nprocs=2" in done.stdout
    assert not traces.exists()
    symbols = subprocess.run(["nm", "-D", str(ring["disabled"])], capture_output=True, text=True).stdout
    assert "ma_start_at" not in symbols and "ma_mpi_at" not in symbols
    assert "ma_start_at" in subprocess.run(["nm", "-D", str(ring["annotated"])], capture_output=True,
                                           text=True).stdout


@pytest.mark.mpi
def test_ma_disable_environment_writes_nothing(ring: dict[str, Path]) -> None:
    traces = ring["work"] / "traces_env_disabled"
    run(mpiexec(2, str(ring["annotated"]), "100", "1"), environment(traces, MA_DISABLE="1"), ring["work"])
    assert not traces.exists()


# ---- the runtime's rules ------------------------------------------------------------------------------
RULES = r'''
#include "ma.h"

int main(void)
{
    ma_def_variable_int("n", 10);
    ma_subroutine_start("outer");
    ma_def_variable_int("m", 3);                     /* visible in outer only */
    ma_loop_start("inner", "n*m", 30);
    long long i;
    for (i = 0; i < 30; i++)
        ;
    ma_loop_end("inner", i);
    ma_loop_start("given_differs", "n+1", 12);       /* the program's value disagrees */
    ma_loop_end("given_differs", 11);
    ma_subroutine_end("outer");
    ma_loop_start("uses_m", "m", MA_NO_VALUE);       /* m went out of scope with outer */
    ma_loop_end("uses_m", 3);
    ma_loop_start("no_count", "n", MA_NO_VALUE);
    ma_loop_end("no_count", MA_NO_VALUE);            /* nothing measured */
    ma_def_variable_assign_int("quarter", "n/4", 2); /* 2.5 evaluated, 2 given */
    ma_loop_start("a", "1", 1);
    ma_loop_start("b", "1", 1);
    ma_loop_end("a", 1);                             /* b left open */
    ma_loop_end("zzz", 1);                           /* never opened */
    ma_unset_tracing();
    ma_loop_start("hidden", "1", 1);
    ma_loop_end("hidden", 1);
    ma_def_variable_int("late", 7);                  /* still binds while tracing is off */
    ma_set_tracing();
    ma_loop_start("after", "late", 7);
    ma_loop_end("after", 7);
    for (int k = 0; k < 3; k++) {
        ma_loop_start("changing", k == 2 ? "n-1" : "n", 10);
        ma_loop_end("changing", 10);
    }
    ma_loop_start("bad_syntax", "n +* 2", MA_NO_VALUE);
    ma_loop_end("bad_syntax", 1);
    ma_flop_start("flops", "2*n", 20);
    ma_flop_stop("flops");
    ma_loop_start("bad/id", "1", 1);
    ma_loop_start("open_at_exit", "1", 1);
    return 0;                                        /* the trace is written at exit */
}
'''


def test_runtime_rules(tmp_path: Path) -> None:
    source = tmp_path / "rules.c"
    source.write_text(RULES)
    program = compile_c(source, tmp_path / "rules")
    traces = tmp_path / "traces"
    run([str(program)], environment(traces), tmp_path)
    trace = json.loads((traces / "rank-0.ma.json").read_text())
    check_trace_schema(trace)
    header = trace["header"]
    assert (header["rank"], header["size"], header["status"]) == (0, 1, "complete")
    assert trace["mpi_profile"] == {"calls": {}}
    by_path = nodes(trace)
    found = anomalies(trace)

    variables = {(v["name"], v["scope"]): v for v in trace["variables"]}
    # "late" was declared with tracing off: bound (see "after"), but not recorded
    assert set(variables) == {("n", ""), ("m", "outer"), ("quarter", "")}
    assert variables[("quarter", "")]["value"] == 2.5 and variables[("quarter", "")]["kind"] == "derived"

    inner = by_path["outer/inner"]
    assert (inner["pass"], inner["predicted"]["sum"], inner["measured"]["sum"]) == (1, 30, 30)
    differs = by_path["outer/given_differs"]
    assert differs["pass"] == 1 and differs["mismatch"] == 1
    assert differs["first_mismatch"] == {"given": 12, "evaluated": 11}

    uses_m = by_path["uses_m"]
    assert (uses_m["unmeasured"], uses_m["predicted"]) == (1, None)
    assert "variable 'm' is not defined" in found[("evaluation", "uses_m")]["message"]
    assert by_path["no_count"]["unmeasured"] == 1 and by_path["no_count"]["predicted"]["sum"] == 10

    quarter = by_path["quarter"]
    assert quarter["type"] == "assign" and quarter["expr"] == "n/4"
    assert (quarter["fail"], quarter["mismatch"]) == (1, 1)
    assert quarter["first_fail"] == {"call": 1, "predicted": 2.5, "measured": 2}

    assert by_path["a"]["pass"] == 1 and by_path["a/b"]["unmeasured"] == 1
    assert found[("unbalanced", "a/b")]["message"] == "loop 'b' was still open when loop 'a' ended"
    assert "end of loop 'a' while loop 'b' is the innermost" in found[("mismatched_end", "a/b")]["message"]
    assert found[("mismatched_end", "")]["message"] == "end of loop 'zzz', which is not open (none is open); ignored"
    assert found[("mismatched_end", "")]["file"].endswith("rules.c")

    assert "hidden" not in by_path
    assert by_path["after"]["pass"] == 1 and by_path["after"]["predicted"]["sum"] == 7
    changing = by_path["changing"]
    assert (changing["calls"], changing["pass"], changing["expr"]) == (3, 3, "n")
    assert found[("expression_changed", "changing")]["count"] == 1
    assert by_path["bad_syntax"]["unmeasured"] == 1
    assert "at column 4: unexpected '*'" in found[("evaluation", "bad_syntax")]["message"]
    assert by_path["flops"]["unmeasured"] == 1 and by_path["flops"]["measured"] is None
    assert "bad/id" not in by_path and ("invalid", "") in found
    assert by_path["open_at_exit"]["unmeasured"] == 1
    assert found[("unbalanced", "open_at_exit")]["message"] == "loop 'open_at_exit' was still open at exit"


MPI_CLOSING = r'''
#include <mpi.h>
#include "ma.h"

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    double buf[16] = {0};
    ma_def_variable_int("k", 16);
    if (rank == 0) {
        ma_mpi_send("pair", "8*k", 128, 2);          /* closes itself after the 2nd MPI_Send */
        MPI_Send(buf, 16, MPI_DOUBLE, 1, 0, MPI_COMM_WORLD);
        MPI_Send(buf, 16, MPI_DOUBLE, 1, 1, MPI_COMM_WORLD);
        MPI_Send(buf, 4, MPI_DOUBLE, 1, 2, MPI_COMM_WORLD);   /* after it: not part of "pair" */
        ma_mpi_send("short", "8*k", 128, 3);         /* 1 of 3 calls before the next mpi_send assertion */
        MPI_Send(buf, 16, MPI_DOUBLE, 1, 3, MPI_COMM_WORLD);
        ma_mpi_send("wrong_size", "8*k", 128, 1);    /* sends 4 doubles, not 16 */
        MPI_Send(buf, 4, MPI_DOUBLE, 1, 4, MPI_COMM_WORLD);
        ma_loop_start("lp", "2", 2);
        int i;
        for (i = 0; i < 2; i++) {
            ma_mpi_send("each", "8", 8, 1);
            MPI_Send(buf, 1, MPI_DOUBLE, 1, 5, MPI_COMM_WORLD);
        }
        ma_mpi_send("tail", "8", 8, 5);              /* closed by the end of lp, with no call */
        ma_loop_end("lp", i);
        MPI_Send(buf, 1, MPI_DOUBLE, 1, 6, MPI_COMM_WORLD);
    } else {
        MPI_Status status;
        ma_mpi("mpi_recv", "recvs", "8*k", MA_NO_VALUE, "k/4", 4);
        MPI_Recv(buf, 16, MPI_DOUBLE, 0, 0, MPI_COMM_WORLD, &status);
        MPI_Recv(buf, 16, MPI_DOUBLE, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Recv(buf, 16, MPI_DOUBLE, 0, 2, MPI_COMM_WORLD, &status);   /* 4 doubles arrive */
        MPI_Recv(buf, 16, MPI_DOUBLE, 0, 3, MPI_COMM_WORLD, &status);
        for (int tag = 4; tag <= 6; tag++)
            MPI_Recv(buf, 16, MPI_DOUBLE, 0, tag, MPI_COMM_WORLD, &status);
        MPI_Recv(buf, 16, MPI_DOUBLE, 0, 5, MPI_COMM_WORLD, &status);
    }
    ma_mpi_barrier("sync", "0", 0, 1);
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Finalize();
    return 0;
}
'''


@pytest.mark.mpi
def test_mpi_assertions_close_after_their_calls(tmp_path: Path) -> None:
    source = tmp_path / "closing.c"
    source.write_text(MPI_CLOSING)
    program = compile_c(source, tmp_path / "closing")
    traces = tmp_path / "traces"
    run(mpiexec(2, str(program)), environment(traces), tmp_path)
    sender, receiver = (json.loads((traces / f"rank-{r}.ma.json").read_text()) for r in (0, 1))
    for trace in (sender, receiver):
        check_trace_schema(trace)
        assert nodes(trace)["sync"]["pass"] == 1 and nodes(trace)["sync"]["measured"]["sum"] == 0
    s = nodes(sender)
    assert (s["pair"]["pass"], s["pair"]["measured"]["sum"], s["pair"]["count"]["measured"]["sum"]) == (1, 128, 2)
    assert s["short"]["fail"] == 1
    assert s["short"]["first_fail"] == {"call": 1, "predicted": 128, "measured": 128, "count_predicted": 3,
                                        "count_measured": 1}
    assert s["wrong_size"]["first_fail"] == {"call": 1, "predicted": 128, "measured": 32, "count_predicted": 1,
                                             "count_measured": 1}
    assert (s["lp/each"]["calls"], s["lp/each"]["pass"]) == (2, 2)
    assert s["lp/tail"]["first_fail"] == {"call": 1, "predicted": 8, "measured": 0, "count_predicted": 5,
                                          "count_measured": 0}
    assert sender["mpi_profile"]["calls"]["MPI_Send"]["calls"] == 8
    # receives: the bytes that arrived (16+16+4+16 doubles over the 4 calls), the count from "k/4"
    recvs = nodes(receiver)["recvs"]
    assert recvs["count_expr"] == "k/4" and recvs["count"]["predicted"]["sum"] == 4
    assert recvs["count"]["measured"]["sum"] == 4
    assert recvs["measured"]["sum"] == 8 * (16 + 16 + 4 + 16) // 4 and recvs["fail"] == 1
    assert receiver["mpi_profile"]["calls"]["MPI_Recv"]["peers"] == {"0": [8, 8 * (16 + 16 + 4 + 16 + 4 + 1 + 1 + 1)]}


# A region timed by the program's own clock: a 50 ms spin, then many empty regions (the runtime's work only).
SELF_TIME = r'''
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "ma.h"

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + 1e-9 * t.tv_nsec;
}

static void empty_regions(int n)
{
    for (int i = 0; i < n; i++) {
        ma_loadstore_start("empty", "0", 0);
        ma_loadstore_stop("empty");
    }
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int empty = atoi(argv[1]);
    ma_subroutine_start("sub"); /* a subroutine adds up its CPU time too */
    ma_loop_start("outer", "1", 1);
    double t0 = now(), s0 = now();
    while (now() - s0 < 0.05)
        ;
    double spun = now() - s0;
    empty_regions(empty);
    double seen = now() - t0;
    ma_loop_end("outer", 1);
    ma_subroutine_end("sub");
    ma_mpi_barrier("sync", "0", 0, 1); /* an MPI assertion's time runs to its call's end */
    double t1 = now();
    empty_regions(empty);
    MPI_Barrier(MPI_COMM_WORLD);
    double before_barrier = now() - t1;
    printf("%.9f %.9f %.9f\n", spun, seen, before_barrier);
    MPI_Finalize();
    return 0;
}
'''


@pytest.mark.mpi
def test_a_region_reports_the_program_time_not_the_annotations_inside_it(tmp_path: Path) -> None:
    """libma's fence times the runtime's own calls (ma_fence.h) and a region leaves them out of its wall and CPU
    time: the spin is kept, and of what the 100,000 empty regions cost by the program's own clock at most half
    remains (the loop around them; a preemption there), in the region around them, in their own times and in an
    MPI assertion open across them alike, where the runtime's times kept all of it before (docs/c-api.md,
    "Regions time the program")."""
    source = tmp_path / "selftime.c"
    source.write_text(SELF_TIME)
    program = compile_c(source, tmp_path / "selftime")
    traces = tmp_path / "traces"
    done = run(mpiexec(1, str(program), "100000"), environment(traces), tmp_path)
    spun, seen, before_barrier = (float(x) for x in done.stdout.split())
    found = nodes(json.loads((traces / "rank-0.ma.json").read_text()))
    annotations = seen - spun
    assert annotations > 0.01, "100,000 empty regions must cost the runtime something measurable"
    assert spun <= found["sub/outer"]["wall_ns"] * 1e-9 <= spun + 0.5 * annotations, (spun, found["sub/outer"], seen)
    assert found["sub"]["cpu_ns"] * 1e-9 <= spun + 0.5 * annotations, (spun, found["sub"], seen)
    assert found["sub/outer/empty"]["calls"] == 100000
    assert found["sub/outer/empty"]["wall_ns"] * 1e-9 <= 0.5 * annotations, (found["sub/outer/empty"], annotations)
    # the barrier's assertion spans the second 100,000 empty regions and the barrier itself
    assert found["sync"]["pass"] == 1
    assert found["sync"]["wall_ns"] * 1e-9 <= 0.5 * before_barrier, (found["sync"], before_barrier)

FLUSHING = r'''
#include <signal.h>
#include <time.h>
#include "ma.h"

int main(void)
{
    struct timespec pause = {0, 20 * 1000 * 1000};
    ma_def_variable_int("n", 1);
    for (int i = 0; i < 10; i++) {
        ma_loop_start("tick", "n", 1);
        nanosleep(&pause, NULL);
        ma_loop_end("tick", 1);
    }
    raise(SIGKILL);                                  /* no exit handler runs */
    return 0;
}
'''


def test_periodic_flush_leaves_a_trace_when_killed(tmp_path: Path) -> None:
    source = tmp_path / "flushing.c"
    source.write_text(FLUSHING)
    program = compile_c(source, tmp_path / "flushing")
    traces = tmp_path / "traces"
    done = run([str(program)], environment(traces, MA_FLUSH_SECONDS="0.05"), tmp_path, check=False)
    assert done.returncode == -9
    trace = json.loads((traces / "rank-0.ma.json").read_text())
    check_trace_schema(trace)
    assert trace["header"]["status"] == "running" and trace["header"]["end_time"] is None
    tick = nodes(trace)["tick"]
    # the last flush may follow any tick's end, the tenth included, when a slow host stretches the sleeps
    assert 1 <= tick["calls"] <= 10 and tick["pass"] == tick["calls"]
    assert not [p for p in traces.iterdir() if p.name.endswith(".tmp")]


# ---- flops measured under the maflops Valgrind tool -------------------------------------------------------
@pytest.mark.mpi
@pytest.mark.valgrind
def test_ring_flops_are_measured_under_the_valgrind_tool(ring: dict[str, Path]) -> None:
    if shutil.which("valgrind") is None:
        pytest.fail("valgrind is not installed on this host: scripts/setup.sh installs it")
    from ma_tools.valgrind import valgrind_launch_prefix

    prefix, env_add = valgrind_launch_prefix()
    traces = ring["work"] / "traces_valgrind"
    n, niter = 500, 2
    env = environment(traces, MA_COUNTERS="valgrind", **env_add)
    run(mpiexec(2, *prefix, str(ring["annotated"]), str(n), str(niter)), env, ring["work"])
    for rank in (0, 1):
        trace = json.loads((traces / f"rank-{rank}.ma.json").read_text())
        check_trace_schema(trace)
        assert trace["header"]["counters"]["measures"]["flop"] == {"provider": "valgrind",
                                                                   "source": "maflops:dp_flops+sp_flops"}
        for kernel in ("axpy", "dot"):
            node = nodes(trace)[f"ring/iterations/axpy_dot/{kernel}"]
            assert (node["pass"], node["fail"], node["unmeasured"]) == (niter, 0, 0), kernel
            assert node["measured"] == node["predicted"] == {"n": niter, "min": 2 * n, "max": 2 * n,
                                                             "sum": 2 * n * niter}


# ---- the expression evaluator ---------------------------------------------------------------------------
@pytest.fixture(scope="module")
def libma() -> Any:
    lib = ctypes.CDLL(str(cparts.build_c_runtime()))
    lib.ma_evaluate.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_size_t]
    lib.ma_evaluate.restype = ctypes.c_int
    return lib


def c_evaluate(lib: Any, text: str, bindings: dict[str, int | float]) -> tuple[bool, Any]:
    out = ctypes.create_string_buffer(4096)
    spec = ",".join(f"{k}={v!r}" for k, v in bindings.items()).encode()
    ok = lib.ma_evaluate(text.encode(), spec, out, len(out)) == 0
    return ok, json.loads(out.value.decode()) if ok else out.value.decode()


def py_evaluate(text: str, bindings: dict[str, int | float]) -> tuple[bool, Any]:
    try:
        return True, parse_expression(text).evaluate(bindings)
    except ExpressionError as exc:
        return False, str(exc)


FIXED_CASES = [
    "1+2*3", "-2^2", "2^3^2", "2^-1", "2**10", "8*na/2", "7/2", "na/3", "16/4/2", "3-2-1", "2*-3", "+5",
    "ceil(7/2)", "floor(-7/2)", "ceil(2.0)", "log(8)/log(2)", "log2(8)", "log10(1000)", "exp(1)", "sqrt(16)",
    "sqrt(15)", "abs(-3)", "abs(-3.5)", "min(3, 2.0, 2)", "max(1, 2, 3)", "mod(-7, 3)", "mod(7, -3)",
    "mod(7.5, 2)", "mod(-7.5, 2)", "mod(5, 0)", "1.5e3", ".5", "1.", "2^ceil(log(nprocs)/(2*log(2)))",
    "log(npc)/log(2)", "dp*na/npc", "0.1+0.2", "1/3", "1e16", "1e-05*1", "na*na*na*na*na", "-na^2",
    # errors: same message, same column
    "1/0", "0^-1", "(-8)^(1/3)", "log(0)", "sqrt(-1)", "exp(1000)", "x + 1", "log", "foo(1)", "min(1)",
    "mod(1,2,3)", "", "2 3", "1 +", "(1", "3 $ 4",
]
BINDINGS: dict[str, int | float] = {"na": 1400, "nprocs": 4, "npc": 2, "dp": 8, "h": 0.25}


def test_c_evaluator_matches_python_on_fixed_cases(libma: Any) -> None:
    for text in FIXED_CASES:
        py_ok, py_value = py_evaluate(text, BINDINGS)
        c_ok, c_value = c_evaluate(libma, text, BINDINGS)
        assert py_ok == c_ok, (text, py_value, c_value)
        if py_ok:
            assert c_value == py_value and type(c_value) is type(py_value), (text, py_value, c_value)
        else:
            # the message up to the (expected ...) part: lark lists terminals, the C parser says it in words
            assert c_value.split(" (expected")[0] == py_value.split(" (expected")[0], text


def random_expression(rng: random.Random, depth: int) -> str:
    if depth == 0 or rng.random() < 0.25:
        return rng.choice(["na", "nprocs", "npc", "dp", "h", str(rng.randint(0, 12)), f"{rng.uniform(0, 9):.2f}"])
    kind = rng.randrange(6)
    a, b = random_expression(rng, depth - 1), random_expression(rng, depth - 1)
    if kind == 0:
        return f"{a} {rng.choice('+-*/')} {b}"
    if kind == 1:
        return f"({a})^{rng.randint(0, 3)}"
    if kind == 2:
        return f"-({a})"
    if kind == 3:
        return f"{rng.choice(['ceil', 'floor', 'abs', 'sqrt', 'log2', 'log', 'log10', 'exp'])}({a})"
    if kind == 4:
        return f"{rng.choice(['min', 'max', 'mod'])}({a}, {b})"
    return f"({a}) {rng.choice('+-*/')} ({b})"


def test_c_evaluator_matches_python_on_random_expressions(libma: Any) -> None:
    rng = random.Random(20240607)
    compared = 0
    for _ in range(3000):
        text = random_expression(rng, 4)
        py_ok, py_value = py_evaluate(text, BINDINGS)
        if py_ok and isinstance(py_value, int) and abs(py_value) >= 2**63:
            continue  # beyond 64-bit integers the C runtime switches to doubles (documented)
        c_ok, c_value = c_evaluate(libma, text, BINDINGS)
        assert py_ok == c_ok, (text, py_value, c_value)
        if py_ok:
            assert type(c_value) is type(py_value), (text, py_value, c_value)
            assert c_value == py_value or (c_value != c_value and py_value != py_value), (text, py_value, c_value)
            compared += 1
    assert compared > 1500


# ---- `ma config` -------------------------------------------------------------------------------------------
def test_ma_config_prints_the_flags() -> None:
    ma_command = env_bin_dir() / "ma"
    argv = [str(ma_command)] if ma_command.exists() else [sys.executable, "-m", "ma_cli.main"]
    done = subprocess.run([*argv, "config", "--cflags", "--libs"], capture_output=True, text=True, timeout=TIMEOUT)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == cparts.c_flags() + cparts.c_libs()
    assert (Path(cparts.c_flags()[0][2:]) / "ma.h").is_file()
    bare = subprocess.run([*argv, "config"], capture_output=True, text=True, timeout=TIMEOUT)
    assert bare.returncode == 2 and "--cflags" in bare.stderr
