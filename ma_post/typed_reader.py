"""The fast path of reading a rank file: msgspec decodes the JSON straight into typed structs.

The structs spell the node layout (NODE_LAYOUT of ma_core/trace_format.py; tests/test_node_layout.py holds them to
it) with its exact JSON types (counts are integers, not strings, floats or booleans), so a file that decodes is well
typed without a check per value in Python, and walking structs is cheaper than walking dictionaries. Anything the
structs refuse — a wrong type, a missing field, a number past 64 bits or the double range, nesting too deep — returns
None, and the caller reads the file the checked way (reader.py), which either accepts it or words the error with
file, site path and field.
"""

from __future__ import annotations

from typing import Any

import msgspec

from ma_core.trace_format import signature_columns


class Stats(msgspec.Struct):
    n: int
    min: int | float | None
    max: int | float | None
    sum: int | float | None


class Count(msgspec.Struct):
    predicted: Stats | None = None
    measured: Stats | None = None


class Cache(msgspec.Struct, forbid_unknown_fields=True):
    calls: int
    accesses: int
    hits: list[int]


class Node(msgspec.Struct, rename={"passed": "pass"}):
    id: str
    type: str
    calls: int
    path: str = ""
    expr: str | None = None
    count_expr: str | None = None
    file: str | None = None
    line: int | None = None
    predicted: Stats | None = None
    measured: Stats | None = None
    passed: int = 0
    fail: int = 0
    unmeasured: int = 0
    mismatch: int = 0
    first_mismatch: dict[str, Any] | None = None
    first_fail: dict[str, Any] | None = None
    wall_ns: int = 0
    cpu_ns: int = 0
    count: Count | None = None
    cache: Cache | None = None
    c_calls: int | None = None
    subscripts: int | None = None
    children: list[Node] = []


class Root(msgspec.Struct):
    children: list[Node] = []


class Thread(msgspec.Struct):
    root: Root
    thread: int = 0
    name: str | None = None


class Document(msgspec.Struct):
    format: str
    version: int
    header: dict[str, Any]
    threads: list[Thread]
    variables: list[Any] = []
    anomalies: list[Any] = []
    mpi_profile: dict[str, Any] | None = None
    peers: Any = None  # OPTIONAL_DOCUMENT_KEYS: checked by reader.optional_sections
    vector_loops: Any = None
    given_hit_rates: Any = None


_DECODER = msgspec.json.Decoder(Document)
_NO_STATS = (0, None, None, 0)


def decode(text: bytes) -> Document | None:
    """The typed document, or None when the text is anything but a well-typed trace."""
    try:
        return _DECODER.decode(text)
    except (msgspec.DecodeError, RecursionError, OverflowError):
        return None


def rows(thread: Thread) -> tuple[list[tuple[Any, ...]], list[Any]]:
    """(node rows, values) of one thread, in the order and layout of reader._flatten_tree."""
    nodes: list[tuple[Any, ...]] = []
    values: list[Any] = []
    stack = [(child, -1) for child in reversed(thread.root.children)]
    while stack:
        n, parent = stack.pop()
        values += (n.calls, n.passed, n.fail, n.unmeasured, n.mismatch, n.wall_ns, n.cpu_ns)
        count = n.count
        for stats in (n.predicted, n.measured, count.predicted if count else None, count.measured if count else None):
            values += (stats.n, stats.min, stats.max, stats.sum) if stats is not None else _NO_STATS
        cache = n.cache
        values += signature_columns(None if cache is None else {"calls": cache.calls, "accesses": cache.accesses,
                                                                  "hits": cache.hits}, n.c_calls, n.calls,
                                    n.subscripts)
        nodes.append((parent, n.type, n.id, n.path, n.expr, n.count_expr, n.file, n.line, n.first_fail,
                      n.first_mismatch))
        index = len(nodes) - 1
        stack.extend((child, index) for child in reversed(n.children))
    return nodes, values
