"""The runtime's hot path compiled by Cython (setup.py) against the same sources run as plain Python.

The compiled code takes its own branches for a call that repeats its site's previous one (C integers, the
node's repeat tests inlined). The program below drives each way off that path (new sites, changed and
repeated measurements, keyword arguments, partner checks up to MA_PEER_CHECKS, wrong calls, an exception, a
generator closing an annotation that is not the innermost, a second thread, tracing switched off, flushes)
under a real MPI job; the compiled and the pure-Python runtimes must write the same trees, anomalies, partner
checks and output.
"""

from __future__ import annotations

import importlib
import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from conftest import VENV_BIN, clean_env, find_node

PROGRAM = """
import threading

import numpy as np
from mpi4py import MPI

import ma

comm = MPI.COMM_WORLD
right, left = (comm.rank + 1) % comm.size, (comm.rank - 1) % comm.size
say = print if comm.rank == 0 else (lambda *args: None)  # one rank's output: lines of two would interleave
buf, out = np.zeros(64), np.zeros(64)
ma.variable("dp", 8)

for step in range(12):
    n = 4 if step < 5 or step > 8 else 8  # repeats, a change, a return to an earlier value
    ma.variable("n", n)
    with ma.loop("steps", "n") as lp:
        for i in lp.range(10):
            if i + 1 == (n - 1 if step == 7 else n):  # n started; step 7 stops one short: a FAIL
                break
    # keywords or positions, alternately: the same site either way
    rcv = ma.mpi_irecv("rcv", "dp*n", count="1") if step % 2 else ma.mpi_irecv("rcv", "dp*n")
    with rcv:
        req = comm.Irecv(out[:n], source=left)
    with ma.mpi_send("snd", "dp*n", None, 1):
        comm.Send(buf[:n], dest=right)
    req.Wait()
    with ma.mpi_send("wrong", "dp*n", count=1):  # one double more than asserted: FAIL, call after call
        comm.Send(buf[:n + 1], dest=right)
    comm.Recv(out[:n + 1], source=left)
    with ma.flop("f", "2*n", value=2 * n + (1 if step == 6 else 0)):  # step 6 passes a value that differs
        pass
    with ma.flop("g", "2*n"):
        pass
    with ma.vec_loop("v", "n", "2*n", "4", 2, gathers="n", gathered_bytes="8*n"):  # its indexed loads too
        pass
    # partners (MA_PEER_CHECKS=3): one expression, and two alternating at one site (each checked 3 times)
    with ma.mpi_send("psnd", "dp", peer="mod(rank+1, 2)"):
        comm.Send(buf[:1], dest=right)
    comm.Recv(out[:1], source=left)
    with ma.mpi_send("palt", "dp", peer="mod(rank+1, 2)" if step % 2 else "1 - rank"):
        comm.Send(buf[:1], dest=right)
    comm.Recv(out[:1], source=left)

for bad in (lambda: ma.flop("f"), lambda: ma.flop("f", "n", wrong=1), lambda: ma.mpi_send("s", "n", 1, 1, 1),
            lambda: ma.flop("f", "n", 3, value=1), lambda: ma.loop("l", "n", count=1)):
    try:
        bad()
    except TypeError:
        say("TypeError")

try:
    with ma.flop("boom", "n"):
        raise ValueError("inside")
except ValueError:
    say("raised")


def generator():
    with ma.loop("gen", "2") as lp:
        for i in lp.range(2):
            yield i


it = generator()
next(it)  # opens "gen"
with ma.flop("around", "n"):  # opened above it ...
    for _ in it:  # ... and still open when "gen" closes
        pass

with ma.no_tracing():
    with ma.flop("hidden", "n"):
        pass


def worker():
    for _ in range(3):
        with ma.flop("thread_f", "n"):
            pass


thread = threading.Thread(target=worker)
thread.start()
thread.join()
say("done")
"""


def _without_times(node: dict[str, Any]) -> dict[str, Any]:
    return {**{k: v for k, v in node.items() if k not in ("wall_ns", "cpu_ns", "children")},
            "children": [_without_times(c) for c in node["children"]]}


def run_job(tmp_path: Path, **env: str) -> tuple[str, list[dict[str, Any]]]:
    script = tmp_path / "prog.py"
    script.write_text(textwrap.dedent(PROGRAM))
    trace_dir = tmp_path / ("traces" + "".join(f"-{k}" for k in sorted(env)))
    done = subprocess.run([str(VENV_BIN / "ma"), "run", "-n", "2", "--trace-dir", str(trace_dir), "--",
                           sys.executable, str(script)], cwd=tmp_path, env=clean_env(**env),
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    return done.stdout, [json.loads((trace_dir / f"rank-{r}.ma.json").read_text()) for r in range(2)]


def test_the_hot_path_is_compiled_here() -> None:
    import ma_runtime

    annotations = importlib.import_module("ma_runtime.annotations")  # (the package's name is the __future__ one)

    if not ma_runtime.COMPILED:
        pytest.fail(f"the runtime is not compiled here: {ma_runtime.NOT_COMPILED_REASON}")
    assert type(annotations.Region.__dict__["__enter__"]).__name__ == "method_descriptor"
    assert type(annotations.mpi_send_call).__name__ == "builtin_function_or_method"


@pytest.mark.mpi
@pytest.mark.parametrize("flush", [{}, {"MA_FLUSH_SECONDS": "0.000001"}], ids=["default", "flush-every-call"])
def test_compiled_and_pure_python_runtimes_write_the_same_traces(tmp_path: Path, flush: dict[str, str]) -> None:
    compiled_out, compiled = run_job(tmp_path, MA_PEER_CHECKS="3", **flush)
    pure_out, pure = run_job(tmp_path, MA_PURE_PYTHON="1", MA_PEER_CHECKS="3", **flush)
    assert compiled_out == pure_out
    assert compiled_out.split() == ["TypeError"] * 5 + ["raised", "done"]
    for fast, plain in zip(compiled, pure, strict=False):
        assert fast["header"]["producer"].endswith("(compiled)")
        assert [_without_times(t["root"]) for t in fast["threads"]] == [_without_times(t["root"])
                                                                         for t in plain["threads"]]
        assert fast["anomalies"] == plain["anomalies"]
        assert fast["peers"] == plain["peers"]
        checked = {p["path"]: (p["pass"], p["fail"], p["unmeasured"]) for p in fast["peers"]}
        assert checked == {"psnd": (3, 0, 0), "palt": (6, 0, 0)}  # the first 3 calls of each expression
        root = fast["threads"][0]["root"]
        assert find_node(root, "steps")["pass"] == 11 and find_node(root, "steps")["fail"] == 1
        for site in ("rcv", "snd"):
            assert find_node(root, site)["pass"] == 12 and find_node(root, site)["unmeasured"] == 0
        assert find_node(root, "rcv")["measured"] == {"n": 12, "min": 32, "max": 64, "sum": 8 * (8 * 4 + 4 * 8)}
        assert find_node(root, "wrong")["fail"] == 12
        assert find_node(root, "g")["unmeasured"] == 12
        assert find_node(root, "f")["calls"] == 12
        assert {"exception", "unbalanced"} <= {a["kind"] for a in fast["anomalies"]}
        assert not any(c["path"] == "hidden" for c in root["children"])
        assert find_node(fast["threads"][1]["root"], "thread_f")["calls"] == 3
        assert fast["vector_loops"] == plain["vector_loops"]
        assert fast["vector_loops"][0]["gathers"]["predicted_sum"] == {"gathers": 64, "gathered_bytes": 512}


def test_an_edited_declaration_file_is_not_shadowed_by_a_stale_build(tmp_path: Path) -> None:
    import ma_runtime

    package = Path(ma_runtime.__file__).parent
    copy = tmp_path / "ma_runtime"
    shutil.copytree(package, copy, ignore=shutil.ignore_patterns("__pycache__"))
    source = copy / "annotations.pxd"
    later = max(p.stat().st_mtime for p in copy.glob("*.so")) + 10
    os.utime(source, (later, later))
    done = subprocess.run([sys.executable, "-W", "ignore", "-c",
                           "import ma_runtime; print(ma_runtime.COMPILED, ma_runtime.NOT_COMPILED_REASON)"],
                          cwd=tmp_path, env=clean_env(PYTHONPATH=str(tmp_path)), capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("False annotations.pxd changed since it was compiled"), done.stdout
