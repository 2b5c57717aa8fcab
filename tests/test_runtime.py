"""MARS: every annotation type, scoping, folding, counters, anomalies, disabled mode, trace writing."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import clean_env, count_nodes, find_node


def test_every_annotation_type_is_recorded(run_program) -> None:
    run = run_program("""
        import ma
        n = 12
        ma.variable("n", n)
        ma.assign("half", "n/2", n // 2)

        @ma.subroutine("kernel")
        def kernel():
            with ma.flop("axpy", "2*n"):
                pass
            with ma.loadstore("ls", "3*n"):
                pass
            with ma.stack_memory("stack", "8*n"):
                pass

        @ma.subroutine
        def bare():
            pass

        with ma.loop("outer", "3") as lp:
            for i in lp.range(3):
                kernel()
                bare()
        with ma.loop("it", "half") as lp:
            for item in lp.iter(list(range(6))):
                pass
        with ma.loop("paper", "n") as lp:
            lp.end(12)
        with ma.subroutine("ctx"):
            pass
    """)
    assert run.returncode == 0, run.stderr
    trace = run.trace()
    assert trace["format"] == "ma-trace" and trace["version"] == 1
    root = run.tree()
    outer = find_node(root, "outer")
    assert outer["type"] == "loop" and outer["expr"] == "3"
    assert outer["predicted"]["sum"] == 3 and outer["measured"]["sum"] == 3 and outer["pass"] == 1
    kernel = find_node(root, "outer/kernel")
    assert kernel["type"] == "subroutine" and kernel["calls"] == 3 and kernel["wall_ns"] > 0
    assert kernel["cpu_ns"] > 0  # subroutines record CPU time by default
    assert find_node(root, "outer/bare")["calls"] == 3
    axpy = find_node(root, "outer/kernel/axpy")
    assert axpy["type"] == "flop" and axpy["calls"] == 3 and axpy["predicted"]["sum"] == 72
    assert axpy["unmeasured"] == 3 and axpy["pass"] == 0 and axpy["fail"] == 0  # no PMU here
    assert find_node(root, "outer/kernel/ls")["unmeasured"] == 3
    assert find_node(root, "outer/kernel/stack")["predicted"]["min"] == 96
    it = find_node(root, "it")
    assert it["measured"]["sum"] == 6 and it["pass"] == 1
    assert find_node(root, "paper")["pass"] == 1
    assert find_node(root, "ctx")["type"] == "subroutine"
    half = find_node(root, "half")
    assert half["type"] == "assign" and half["expr"] == "n/2" and half["predicted"]["sum"] == 6
    assert axpy["file"].endswith("prog.py") and axpy["line"] == 9
    variables = {v["name"]: v for v in trace["variables"]}
    assert variables["n"]["kind"] == "input" and variables["n"]["value"] == 12
    assert variables["half"]["kind"] == "derived" and variables["half"]["expr"] == "n/2"
    header = trace["header"]
    assert header["status"] == "complete" and header["rank"] == 0 and header["size"] == 1
    assert header["end_time"] >= header["start_time"]
    assert header["command"][-1].endswith("prog.py")


def test_wrong_assertion_fails_with_both_numbers(run_program) -> None:
    run = run_program("""
        import ma
        ma.variable("n", 10)
        for _ in range(4):
            with ma.loop("l", "n+1") as lp:
                for i in lp.range(10):
                    pass
    """)
    node = find_node(run.tree(), "l")
    assert node["fail"] == 4 and node["pass"] == 0
    assert node["first_fail"] == {"call": 1, "predicted": 11, "measured": 10}  # 1-based


def test_unmeasured_counters_say_why(run_program) -> None:
    run = run_program("""
        import ma
        with ma.flop("f", "1"):
            pass
    """, MA_COUNTERS="papi")
    header = run.trace()["header"]
    papi = header["counters"]["providers"][0]
    assert papi["name"] == "papi"
    if not papi["available"]:  # this host: no PMU
        assert header["counters"]["measures"]["flop"] is None
        assert papi["reason"] and any(state != "ok" for state in papi["events"].values())
        assert find_node(run.tree(), "f")["unmeasured"] == 1
    else:  # a host with counters measures the region
        assert header["counters"]["measures"]["flop"]["provider"] == "papi"


def test_heap_memory_measured_with_tracemalloc(run_program) -> None:
    run = run_program("""
        import ma, numpy as np
        ma.variable("n", 100000)
        keep = []
        with ma.heap_memory("alloc", "8*n"):
            keep.append(np.ones(100000))
    """, MA_COUNTERS="tracemalloc", MA_TOLERANCE="heap_memory=0.01")
    node = find_node(run.tree(), "alloc")
    assert node["pass"] == 1, node
    assert abs(node["measured"]["sum"] - 800000) <= 8000  # the array, give or take interpreter bookkeeping
    assert run.trace()["header"]["counters"]["measures"]["heap_memory"]["provider"] == "tracemalloc"


def test_value_mismatch_is_reported(run_program) -> None:
    run = run_program("""
        import ma
        ma.variable("n", 10)
        ma.assign("m", "n*2", 21)
        with ma.loop("l", "n", 11) as lp:
            lp.end(10)
    """)
    root = run.tree()
    loop = find_node(root, "l")
    assert loop["mismatch"] == 1 and loop["first_mismatch"] == {"given": 11, "evaluated": 10}
    assert loop["pass"] == 1  # the runtime's own evaluation is what is checked against the measurement
    assign = find_node(root, "m")
    assert assign["mismatch"] == 1 and assign["fail"] == 1


def test_variables_are_scoped_to_their_subroutine_or_loop(run_program) -> None:
    run = run_program("""
        import ma
        ma.variable("n", 5)
        with ma.subroutine("s"):
            ma.variable("n", 7)          # shadows the outer n
            ma.variable("local", 3)
            with ma.loop("inner", "n*local") as lp:
                lp.end(21)
        with ma.loop("after", "n") as lp:  # the outer n again
            lp.end(5)
        try:
            with ma.loop("gone", "local"):
                pass
        except ma.UndefinedVariableError as exc:
            print("undefined:", exc.name)
    """)
    assert run.returncode == 0, run.stderr
    assert "undefined: local" in run.stdout
    root = run.tree()
    assert find_node(root, "s/inner")["pass"] == 1
    assert find_node(root, "after")["pass"] == 1
    scopes = {(v["name"], v["scope"]) for v in run.trace()["variables"]}
    assert {("n", ""), ("n", "s"), ("local", "s")} <= scopes
    assert any(a["kind"] == "evaluation" and a["path"] == "gone" for a in run.trace()["anomalies"])


def test_evaluation_error_names_the_site(run_program) -> None:
    run = run_program("""
        import ma
        with ma.loop("l", "undeclared*2"):
            pass
    """)
    assert run.returncode != 0
    assert "'undeclared' is not defined" in run.stderr
    assert "loop assertion 'l'" in run.stderr and "prog.py:3" in run.stderr


@pytest.mark.parametrize("iterations", [10, 500])
def test_calls_fold_so_the_trace_does_not_grow(run_program, iterations: int) -> None:
    run = run_program(f"""
        import ma
        ma.variable("n", 4)
        for _ in range({iterations}):
            with ma.subroutine("s"):
                with ma.loop("l", "n") as lp:
                    for i in lp.range(4):
                        with ma.flop("f", "2*n"):
                            pass
    """)
    root = run.tree()
    assert count_nodes(root) == 5  # root, n, s, l, f
    assert find_node(root, "s/l")["calls"] == iterations
    assert find_node(root, "s/l/f")["calls"] == 4 * iterations


@pytest.mark.parametrize("runtime", [{}, {"MA_PURE_PYTHON": "1"}, {"MA_FLUSH_SECONDS": "0.000001"}],
                         ids=["compiled", "pure", "flushed-every-call"])
def test_repeated_calls_fold_into_exact_statistics(run_program, runtime: dict[str, str]) -> None:
    # A call that repeats the previous one is only counted, and folded when a different one comes: the
    # runs below (repeats, changes, a return to an earlier value, zero) must still give exact aggregates,
    # also when the trace is written after every call (pending repeats serialised, not folded).
    run = run_program("""
        import ma
        for k in (3, 3, 3, 5, 5, 3, 3, 0, 4, 4):  # ends on a repeat: written while still pending
            ma.variable("k", k)
            with ma.loop("l", "k") as lp:
                for i in lp.range(4 if k == 5 else k):
                    pass
            with ma.flop("f", "2*k"):
                pass
            with ma.mpi_send("m", "8*k"):  # no MPI here: predicted and counted, unmeasured
                pass
    """, **runtime)
    assert run.returncode == 0, run.stderr
    root = run.tree()
    loop = find_node(root, "l")
    assert loop["measured"] == {"n": 10, "min": 0, "max": 4, "sum": 3 * 5 + 4 * 2 + 4 * 2}
    assert loop["predicted"] == {"n": 10, "min": 0, "max": 5, "sum": 3 * 5 + 5 * 2 + 4 * 2}
    assert loop["pass"] == 8 and loop["fail"] == 2 and loop["first_fail"]["call"] == 4
    flop = find_node(root, "f")
    assert flop["predicted"] == {"n": 10, "min": 0, "max": 10, "sum": 2 * (3 * 5 + 5 * 2 + 4 * 2)}
    assert flop["unmeasured"] == 10 and flop["calls"] == 10
    assert find_node(root, "k")["predicted"] == {"n": 10, "min": 0, "max": 5, "sum": 3 * 5 + 5 * 2 + 4 * 2}
    message = find_node(root, "m")
    assert message["predicted"] == {"n": 10, "min": 0, "max": 40, "sum": 8 * (3 * 5 + 5 * 2 + 4 * 2)}
    assert message["count"]["predicted"] == {"n": 10, "min": 1, "max": 1, "sum": 10}
    assert message["count"]["measured"] is None and message["unmeasured"] == 10


@pytest.mark.parametrize("runtime", [{}, {"MA_PURE_PYTHON": "1"}], ids=["compiled", "pure"])
def test_a_site_hands_out_its_object_again_only_when_nothing_else_holds_it(run_program,
                                                                           runtime: dict[str, str]) -> None:
    # Compiled, a site keeps the object of its last call for the next one. One the program still holds (a
    # kept ``as lp``, one made and not entered yet) must never be handed out, and every call's measurement
    # must stay its own.
    run = run_program("""
        import ma
        ma.variable("n", 3)
        with ma.loop("l", "n") as first:
            for i in first.range(3):
                pass
        with ma.loop("l", "n") as second:    # `first` is still held: a new object
            for i in second.range(2):
                break
        print("distinct", second is not first)

        def free_site():
            a = ma.flop("f", "2*n")
            with a:
                pass
            return id(a)

        ids = {free_site() for _ in range(5)}
        print("reused", len(ids))

        with ma.flop("g", "n"):
            pass
        made = ma.flop("g", "n")       # the site's object (compiled)...
        another = ma.flop("g", "n")    # ... is held by `made`: a new one
        print("made twice", made is not another)
        with made:
            with another:              # entered below `made`: the site g/g
                pass
    """, **runtime)
    assert run.returncode == 0, run.stderr
    assert "distinct True" in run.stdout and "made twice True" in run.stdout
    if not runtime:
        assert "reused 1" in run.stdout  # one object for five calls
    root = run.tree()
    loop = find_node(root, "l")
    assert loop["calls"] == 2 and loop["measured"]["sum"] == 3 + 1
    assert find_node(root, "f")["calls"] == 5
    assert find_node(root, "g")["calls"] == 2 and find_node(root, "g/g")["calls"] == 1


def test_unbalanced_and_mismatched_annotations_are_recorded(run_program) -> None:
    run = run_program("""
        import ma
        ma.variable("n", 3)
        ma.loop_start("a", "n")
        ma.loop_start("b", "n")
        ma.loop_end("zzz", 3)     # not open at all
        ma.loop_end("a", 3)       # closes b as unbalanced first
        ma.subroutine_start("left_open")
    """)
    assert run.returncode == 0, run.stderr
    kinds = {(a["kind"], a["path"]) for a in run.trace()["anomalies"]}
    assert ("mismatched_end", "a/b") in kinds  # reported at the innermost open site
    assert ("unbalanced", "a/b") in kinds
    assert ("unbalanced", "left_open") in kinds
    root = run.tree()
    assert find_node(root, "a")["pass"] == 1
    assert find_node(root, "a/b")["unmeasured"] == 1  # b never got its count


def test_exception_through_an_annotation(run_program) -> None:
    run = run_program("""
        import ma
        ma.variable("n", 3)
        try:
            with ma.loop("l", "n") as lp:
                lp.end(3)
                raise ValueError("boom")
        except ValueError:
            pass
    """)
    node = find_node(run.tree(), "l")
    assert node["unmeasured"] == 1 and node["pass"] == 0
    assert any(a["kind"] == "exception" and "ValueError" in a["message"] for a in run.trace()["anomalies"])


def test_uncaught_exception_still_writes_the_trace(run_program) -> None:
    run = run_program("""
        import ma
        with ma.subroutine("main"):
            raise RuntimeError("fatal")
    """)
    assert run.returncode == 1 and "RuntimeError: fatal" in run.stderr
    header = run.trace()["header"]
    assert header["status"] == "exception" and "fatal" in header["exit_reason"]


def test_tracing_switch(run_program) -> None:
    run = run_program("""
        import ma
        ma.variable("n", 2)
        ma.tracing(False)
        with ma.loop("off", "n"):
            pass
        ma.tracing(True)
        with ma.no_tracing():
            ma.variable("m", 4)       # still takes effect
            with ma.loop("quiet", "n"):
                pass
        with ma.loop("on", "m") as lp:
            lp.end(4)
    """)
    paths = [c["path"] for c in run.tree()["children"]]
    assert "off" not in paths and "quiet" not in paths
    assert find_node(run.tree(), "on")["pass"] == 1


def test_tolerance_default_and_per_type(run_program) -> None:
    source = """
        import ma
        with ma.loop("l", "100") as lp:
            lp.end(95)
    """
    strict = run_program(source)
    assert find_node(strict.tree(), "l")["fail"] == 1
    loose = run_program(source, MA_TOLERANCE="0.01,loop=0.1")
    assert find_node(loose.tree(), "l")["pass"] == 1
    assert loose.trace()["header"]["tolerance"] == {"default": 0.01, "by_type": {"loop": 0.1}}


def test_threads_get_their_own_tree(run_program) -> None:
    run = run_program("""
        import threading, ma
        ma.variable("n", 8)
        def work():
            with ma.loop("worker", "n") as lp:
                lp.end(8)
        t = threading.Thread(target=work, name="helper")
        t.start(); t.join()
        with ma.loop("main", "n") as lp:
            lp.end(8)
    """)
    threads = run.trace()["threads"]
    names = {t["name"]: t["root"] for t in threads}
    assert set(names) == {"MainThread", "helper"}
    assert find_node(names["helper"], "worker")["pass"] == 1
    assert find_node(names["MainThread"], "main")["pass"] == 1


def test_disabled_mode_is_a_no_op(run_program) -> None:
    run = run_program("""
        import ma, sys
        ma.variable("n", 3)
        ma.assign("m", "n*2")
        with ma.loop("l", "n") as lp:
            total = sum(i for i in lp.range(3)) + sum(lp.iter([1, 2]))
            lp.end(3)
        @ma.subroutine
        def f(): return 5
        @ma.subroutine("g")
        def g(): return 6
        with ma.flop("f", "x_undeclared"), ma.mpi_send("s", "8", count=2):
            pass
        print(total, f(), g(), "ma_runtime.mars" in sys.modules)
    """, MA_DISABLE="1")
    assert run.returncode == 0, run.stderr
    assert run.stdout.split() == ["6", "5", "6", "False"]
    assert not run.trace_dir.exists()


def test_bad_identifiers_and_values_are_clear_errors(run_program) -> None:
    run = run_program("""
        import ma
        for call in (lambda: ma.variable("not a name", 3), lambda: ma.variable("n", "3"),
                     lambda: ma.loop("a/b", "1").__enter__(), lambda: ma.assign("x", 5),
                     lambda: ma.loop("l", "1 +").__enter__()):
            try:
                call()
            except ma.MAError as exc:
                print(type(exc).__name__, "|", str(exc).splitlines()[0])
    """)
    lines = run.stdout.strip().splitlines()
    assert len(lines) == 5, run.stdout + run.stderr
    assert lines[0].startswith("AnnotationError") and "identifier" in lines[0]
    assert lines[1].startswith("AnnotationError") and "must be a number" in lines[1]
    assert lines[2].startswith("AnnotationError") and "without '/'" in lines[2]
    assert lines[3].startswith("AnnotationError") and "must be a str" in lines[3]
    assert lines[4].startswith("ExpressionError") and "column 4" in lines[4]


def test_hostile_annotation_text_creates_nothing(run_program, tmp_path: Path) -> None:
    run = run_program("""
        import ma
        try:
            with ma.loop("l", "__import__('os').system('touch pwned')"):
                pass
        except ma.ExpressionError as exc:
            print("rejected at column", exc.column)
    """)
    assert "rejected at column 1\n" in run.stdout  # unknown function '__import__', as the C runtime says
    assert not (tmp_path / "pwned").exists()


def test_periodic_flush_survives_a_killed_rank(run_program) -> None:
    run = run_program("""
        import os, signal, time, ma
        ma.variable("n", 1)
        deadline = time.time() + 1.0
        while time.time() < deadline:
            with ma.loop("spin", "n") as lp:
                lp.end(1)
        os.kill(os.getpid(), signal.SIGKILL)
    """, MA_FLUSH_SECONDS="0.1")
    assert run.returncode == -signal.SIGKILL
    trace = run.trace()  # the last flush: complete JSON
    assert trace["header"]["status"] == "running" and trace["header"]["end_time"] is None
    assert find_node(trace["threads"][0]["root"], "spin")["calls"] > 10
    assert not list(run.trace_dir.glob(".*.tmp"))


def test_sigterm_writes_a_final_trace(tmp_path: Path) -> None:
    script = tmp_path / "prog.py"
    script.write_text("import time, ma\nma.variable('n', 1)\nprint('ready', flush=True)\ntime.sleep(60)\n")
    proc = subprocess.Popen([sys.executable, str(script)], cwd=tmp_path, stdout=subprocess.PIPE, text=True,
                            env=clean_env(MA_TRACE_DIR=str(tmp_path / "t")))
    assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=30) == -signal.SIGTERM
    header = json.loads((tmp_path / "t" / "rank-0.ma.json").read_text())["header"]
    assert header["status"] == "terminated" and header["exit_reason"] == "SIGTERM"


def test_writes_are_atomic_for_a_concurrent_reader(tmp_path: Path) -> None:
    """A reader polling the file while the program flushes it hundreds of times never sees partial JSON."""
    script = tmp_path / "prog.py"
    script.write_text(
        "import time, ma\nma.variable('n', 1)\nend = time.time() + 2\n"
        "while time.time() < end:\n"
        "    for i in range(50):\n"
        "        with ma.loop(f'site{i}', 'n') as lp:\n            lp.end(1)\n")
    trace = tmp_path / "t" / "rank-0.ma.json"
    proc = subprocess.Popen([sys.executable, str(script)], cwd=tmp_path,
                            env=clean_env(MA_TRACE_DIR=str(tmp_path / "t"), MA_FLUSH_SECONDS="0.001"))
    reads = 0
    while proc.poll() is None:
        if trace.exists():
            json.loads(trace.read_text())
            reads += 1
        time.sleep(0.001)
    assert proc.returncode == 0 and reads > 20
    assert json.loads(trace.read_text())["header"]["status"] == "complete"


def test_import_ma_stays_light() -> None:
    code = ("import sys, ma\n"
            "ma.variable('n', 2)\n"
            "with ma.loop('l', 'n') as lp: lp.end(2)\n"
            "heavy = [m for m in ('sympy', 'jinja2', 'matplotlib', 'scipy', 'ma_post', 'backends', 'mpi4py.MPI',"
            " 'pypapi.papi_low') if m in sys.modules]\n"
            "print(heavy)\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env=clean_env(MA_COUNTERS="none", MA_TRACE_DIR="/tmp/ma-light-test"))
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


EQUIVALENCE_PROGRAM = """
    import ma
    ma.variable("n", 6)
    with ma.subroutine("s"):
        ma.variable("m", 3)
        for rep in range(4):
            with ma.loop("outer", "n") as lp:
                for i in lp.range(6 if rep else 5):
                    ma.variable("i", i)  # changes every iteration: the cached prediction must follow
                    with ma.loop("inner", "m+i") as inner:
                        for j in inner.iter(range(3 + i)):
                            pass
                    with ma.flop("f", "2*n"):
                        pass
            with ma.mpi_send("s", "8*n", count="m"):
                pass
    ma.loop_start("a", "n")
    ma.loop_start("b", "n")
    ma.loop_end("a", 6)
"""


def _without_times(node: dict) -> dict:
    return {**{k: v for k, v in node.items() if k not in ("wall_ns", "cpu_ns", "children")},
            "children": [_without_times(c) for c in node["children"]]}


def test_compiled_and_pure_python_runtimes_write_the_same_trace(run_program) -> None:
    import ma_runtime

    if not ma_runtime.COMPILED:
        pytest.fail(f"the runtime is not compiled here: {ma_runtime.NOT_COMPILED_REASON}")
    compiled = run_program(EQUIVALENCE_PROGRAM)
    assert compiled.returncode == 0, compiled.stderr
    compiled_trace = compiled.trace()
    pure = run_program(EQUIVALENCE_PROGRAM, MA_PURE_PYTHON="1")
    assert pure.returncode == 0, pure.stderr
    pure_trace = pure.trace()
    assert compiled_trace["header"]["producer"].endswith("(compiled)")
    assert not pure_trace["header"]["producer"].endswith("(compiled)")
    assert _without_times(compiled_trace["threads"][0]["root"]) == _without_times(pure_trace["threads"][0]["root"])
    assert compiled_trace["anomalies"] == pure_trace["anomalies"]
    outer = find_node(pure.tree(), "s/outer")
    assert outer["fail"] == 1 and outer["pass"] == 3  # the first round stopped at 5 of 6
    inner = find_node(pure.tree(), "s/outer/inner")
    assert inner["calls"] == 5 + 3 * 6 and inner["pass"] == inner["calls"]  # m+i = 3+i iterations each
    assert inner["predicted"] == {"n": 23, "min": 3, "max": 8, "sum": 5 * 3 + 10 + 3 * (6 * 3 + 15)}


@pytest.mark.parametrize("setting, value, fragment", [
    ("MA_TOLERANCE", "flop=lots", "MA_TOLERANCE='flop=lots': 'lots' is not a number"),
    ("MA_TOLERANCE", "-0.1", "cannot be negative"),
    ("MA_FLUSH_SECONDS", "soon", "MA_FLUSH_SECONDS='soon' is not a number of seconds"),
    ("MA_FLUSH_SECONDS", "-5", "MA_FLUSH_SECONDS='-5': expected a finite number of seconds, 0 or more"),
    ("MA_CPU_TIME", "some", "MA_CPU_TIME='some': expected subroutines, all or none"),
    ("MA_COUNTERS", "perf", "unknown counter provider 'perf'"),
    ("MA_PAPI_EVENTS", "flops=PAPI_FP_OPS", "MA_PAPI_EVENTS='flops=PAPI_FP_OPS': expected entries like"),
])
def test_bad_settings_are_clear_errors(run_program, setting: str, value: str, fragment: str) -> None:
    run = run_program("""
        import ma
        try:
            ma.variable("n", 1)
        except ma.MAError as exc:
            print(type(exc).__name__, exc)
    """, **{setting: value, "MA_COUNTERS": "papi"} if setting == "MA_PAPI_EVENTS" else {setting: value})
    assert run.returncode == 0, run.stderr
    assert fragment in run.stdout


ITERATION_PROGRAM = """
    import sys
    import ma

    n, max_iter = 50, int(sys.argv[1])
    ma.variable("n", n)
    ma.variable("max_iter", max_iter)
    with ma.loop("it", "max_iter") as lp:
        for it in lp.range(max_iter):
            calls = 1 if it == 0 else 2          # a kernel called once in the first iteration, twice after
            ma.assign("grown", "n + iter", n + it)
            with ma.loop("calls", "1 + min(iter, 1)") as inner:
                for _ in inner.range(calls):
                    with ma.flop("kernel", "2*n"):
                        pass
            with ma.loop("ramp", "min(iter, 3)") as inner:
                for _ in inner.range(min(it, 3)):
                    pass
"""


@pytest.mark.parametrize("runtime", [{}, {"MA_PURE_PYTHON": "1"}], ids=["compiled", "pure"])
def test_iter_is_the_iteration_in_every_expression_inside_a_loop(run_program, runtime: dict[str, str]) -> None:
    import ma_post

    for max_iter in (4, 9):
        run = run_program(ITERATION_PROGRAM, args=(str(max_iter),), MA_COUNTERS="none", **runtime)
        assert run.returncode == 0, run.stderr
        tree = run.tree()
        calls = find_node(tree, "it/calls")
        assert (calls["pass"], calls["fail"]) == (max_iter, 0)
        assert calls["predicted"]["sum"] == 2 * max_iter - 1 and calls["predicted"]["min"] == 1
        assert find_node(tree, "it/calls/kernel")["calls"] == 2 * max_iter - 1
        assert find_node(tree, "it/ramp")["fail"] == 0
        grown = find_node(tree, "it/grown")
        assert grown["mismatch"] == 0 and grown["predicted"]["max"] == 50 + max_iter - 1
        ts = ma_post.load(run.trace_dir)
        flops = ma_post.model(ts, "flops")
        assert flops.evaluate({"max_iter": 4}) == 2 * 50 * 7 and flops.evaluate({"max_iter": 9}) == 2 * 50 * 17
        assert not [note for note in flops.notes if note.kind in ("check", "varying", "conditional")], flops.notes


def test_iter_outside_a_counting_loop_says_why(run_program) -> None:
    run = run_program("""
        import ma
        with ma.loop("l", "3") as lp:
            with ma.flop("before", "iter"):   # inside the loop's block, before its iterations
                pass
            for _ in lp.range(3):
                pass
        """, MA_COUNTERS="none")
    assert run.returncode != 0
    assert "variable 'iter' is not defined" in run.stderr
    assert "iter is the iteration (from 0) of the innermost open loop that counts its iterations" in run.stderr
