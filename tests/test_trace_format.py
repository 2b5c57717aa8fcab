"""The C runtime spells the trace format in its own sources: check its copy against ma_core/trace_format.py.

Read from the sources, not from a run, so that a name changed on one side fails here at once, without a
compiler or MPI.
"""

from __future__ import annotations

import re
from pathlib import Path

from ma_core import trace_format as tf

CSRC = Path(__file__).resolve().parent.parent / "ma_runtime" / "csrc"


def c_source(name: str) -> str:
    return (CSRC / name).read_text(encoding="utf-8")


def string_array(source: str, name: str) -> tuple[str, ...]:
    """The strings of ``static const char *const NAME[...] = {...};`` in a C source."""
    match = re.search(rf"\b{name}\s*\[[^\]]*\]\s*=\s*\{{(.*?)\}};", source, re.S)
    assert match, f"no array {name}"
    return tuple(re.findall(r'"([^"]*)"', match.group(1)))


def function_body(source: str, signature: str) -> str:
    start = source.index(signature)
    return source[start:source.index("\n}\n", start)]


def test_format_name_and_version() -> None:
    trace = c_source("libma/ma_trace.c")
    assert f'{{\\"format\\":\\"{tf.FORMAT}\\",\\"version\\":%d' in trace
    version = re.search(r"#define MA_TRACE_VERSION (\d+)", c_source("libma/ma_internal.h"))
    assert version and int(version.group(1)) == tf.VERSION


def test_rank_file_and_temporary_names() -> None:
    trace = c_source("libma/ma_trace.c")
    final = re.search(r'"%s/(rank-%d[^"]*)"', trace)
    temporary = re.search(r'"%s/(\.rank-%d[^"]*)"', trace)
    assert final and temporary
    assert final.group(1).replace("%d", "7") == tf.rank_file_name(7)
    assert temporary.group(1).replace("%d", "7").replace("%ld", "99") == tf.temporary_file(Path(), 7, 99).name
    assert tf.RANK_FILE.match(tf.rank_file_name(12)) and Path(tf.rank_file_name(3)).match(tf.RANK_FILE_GLOB)
    assert Path(tf.temporary_file(Path(), 3, 1).name).match(tf.TEMPORARY_GLOB)


def test_mpi_call_types_and_node_types() -> None:
    runtime = c_source("libma/ma_runtime.c")
    assert string_array(runtime, "MPI_TYPE_NAMES") == tf.MPI_TYPES
    assert set(string_array(runtime, "STRUCTURE_TYPES")) == set(tf.NODE_TYPES) - set(tf.MPI_TYPES)
    # The PMPI library's groups: one per MPI call type, in the same order, then the untyped routines.
    assert string_array(c_source("ma_pmpi.c"), "group_names") == (*tf.MPI_TYPES, "other")


def test_statuses_written_by_the_c_runtime_are_known() -> None:
    runtime = c_source("libma/ma_runtime.c")
    written = set(re.findall(r'\b(?:finish|flush_now)\("(\w+)"', runtime))
    assert written and written <= set(tf.STATUSES)
    assert {tf.COMPLETE, tf.RUNNING} <= written


def test_header_keys_written_by_the_c_runtime() -> None:
    header = function_body(c_source("libma/ma_trace.c"), "static void header(")
    written = re.findall(r'\\"([a-z_]+)\\":', header)
    top_level = list(dict.fromkeys(key for key in written if key in tf.HEADER_KEYS))  # a ternary writes one twice
    assert top_level == list(tf.HEADER_KEYS)  # every key, in the documented order


def test_header_status_reader() -> None:
    status = tf.header_status({"rank": 1, "size": 2, "status": "exception", "exit_reason": "ValueError: x"})
    assert (status.rank, status.complete, status.describe()) == (1, False, "exception: ValueError: x")
    assert tf.header_status({"rank": 0, "size": 1, "status": "complete"}).describe() == "complete"
    bad_headers: list[object] = [[], {"rank": 0, "size": 1}]
    for bad in bad_headers:
        try:
            tf.header_status(bad)
        except ValueError as error:
            assert "header" in str(error)
        else:
            raise AssertionError(f"{bad!r} accepted")


def test_merged_value_fields_and_version_of_the_c_writer() -> None:
    trace = c_source("libma/ma_trace.c")
    assert string_array(trace, "value_fields") == tf.VALUE_FIELDS
    assert f'\\"version\\":{tf.MERGED_VERSION},' in trace
    levels = re.search(r"#define MA_CACHE_MAX_LEVELS (\d+)", c_source("libma/ma_internal.h"))
    assert levels and int(levels.group(1)) == tf.CACHE_MAX_LEVELS


def test_measured_signature_keys_written_by_the_c_runtime() -> None:
    node = function_body(c_source("libma/ma_trace.c"), "static void node(")
    start = node.index(f'\\"{tf.NODE_CACHE_KEY}\\":{{')
    written = re.findall(r'\\"([a-z_]+)\\":', node[start:])
    assert tuple(written[1:4]) == tf.CACHE_KEYS


def test_vec_loop_gather_keys_written_by_the_c_runtime() -> None:
    assert string_array(c_source("libma/ma_trace.c"), "gather_keys") == tf.VEC_LOOP_GATHER_KEYS
