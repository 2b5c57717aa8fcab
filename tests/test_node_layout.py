"""The node layout of the trace (ma_core/trace_format.py NODE_LAYOUT) is spelled once; every writer and reader agrees.

- The C runtime's header is what ma_core/trace_format_c.py generates from it, and its writer handles every key
  (a `switch` over the generated keys, compiled with -Werror=switch).
- The Python writer (ma_runtime/tree.py) and the typed reader's structs (ma_post/typed_reader.py) spell its keys.
- A round trip: both runtimes run a program that writes every optional field of a node, under MPI (2 ranks, rank
  files and the merged trace), the Valgrind tool's cache simulation and, in Python, the ccalls counter; the typed
  and the checked reader read each rank file to the same rows, which hold what the layout says each key holds, and
  the merged trace gives what the rank files give.
"""

from __future__ import annotations

import json
import math
import shutil
import subprocess
import textwrap
from pathlib import Path
from typing import Any

import msgspec
import numpy as np
import pytest
from conftest import VENV_BIN, clean_env

from ma_core import trace_format as tf
from ma_core.trace_format_c import c_header, header_path
from ma_post import load, reader, typed_reader
from ma_runtime import tree
from ma_tools import cparts
from ma_tools.toolchain import find_mpicc

LIBMA = header_path().parent
CACHE = "amd-epyc-zen4-kvm"  # a shipped machine profile, whose caches the tool simulates (ma run --cache)
TIMEOUT = 600


def test_the_c_header_is_generated_from_the_layout() -> None:
    assert header_path().read_text(encoding="utf-8") == c_header(), (
        "ma_trace_format.h is not what ma_core/trace_format.py gives: run python -m ma_core.trace_format_c")


def test_the_c_writer_handles_every_node_key(tmp_path: Path) -> None:
    compiler = shutil.which("cc") or shutil.which("gcc")
    if compiler is None:
        pytest.skip("no C compiler")
    # A key added to the layout (and so to the generated enum) that ma_trace_node_value does not handle is an error.
    done = subprocess.run([compiler, "-fsyntax-only", "-Wall", "-Wextra", "-Werror", f"-I{LIBMA.parent}",
                           f"-I{LIBMA}", str(LIBMA / "ma_trace.c")], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    source = (LIBMA / "ma_trace.c").read_text(encoding="utf-8")
    assert "switch (key) {" in source and "default:" not in source


def test_the_python_writer_writes_the_keys_in_layout_order() -> None:
    root = tree.new_root()
    loop = tree.Node(root, "loop", "l", "n", 0.0, file="f.py", line=3)
    send = tree.Node(root, "mpi_send", "s", "8", 0.0, count="2")
    for node, presences in ((loop, {tf.ALWAYS}), (send, {tf.ALWAYS, tf.MPI_ONLY})):
        assert list(node.to_json()) == [k.name for k in tf.NODE_LAYOUT if k.presence in presences]


def test_the_typed_reader_spells_the_layout() -> None:
    fields = {f.encode_name: f for f in msgspec.structs.fields(typed_reader.Node)}
    assert set(fields) == {k.name for k in tf.NODE_LAYOUT}
    for key in tf.NODE_LAYOUT:
        if key.value == tf.COUNT and key.presence == tf.ALWAYS:
            assert fields[key.name].type is int, key.name
        elif key.value in (tf.STRING, tf.OPTIONAL_STRING):
            assert str in (fields[key.name].type, *getattr(fields[key.name].type, "__args__", ())), key.name


def test_the_readers_rows_are_the_layouts() -> None:
    assert reader.FIELDS == tf.VALUE_FIELDS
    assert [name for name, _, _ in reader._NODE_FIELDS] == [*tf.NODE_ROW_KEYS, "first_fail", "first_mismatch"]
    assert set(tf.NODE_ROW_KEYS) <= {k.name for k in tf.NODE_LAYOUT}
    assert len(tf.VALUE_FIELDS) == len(tf.NODE_COUNTS) + len(tf.NODE_STATS) * len(tf.STATS_KEYS) + len(
        tf.signature_columns(None, None, 0))


# ---- the round trip -------------------------------------------------------------------------------------------
PYTHON_PROGRAM = """
    from mpi4py import MPI
    import ma

    comm = MPI.COMM_WORLD
    ma.variable("n", 1000)
    x = [float(i) for i in range(1000)]
    with ma.subroutine("main"):                   # expr null
        with ma.loop("wrong", "n + 1") as lp:     # a first_fail without the count pair
            for _ in lp.range(1000):
                pass
        with ma.loop("unended", "2"):             # measured null
            pass
        ma.assign("half", "n/2", 499)             # a first_mismatch
        with ma.loadstore("sum", "2*n"):          # cache (the tool), c_calls and subscripts (ccalls)
            total = sum(x) + x[3]
        with ma.mpi_barrier("sync", "0", count=2):  # an MPI node failing on its count: the count pair
            comm.Barrier()
"""

C_PROGRAM = r"""
#include <mpi.h>
#include "ma.h"

static double x[1000];

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    ma_def_variable_int("n", 1000);
    (ma_subroutine_start)("main");                    /* the plain function: file and line null */
    ma_loop_start("wrong", "n + 1", MA_NO_VALUE);     /* a first_fail without the count pair */
    ma_loop_end("wrong", 1000);
    ma_loop_start("unended", "2", MA_NO_VALUE);       /* measured null */
    ma_loop_end("unended", MA_NO_VALUE);
    ma_def_variable_assign_int("half", "n/2", 499);   /* a first_mismatch */
    ma_loadstore_start("sum", "2*n", MA_NO_VALUE);    /* cache (the tool) */
    volatile double total = 0;
    for (int i = 0; i < 1000; i++)
        total += x[i];
    ma_loadstore_stop("sum");
    ma_mpi_barrier("sync", "0", MA_NO_VALUE, 2);      /* an MPI node failing on its count: the count pair */
    MPI_Barrier(MPI_COMM_WORLD);
    (ma_subroutine_end)("main");
    MPI_Finalize();
    return (int)total * 0;
}
"""


def run_job(command: list[str], trace_dir: Path, counters: str) -> Path:
    done = subprocess.run([str(VENV_BIN / "ma"), "run", "-n", "2", "--counters", counters, "--cache", CACHE,
                           "--trace-dir", str(trace_dir), "--", *command], env=clean_env(MA_TRACE_LAYOUT="both"),
                          capture_output=True, text=True, timeout=TIMEOUT, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    return trace_dir


def preorder(node: dict[str, Any]) -> list[tuple[int, dict[str, Any]]]:
    """(parent row, node) below `node`, in the readers' row order."""
    rows: list[tuple[int, dict[str, Any]]] = []
    stack = [(child, -1) for child in reversed(node["children"])]
    while stack:
        child, parent = stack.pop()
        rows.append((parent, child))
        stack.extend((grandchild, len(rows) - 1) for grandchild in reversed(child["children"]))
    return rows


def expected_values(node: dict[str, Any]) -> list[float]:
    """A node's value row as the layout defines it: its counts, its stats, its measured signature."""
    values: list[Any] = [node[key] for key in tf.NODE_COUNTS]
    for where in tf.NODE_STATS:
        stats: Any = node
        for part in where.split("."):
            stats = (stats or {}).get(part)
        values += [stats[k] for k in tf.STATS_KEYS] if stats else [0, None, None, 0]
    values += tf.signature_columns(node.get(tf.NODE_CACHE_KEY), node.get(tf.NODE_C_CALLS_KEY), node["calls"],
                                   node.get(tf.NODE_SUBSCRIPTS_KEY))
    return [math.nan if v is None else float(v) for v in values]


def check_rank_file(path: Path, language: str) -> set[str]:
    """Both readers read `path` to the rows its nodes hold; returns the node keys the file has."""
    text = path.read_bytes()
    document = json.loads(text)
    assert document["header"]["language"] == language
    typed = typed_reader.decode(text)
    assert typed is not None, f"{path.name}: the typed reader refused it"
    checked = reader.flatten(document, path.name)
    keys: set[str] = set()
    for thread, typed_thread, flat in zip(document["threads"], typed.threads, checked.threads, strict=True):
        typed_rows, typed_values = typed_reader.rows(typed_thread)
        assert typed_rows == flat.nodes
        assert np.array_equal(np.asarray(typed_values, dtype=float).reshape(flat.values.shape), flat.values,
                              equal_nan=True)
        nodes = preorder(thread["root"])
        assert len(nodes) == len(flat.nodes)
        for (parent, node), row, values in zip(nodes, flat.nodes, flat.values, strict=True):
            where = f"{path.name}: {node['path']}"
            assert list(node) == [k.name for k in tf.NODE_LAYOUT if k.name in node], where  # the layout's order
            assert row == (parent, *(node.get(k) for k in tf.NODE_ROW_KEYS), node["first_fail"],
                           node["first_mismatch"]), where
            assert np.array_equal(values, expected_values(node), equal_nan=True), where
            keys |= set(node)
    return keys


def check_round_trip(trace_dir: Path, language: str) -> list[tuple[int, dict[str, Any]]]:
    """Both readers on each rank file, then the merged trace against the rank files; rank 0's nodes."""
    per_rank = trace_dir.parent / f"{trace_dir.name}-rank-files"
    per_rank.mkdir()
    keys: set[str] = set()
    for rank in range(2):
        source = tf.rank_file(trace_dir, rank)
        keys |= check_rank_file(source, language)
        shutil.copy(source, per_rank)
    written = {k.name for k in tf.NODE_LAYOUT if language == "python" or k.c_runtime}
    assert keys == written, f"not written: {written - keys}, not in the layout: {keys - written}"
    merged, files = load(tf.merged_file(trace_dir)), load(per_rank)
    assert list(merged.sites) == list(files.sites)
    assert np.array_equal(merged.data, files.data, equal_nan=True)
    assert {k: (s.first_fail, s.first_mismatch, s.file, s.line, s.count_expr) for k, s in merged.sites.items()} == {
        k: (s.first_fail, s.first_mismatch, s.file, s.line, s.count_expr) for k, s in files.sites.items()}
    return preorder(json.loads(tf.rank_file(trace_dir, 0).read_text())["threads"][0]["root"])


def assert_every_optional_value(nodes: list[tuple[int, dict[str, Any]]]) -> None:
    by_id = {node["id"]: node for _, node in nodes}
    assert by_id["main"]["expr"] is None and by_id["unended"]["measured"] is None
    assert set(by_id["wrong"]["first_fail"]) == set(tf.FIRST_FAIL_KEYS)
    assert set(by_id["sync"]["first_fail"]) == {*tf.FIRST_FAIL_KEYS, *tf.FIRST_FAIL_MPI_KEYS}
    assert set(by_id["half"]["first_mismatch"]) == set(tf.FIRST_MISMATCH_KEYS)
    assert set(by_id["sum"][tf.NODE_CACHE_KEY]) == set(tf.CACHE_KEYS)
    assert set(by_id["sync"]["count"]) == set(tf.COUNT_KEYS)


@pytest.mark.mpi
@pytest.mark.valgrind
@pytest.mark.slow
def test_python_runtime_round_trip(tmp_path: Path) -> None:
    program = tmp_path / "every_field.py"
    program.write_text(textwrap.dedent(PYTHON_PROGRAM))
    trace_dir = run_job([str(VENV_BIN / "python"), str(program)], tmp_path / "traces", "valgrind,ccalls")
    nodes = check_round_trip(trace_dir, "python")
    assert_every_optional_value(nodes)
    assert all(node["file"] for _, node in nodes)


@pytest.mark.mpi
@pytest.mark.valgrind
@pytest.mark.slow
def test_c_runtime_round_trip(tmp_path: Path) -> None:
    source = tmp_path / "every_field.c"
    source.write_text(C_PROGRAM)
    binary = tmp_path / "every_field"
    done = subprocess.run([str(find_mpicc()), "-O1", *cparts.c_flags(), str(source), "-o", str(binary),
                           *cparts.c_libs()],
                          capture_output=True, text=True, timeout=TIMEOUT, check=False)
    assert done.returncode == 0, done.stderr
    nodes = check_round_trip(run_job([str(binary)], tmp_path / "traces", "valgrind"), "c")
    assert_every_optional_value(nodes)
    by_id = {node["id"]: node for _, node in nodes}
    assert by_id["main"]["file"] is None and by_id["main"]["line"] is None and by_id["wrong"]["file"]
