"""The measured application signature in the trace: per-site cache hit rates from the Valgrind tool's cache
simulation (``ma run --counters valgrind --cache``), in both runtimes, read back through ``Site.hit_rates`` and
merged across ranks; and calls from Python into compiled code per site (``--counters ccalls``, ``Site.c_calls``).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from trace_schema import check_trace_schema

import ma  # noqa: F401  (the application layer first, as a user program does)
from backends.cpython.tracedata import measured_subscripts
from backends.signature import site_lines_per_flop
from ma_core.errors import TraceError
from ma_core.trace_format import rank_file_name
from ma_post import load
from ma_runtime.merge import Bundle, build_archive, part_of, write_archive
from ma_tools import cparts, launch
from ma_tools.toolchain import find_mpicc

HERE = Path(__file__).resolve().parent
KERNELS = HERE / "maps_signature_kernels.c"
OPTION = "32768:8:64,262144:4:64"  # the caches of test_maps_cachesim.py
TRIAD, WALK = (0.875, 0.875, 1.0), (0.0, 1.0, 1.0)  # analytic cumulative rates (see maps_signature_kernels.c)
TIMEOUT = 600

PYTHON_KERNELS = """
import ctypes, sys
import ma
lib = ctypes.CDLL(sys.argv[1])
lib.kernels_walk.argtypes = [ctypes.c_int]
lib.kernels_walk.restype = ctypes.c_double
lib.kernels_init()
lib.kernels_triad()
for _ in range(2):
    with ma.loadstore("triad", "3*2^19"):
        lib.kernels_triad()
lib.kernels_walk(2)
with ma.loadstore("walk", "2560000"):  # many passes: the ctypes call's own accesses stay below 0.1 %
    lib.kernels_walk(10000)
with ma.flop("nothing", "0"):
    pass
"""


def run(command: list[str], trace_dir: Path, counters: str, nprocs: int = 1, cache: str | None = OPTION,
        **env: str) -> Path:
    plan = launch.plan(command, nprocs, trace_dir, counters=counters, cache=cache)
    done = subprocess.run(plan.argv, env={**os.environ, **plan.env, **env}, capture_output=True, text=True,
                          timeout=TIMEOUT, check=False)
    assert done.returncode == 0, f"{plan.argv}\n{done.stdout}\n{done.stderr}"
    return trace_dir


def compile_kernels(output: Path, *extra: str) -> Path:
    flags = ["-O1", "-fno-tree-vectorize", *extra]
    done = subprocess.run([str(find_mpicc()), *flags, *cparts.c_flags(), str(KERNELS), "-o", str(output),
                           *(cparts.c_libs() if "-shared" not in extra else [])],
                          capture_output=True, text=True, timeout=TIMEOUT, check=False)
    assert done.returncode == 0, done.stderr
    return output


def assert_kernel_rates(trace_dir: Path) -> None:
    ts = load(trace_dir)
    assert ts.find("triad").hit_rates == pytest.approx(TRIAD, abs=0.01)
    assert ts.find("walk").hit_rates == pytest.approx(WALK, abs=0.01)
    assert ts.find("triad").cache_accesses.sum() >= 2 * 3 * 2**19  # both calls, summed
    assert ts.find("walk").hit_rates is not None


@pytest.fixture(scope="module")
def tool() -> None:
    if shutil.which("valgrind") is None:
        pytest.fail("valgrind is not installed on this host: scripts/setup.sh installs it")


@pytest.mark.valgrind
def test_python_kernels_read_back_their_hit_rates(tool: None, tmp_path: Path) -> None:
    library = compile_kernels(tmp_path / "libkernels.so", "-shared", "-fPIC", "-DMA_KERNELS_LIBRARY")
    script = tmp_path / "kernels.py"
    script.write_text(PYTHON_KERNELS)
    traces = run([sys.executable, str(script), str(library)], tmp_path / "traces", "valgrind")
    assert_kernel_rates(traces)
    document = json.loads((traces / rank_file_name(0)).read_text())
    check_trace_schema(document)
    triad = document["threads"][0]["root"]["children"][0]
    assert triad["cache"]["calls"] == 2 and len(triad["cache"]["hits"]) == 2
    assert load(traces).find("nothing").hit_rates is not None  # measured, though a few accesses only
    # The Python runtime's merge of the same document gives the same rates.
    bundle = Bundle()
    bundle.add(part_of(document))
    merged_dir = tmp_path / "merged"
    write_archive(merged_dir, build_archive(bundle, 1))
    assert load(merged_dir).find("triad").hit_rates == load(traces).find("triad").hit_rates


@pytest.mark.valgrind
@pytest.mark.mpi
def test_c_kernels_and_their_merged_trace(tool: None, tmp_path: Path) -> None:
    program = compile_kernels(tmp_path / "kernels")
    single = run([str(program)], tmp_path / "single", "valgrind")
    assert_kernel_rates(single)
    both = run([str(program)], tmp_path / "both", "valgrind", nprocs=2, MA_TRACE_LAYOUT="both")
    ranks_only = tmp_path / "ranks"
    ranks_only.mkdir()
    for rank in (0, 1):
        shutil.copy(both / rank_file_name(rank), ranks_only)
    merged, files = load(both), load(ranks_only)
    assert merged.files != files.files
    for path in ("triad", "walk"):
        assert merged.find(path).hit_rates == files.find(path).hit_rates
        assert merged.find(path).hit_rates == pytest.approx(TRIAD if path == "triad" else WALK, abs=0.01)
        assert merged.find(path).cache_accesses.shape == (2, 1)


def test_sites_without_a_cache_simulation_have_no_hit_rates(tmp_path: Path) -> None:
    script = tmp_path / "plain.py"
    script.write_text("import ma\nwith ma.loadstore('x', '1'):\n    pass\n")
    traces = run([sys.executable, str(script)], tmp_path / "t", "none", cache=None)
    site = load(traces).find("x")
    assert site.hit_rates is None and site.c_calls is None


@pytest.fixture(scope="module")
def plain_trace(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """A real one-site trace (loadstore 'k', 4 calls, nothing measured), to add fields to."""
    work = tmp_path_factory.mktemp("plain")
    script = work / "plain.py"
    script.write_text("import ma\nfor _ in range(4):\n    with ma.loadstore('k', '1'):\n        pass\n")
    traces = run([sys.executable, str(script)], work / "t", "none", cache=None)
    return json.loads((traces / rank_file_name(0)).read_text())  # type: ignore[no-any-return]


def _one_site(tmp_path: Path, document: dict[str, Any], **fields: Any) -> Path:
    changed = json.loads(json.dumps(document))
    changed["threads"][0]["root"]["children"][0].update(fields)
    directory = tmp_path / "one"
    directory.mkdir(exist_ok=True)
    (directory / rank_file_name(0)).write_text(json.dumps(changed))
    return directory


@pytest.mark.parametrize(("cache", "message"), [
    ({"calls": 1, "accesses": 10, "hits": [8, 4]}, "sums to 12, more than its 10 accesses"),
    ({"calls": 1, "accesses": 10, "hits": []}, "expected an array of 1 to 4 counts"),
    ({"calls": 1, "accesses": 10.5, "hits": [1]}, "'cache.accesses' is 10.5, expected an integer >= 0"),
    ({"calls": 1, "accesses": 10, "hits": [1], "rates": [0.1]}, "expected an object with keys calls, accesses"),
])
def test_malformed_cache_fields_are_named(tmp_path: Path, plain_trace: dict[str, Any], cache: dict[str, Any],
                                          message: str) -> None:
    with pytest.raises(TraceError, match=r"rank-0\.ma\.json: site 'k': .*" + message.replace("[", r"\[")):
        load(_one_site(tmp_path, plain_trace, cache=cache))


def test_hit_rates_add_accesses_before_dividing(tmp_path: Path, plain_trace: dict[str, Any]) -> None:
    cache = {"calls": 4, "accesses": 400, "hits": [300, 60]}
    site = load(_one_site(tmp_path, plain_trace, cache=cache, c_calls=12)).find("k")
    assert site.hit_rates == (0.75, 0.9, 1.0)
    assert site.c_calls == 12 and site.c_calls_per_rank.tolist() == [12.0]
    with pytest.raises(TraceError, match="'c_calls' is -1"):
        load(_one_site(tmp_path, plain_trace, c_calls=-1))
    assert site.subscripts is None  # not counted: a trace from before the counter counted them
    assert load(_one_site(tmp_path, plain_trace, c_calls=12, subscripts=30)).find("k").subscripts == 30
    with pytest.raises(TraceError, match=r"site 'k': field 'subscripts' is 'many', expected an integer"):
        load(_one_site(tmp_path, plain_trace, c_calls=12, subscripts="many"))


CCALLS_PROGRAM = """
import numpy as np
import ma


def helper(v):
    return v.max()


x = np.ones(16)
with ma.subroutine("outer"):
    for _ in range(3):                   # 1 (range) in outer
        with ma.flop("dots", "32"):
            for _ in range(5):           # 1
                np.dot(x, x)             # 5: an array-function dispatcher (no c_call event, counted all the same)
                x.sum()                  # 5: a method of ndarray
            y = x + x                    # 1: an operator
            np.sqrt(x, out=y)            # 1: a ufunc
            helper(y)                    # 1: not the call of the program's own function, but v.max() in it
    len(x)                               # 1 in outer
with ma.loadstore("empty", "0"):
    pass
"""


def test_calls_into_compiled_code_per_site(tmp_path: Path) -> None:
    script = tmp_path / "ccalls.py"
    script.write_text(CCALLS_PROGRAM)
    traces = run([sys.executable, str(script)], tmp_path / "t", "ccalls", cache=None)
    ts = load(traces)
    dots, outer = ts.find("outer/dots"), ts.find("outer")
    assert int(dots.calls.sum()) == 3
    assert dots.c_calls == 3 * 14
    assert outer.c_calls == 3 * 14 + 2  # inclusive of dots, plus its own range() and len()
    assert ts.find("empty").c_calls == 0  # measured: the annotations' own calls are left out
    assert ts.headers[0]["counters"]["providers"][0]["name"] == "ccalls"


SUBSCRIPTS_PROGRAM = """
import numpy as np
import ma
a, b = np.zeros((4, 6)), np.ones(2)
with ma.subroutine("rows"):
    for i in range(3):
        with ma.flop("row", "2"):
            row = a[i]                   # 1 subscript
            row[0:2] -= b                # 2: the load and the store of the slice (and a BINARY_OP, a call)
            view = a[:, 3:5]             # 1
            column = b[:, None]          # 1
            np.add(view, 1.0)            # a call, no subscript
    first = {"k": 1}["k"]                # 1 in rows
"""


def test_subscripts_per_site(tmp_path: Path) -> None:
    """The ccalls counter counts the program's subscript instructions apart from its calls, inclusive."""
    script = tmp_path / "subscripts.py"
    script.write_text(SUBSCRIPTS_PROGRAM)
    ts = load(run([sys.executable, str(script)], tmp_path / "t", "ccalls", cache=None))
    row, rows = ts.find("rows/row"), ts.find("rows")
    assert row.subscripts == 3 * 5
    assert rows.subscripts == 3 * 5 + 1
    assert row.c_calls == 3 * 2  # the -= and np.add: subscripts are not calls
    assert rows.c_calls == 3 * 2 + 1  # and range()
    # per execution, the children's taken out: what the maps backend charges
    assert measured_subscripts(ts)["rows/row"] == 5.0 and measured_subscripts(ts)["rows"] == 1.0


MPI_CCALLS_PROGRAM = """
import numpy as np
from mpi4py import MPI
import ma
x = np.ones(8)
rank = MPI.COMM_WORLD.Get_rank()
with ma.flop("work", "0"):
    for _ in range(rank + 1):    # rank r: 2 (range, +) + 2 (r + 1)
        x.sum()
        np.sqrt(x)
        x[:4]                    # a subscript (not a call)
"""


@pytest.mark.mpi
def test_merged_trace_keeps_each_ranks_c_calls(tmp_path: Path) -> None:
    script = tmp_path / "ranks.py"
    script.write_text(MPI_CCALLS_PROGRAM)
    both = run([sys.executable, str(script)], tmp_path / "both", "ccalls", nprocs=2, cache=None,
               MA_TRACE_LAYOUT="both")
    ranks_only = tmp_path / "ranks"
    ranks_only.mkdir()
    for rank in (0, 1):
        shutil.copy(both / rank_file_name(rank), ranks_only)
    merged, files = load(both).find("work"), load(ranks_only).find("work")
    assert merged.c_calls_per_rank.tolist() == files.c_calls_per_rank.tolist() == [4.0, 6.0]
    assert merged.c_calls == files.c_calls == 10
    assert merged.subscripts == files.subscripts == 1 + 2


class _Frame:
    def __init__(self, node: Any, t0: int, outer: Any = None) -> None:
        self.node, self.t0, self.outer = node, t0, outer


def test_the_cache_probe_tells_starts_from_stops_by_the_open_region() -> None:
    from ma_runtime.counters.valgrind import CacheCounts
    from ma_runtime.sitecounts import CacheProbe
    from ma_runtime.tree import Node

    node = Node(None, "flop", "k", "1", 0.0)
    readings = iter([CacheCounts(100 * k, (60 * k, 30 * k)) for k in range(10)])
    state = _Frame(None, 0)  # stands for the ThreadState: only its ``top`` is read
    probe = CacheProbe(node, lambda: 7, lambda: next(readings), lambda: state)
    state.top = _Frame(node, t0=1)  # type: ignore[attr-defined]
    probe(), probe()  # start, stop of the call that started at t0 = 1: readings 0 and 1
    assert probe.to_json() == {"calls": 1, "accesses": 100, "hits": [60, 30]}
    state.top = _Frame(node, t0=2)  # type: ignore[attr-defined]
    probe()  # a start (reading 2) whose stop never comes: the call is closed as unbalanced
    state.top = _Frame(_Frame(None, 0), t0=9, outer=_Frame(node, t0=3))  # type: ignore[attr-defined]
    probe(), probe()  # the next call (t0 = 3, below an inner annotation at its stop): readings 3 and 4
    assert probe.to_json() == {"calls": 2, "accesses": 200, "hits": [120, 60]}


def test_lines_per_flop_of_a_flop_site_from_its_cache_fields(tmp_path: Path, plain_trace: dict[str, Any]) -> None:
    # 4 calls, 200 flops counted, 400 line accesses: L1 served 300, L2 60, memory the other 40.
    cache = {"calls": 4, "accesses": 400, "hits": [300, 60]}
    measured = {"n": 4, "min": 50, "max": 50, "sum": 200}
    site = load(_one_site(tmp_path, plain_trace, type="flop", measured=measured, cache=cache)).find("k")
    assert site_lines_per_flop(site) == pytest.approx((1.5, 0.3, 0.2))
    loadstore = load(_one_site(tmp_path, plain_trace, measured=measured, cache=cache)).find("k")
    assert site_lines_per_flop(loadstore) is None  # a loadstore site is priced by its own expression
    unmeasured = load(_one_site(tmp_path, plain_trace, type="flop", measured=measured)).find("k")
    assert site_lines_per_flop(unmeasured) is None
