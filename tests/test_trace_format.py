"""The C runtime's own spelling of the trace format, read from its sources against ma_core/trace_format.py.

Most names reach the C runtime through ma_trace_format.h, generated from trace_format.py (checked current by
tests/test_node_layout.py); what its sources still spell themselves is checked here. Read from the sources, not from
a run, so that a name changed on one side fails at once, without a compiler or MPI.
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


def test_documents_take_format_and_version_from_the_generated_header() -> None:
    trace = c_source("libma/ma_trace.c")
    assert '"{\\"format\\":\\"%s\\",\\"version\\":%d,\\"header\\":", MA_TRACE_FORMAT, MA_TRACE_VERSION' in trace
    merge = c_source("libma/ma_merge.c")
    assert "MA_MERGED_FORMAT,\n               MA_MERGED_VERSION" in merge
    assert '"%s/" MA_MERGED_FILE' in merge and "MA_MERGED_INDEX" in merge


def test_rank_file_and_temporary_names() -> None:
    trace = c_source("libma/ma_trace.c")
    final = re.search(r'"%s/(rank-%d[^"]*)"', trace)
    temporary = re.search(r'"%s/(\.rank-%d[^"]*)"', trace)
    assert final and temporary
    assert final.group(1).replace("%d", "7") == tf.rank_file_name(7)
    assert temporary.group(1).replace("%d", "7").replace("%ld", "99") == tf.temporary_file(Path(), 7, 99).name
    assert tf.RANK_FILE.match(tf.rank_file_name(12)) and Path(tf.rank_file_name(3)).match(tf.RANK_FILE_GLOB)
    assert Path(tf.temporary_file(Path(), 3, 1).name).match(tf.TEMPORARY_GLOB)


def test_pmpi_groups_follow_the_mpi_types() -> None:
    # The PMPI library's groups: one per MPI call type, in the same order, then the untyped routines.
    assert string_array(c_source("ma_pmpi.c"), "group_names") == (*tf.MPI_TYPES, "other")
    assert "MA_STRUCTURE_TYPES(AS_STRING) MA_MPI_TYPES(AS_STRING)" in c_source("libma/ma_tree.c")


def test_statuses_written_by_the_c_runtime_are_the_generated_ones() -> None:
    lifecycle = c_source("libma/ma_lifecycle.c")
    written = set(re.findall(r"\b(?:finish|ma_trace_document)\((?:ma_rt, )?MA_STATUS_(\w+)", lifecycle))
    assert {tf.COMPLETE.upper(), tf.RUNNING.upper(), tf.TERMINATED.upper()} <= written
    assert not re.search(r'\bfinish\("', lifecycle)  # no status spelled as a literal


def test_header_keys_written_by_the_c_runtime() -> None:
    header = function_body(c_source("libma/ma_trace.c"), "void ma_trace_header(")
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
